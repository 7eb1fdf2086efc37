// SQLite seam for durable work: the agent's messages with their own leases, the write that
// acknowledged each one; the idempotency keys of posts, answers, permits and the agent's latest
// checkpoint are tables of its migrations with their own seams. Ids come
// from AUTOINCREMENT, so they only grow and are never reused. History is bounded: see prune().
import { watchWrites } from "./kv-table.ts";
import type { MessageLease, MessageStatus } from "../rules/message-lease.ts";
import type { BlobRef } from "../rules/step-journal.ts";
import { migrate } from "./migrations.ts";
import { PermitTable } from "./permit-store.ts";
import { AnswerTable } from "./message-answers.ts";
import { PostKeyTable } from "./post-keys.ts";
import { AgentCheckpointTable } from "./agent-checkpoint.ts";
import { MessageCensus } from "./message-census.ts";
import { MessagePages } from "./message-pages.ts";
import { DISPATCH_WINDOW, type PostInsert } from "../rules/plan/post.ts";
import type { BusyRead } from "../rules/on-busy.ts";
import { MESSAGE_MIGRATIONS } from "./message-migrations.ts";
import type { Vote } from "../rules/quorum.ts";
import { leaseOf, LEASE_FIELDS, messageRow, questionOf, RUN_FIELDS, type AnswerRecord, type RunRow, type StoredMessage } from "./message-row.ts";
import { cancelJson, checkpointJson, questionJson, type CancelRecord, type StoredQuestion } from "../rules/message-json.ts";

export type { MessageStatus };
export { cancelOf, leaseOf, questionOf, type AnswerRecord, type RunRow, type StoredMessage } from "./message-row.ts";

/** A value kept inline (JSON-able), or in a committed blob. */
export type StoredValue = { value: unknown } | { blob: BlobRef };


/** The write that acknowledged a message: its key is scoped to that message, and there is one. */
export interface AckedWrite {
  id: number;
  fence: number;
  key: string;
}

export interface Retention {
  /** Acknowledged messages older than the newest this many are deleted, with their write. */
  messages: number;
  /** How long the idempotency key of a post is remembered. */
  postKeyMs: number;
}

/** Statuses nothing will change any more: pruned from history past the retention. */
const FINISHED = "('acknowledged', 'failed', 'rejected', 'cancelled', 'superseded')";

export class MessageStore {
  private readonly sql: SqlStorage;
  /**
   * The open leases and park deadline as last read, kept until this store writes anything (no other
   * code writes messages) or the park deadline passes: every event's snapshot reads them.
   */
  private open: { leases: MessageLease[]; parkDeadline: number | null } | null = null;

  /** The other tables of this store's migrations, each its own seam: approvals of effects as one-use permits, answers, post keys, the agent's checkpoint. */
  readonly permits: PermitTable;
  readonly answers: AnswerTable;
  readonly postKeys: PostKeyTable;
  readonly agentCheckpoint: AgentCheckpointTable;
  /** What presence reads of the messages: counts and the newest of each status, never their texts. */
  readonly census: MessageCensus;
  /** History and sync pages: what the messages after a cursor weigh, and the messages themselves. */
  readonly pages: MessagePages;

  constructor(sql: SqlStorage) {
    this.sql = watchWrites(sql, () => (this.open = null));
    migrate(sql, "messages", MESSAGE_MIGRATIONS);
    this.permits = new PermitTable(sql);
    this.answers = new AnswerTable(sql);
    this.postKeys = new PostKeyTable(sql);
    this.agentCheckpoint = new AgentCheckpointTable(sql);
    this.census = new MessageCensus(sql);
    this.pages = new MessagePages(sql);
  }

  /** Writes the given columns of message `id` in one UPDATE, each checked against the row's schema. */
  patch(id: number, fields: Partial<StoredMessage>): void {
    const { set, values } = messageRow.assignments(fields);
    if (set !== "") this.sql.exec(`UPDATE messages SET ${set} WHERE id = ?`, ...values, id);
  }

  /** patch, answering the row as it is after the write. */
  private patchAndRead(id: number, fields: Partial<StoredMessage>): StoredMessage {
    const { set, values } = messageRow.assignments(fields);
    return messageRow.decode(this.sql.exec(`UPDATE messages SET ${set} WHERE id = ? RETURNING *`, ...values, id).one());
  }

  /** Stores the question the running attempt asks (it parks with it next), replacing an earlier one. */
  ask(id: number, question: StoredQuestion | null): void {
    this.patch(id, { question: question === null ? null : questionJson.write(question) });
  }

  /** The votes so far of its open question (several people), kept inside the question so they go with it. */
  setVotes(id: number, votes: Vote[]): void {
    const stored = this.get(id);
    const question = stored ? questionOf(stored) : null;
    if (question !== null) this.ask(id, { ...question, votes });
  }

  /** The answer that queued the message again: its choice, beside the resume input. */
  setResumeChoice(id: number, choice: string | null): void {
    this.patch(id, { resume_choice: choice });
  }

  /** Inserts a post's row under the id its plan gave it (the next after lastIssuedId), as rules/plan/post.ts left it. */
  insert(row: PostInsert): StoredMessage {
    return messageRow.decode(this.sql.exec(
      `INSERT INTO messages (id, text, created_at, msg_group, run_timeout_ms, retry_at, run_first, for_person, traceparent, held_since) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      row.id, row.text, row.createdAt, row.group, row.runTimeoutMs, row.holdUntil, row.first ? 1 : null, row.forPerson ? 1 : 0, row.traceparent, row.heldSince).one());
  }

  /** The last id AUTOINCREMENT handed out (pruned or not): a post's plan takes the next one. */
  lastIssuedId(): number {
    const seq = this.sql.exec<{ seq: number }>(`SELECT seq FROM sqlite_sequence WHERE name = 'messages'`).toArray()[0]?.seq ?? 0;
    return Math.max(seq, this.pages.lastId());
  }

  /** A question for a person answered (by a person or its deadline): the answer is its reply. */
  answeredForPerson(id: number, reply: string, now: number): void {
    this.patch(id, { acked_at: now, reply });
  }

  /** What a write for a running message is checked against: its lease, attempt count, run key and pending question (no text, reply or checkpoint). */
  runOf(id: number): RunRow | null {
    const row = this.sql.exec(`SELECT ${messageRow.list(RUN_FIELDS)} FROM messages WHERE id = ?`, id).toArray()[0];
    return row === undefined ? null : messageRow.pick(row, RUN_FIELDS);
  }

  get(id: number): StoredMessage | null {
    const row = this.sql.exec(`SELECT * FROM messages WHERE id = ?`, id).toArray()[0];
    return row === undefined ? null : messageRow.decode(row);
  }

  /**
   * The open messages a dispatch must look at, as lease records (lease columns only, never texts
   * or checkpoints): every running one (bounded by max_running), the parked ones that are due or
   * hold back a group with a queued message in the window (a group has at most one open message
   * at a time, so at most DISPATCH_WINDOW of these), and the oldest DISPATCH_WINDOW queued ones.
   * Parked work waiting for a person costs an event nothing, however much of it is stored.
   */
  openLeases(now: number): MessageLease[] {
    return this.openWork(now).leases.map((l) => ({ ...l }));
  }

  /**
   * The earliest park deadline still ahead, for the alarm. Parked work is mostly not among the
   * open leases a dispatch reads, so its deadlines are asked for here; the rest come from those.
   */
  parkDeadline(now: number): number | null {
    return this.openWork(now).parkDeadline;
  }

  /** Both reads hold until the next write, or until a parked message's deadline passes (it then joins the open leases). */
  private openWork(now: number): { leases: MessageLease[]; parkDeadline: number | null } {
    const known = this.open;
    if (known && (known.parkDeadline === null || now < known.parkDeadline)) return known;
    const fields = messageRow.list(LEASE_FIELDS);
    const rows = this.sql.exec(
      `SELECT ${fields} FROM messages WHERE status = 'running'
       UNION ALL SELECT ${fields} FROM messages WHERE status = 'parked' AND ((expires_at IS NOT NULL AND expires_at <= ?)
         OR msg_group IN (SELECT msg_group FROM (SELECT msg_group FROM messages WHERE status = 'queued' ORDER BY id LIMIT ?) WHERE msg_group IS NOT NULL))
       UNION ALL SELECT * FROM (SELECT ${fields} FROM messages WHERE status = 'queued' ORDER BY id LIMIT ?)
       UNION SELECT ${fields} FROM messages WHERE run_first = 1 AND status = 'queued'`, now, DISPATCH_WINDOW, DISPATCH_WINDOW,
    ).toArray().map((r) => messageRow.pick(r, LEASE_FIELDS));
    const parkDeadline = this.sql.exec<{ at: number | null }>(
      `SELECT MIN(expires_at) AS at FROM messages WHERE status = 'parked' AND expires_at > ?`, now).one().at ?? null;
    this.open = { leases: rows.map(leaseOf), parkDeadline };
    return this.open;
  }

  /**
   * Stores a message's lease fields as the rules left them. A hand-out also gives `fence` (the
   * serve fence then), the runner's machine and a fresh run key, and clears the last run's progress.
   */
  saveLease(m: MessageLease, handOut: { fence: number; machine: string; runKey: string } | null = null): StoredMessage {
    return this.patchAndRead(m.id, {
      status: m.status, attempts: m.attempts, declined: m.declined ?? 0, retried_after: m.retriedAfter ?? 0,
      token: m.token, runner: m.runner, expires_at: m.expiresAt, retry_at: m.retryAt, cap_at: m.capAt, pending_ask: m.pendingAsk, on_deadline: m.onDeadline, park_ms: m.parkMs,
      ...(handOut && { delivered_fence: handOut.fence, machine: handOut.machine, run_key: handOut.runKey, progress: null, heartbeat_at: null, run_first: null }),
    });
  }

  /** A heartbeat of a running message: its new deadline and progress. */
  saveHeartbeat(id: number, expiresAt: number | null, progress: string | null, now: number): void {
    this.patch(id, { expires_at: expiresAt, ...(progress !== null && { progress }), heartbeat_at: now });
  }

  setPendingAsk(id: number, name: string | null): void {
    this.patch(id, { pending_ask: name });
  }

  /** Keeps who cancelled message `id` and why; saved before the lease that makes it `cancelled`, so the status change's event carries it. */
  saveCancel(id: number, record: CancelRecord): void {
    this.patch(id, { cancel: cancelJson.write(record), question: null });
  }

  /** Notes the newer message that replaces `id` (on_busy replace); saved before the lease that makes it `superseded`. */
  saveSupersededBy(id: number, by: number): void {
    this.patch(id, { superseded_by: by });
  }

  /**
   * The messages of one group (null: the ungrouped ones) an on_busy policy decides on, as
   * rules/on-busy.ts `busyRead` asks, oldest first: the whole group, never a window of it
   * (messages_group_status finds them without scanning the queue).
   */
  busyGroup(group: string | null, read: BusyRead): MessageLease[] {
    // Never started: no try since the latest retry (rules/message-lease.ts triesOf is 0).
    const neverStarted = read.neverStarted ? "AND attempts = retried_after + declined" : "";
    const limit = read.oldestOnly ? "LIMIT 1" : "";
    return read.statuses.flatMap((status) => this.sql.exec(
      `SELECT ${messageRow.list(LEASE_FIELDS)} FROM messages WHERE msg_group IS ? AND status = ? AND for_person = 0 ${neverStarted} ORDER BY id ${limit}`, group, status,
    ).toArray().map((r) => leaseOf(messageRow.pick(r, LEASE_FIELDS))));
  }

  /** Notes why an attempt of message `id` ended without success. */
  recordFailure(id: number, error: string): void {
    this.sql.exec(`UPDATE messages SET error = ?, failures = failures + 1 WHERE id = ?`, error, id);
  }

  /** Stores a message's checkpoint, inline or as a committed blob; returns the blob it replaces (no longer kept), if any. */
  saveMessageCheckpoint(id: number, checkpoint: StoredValue, token: number): string | null {
    const blob = "blob" in checkpoint ? checkpoint.blob : null;
    const before = this.sql.exec<{ checkpoint_blob: string | null }>(`SELECT checkpoint_blob FROM messages WHERE id = ?`, id).toArray()[0];
    this.patch(id, {
      checkpoint: blob ? null : checkpointJson.write("value" in checkpoint ? checkpoint.value : null), checkpoint_blob: blob?.id ?? null,
      checkpoint_blob_bytes: blob?.bytes ?? null, checkpoint_token: token,
    });
    const replaced = before?.checkpoint_blob ?? null;
    return replaced !== null && replaced !== blob?.id ? replaced : null;
  }

  setResumeInput(id: number, input: string | null): void {
    this.patch(id, { resume_input: input });
  }

  /**
   * Marks the message done by this write, under its lease `token`, from its `runner`, with its reply
   * (text, or a committed blob) and its lease as rules/message-lease.ts `complete` left it; the
   * caller has checked it was not done already.
   */
  acknowledge(write: AckedWrite, reply: string | BlobRef | null, now: number, token: number, runner: string, done: MessageLease): void {
    const blob = reply !== null && typeof reply === "object" ? reply : null;
    this.patch(write.id, {
      status: done.status, runner: done.runner, expires_at: done.expiresAt, acked_at: now, acked_fence: write.fence, acked_token: token, acked_runner: runner,
      ...(typeof reply === "string" && { reply }), reply_blob: blob?.id ?? null, reply_blob_bytes: blob?.bytes ?? null,
    });
    this.sql.exec(`INSERT INTO message_writes (message_id, key, fence, at) VALUES (?, ?, ?, ?)`, write.id, write.key, write.fence, now);
  }

  /** The write that acknowledged message `id`, or null while it is not done. */
  ackedWrite(id: number): AckedWrite | null {
    const rows = this.sql.exec<{ key: string; fence: number }>(`SELECT key, fence FROM message_writes WHERE message_id = ?`, id).toArray();
    return rows.length ? { id, key: rows[0]!.key, fence: rows[0]!.fence } : null;
  }

  /**
   * Deletes acknowledged messages (and the write that acknowledged each) older than the newest
   * `retention.messages`, and post keys older than `retention.postKeyMs`. Unacknowledged work is
   * never deleted. Runs on each post, so history is bounded by what posts add. Returns the ids of
   * the messages that went: their journals (StepStore.dropMessages) and blobs go with them.
   */
  prune(newestId: number, now: number, retention: Retention): number[] {
    const horizon = newestId - retention.messages;
    let gone: number[] = [];
    if (horizon > 0) {
      this.sql.exec(`DELETE FROM message_writes WHERE message_id <= ?`, horizon);
      this.sql.exec(`DELETE FROM message_answers WHERE message_id IN (SELECT id FROM messages WHERE id <= ? AND status IN ${FINISHED})`, horizon);
      gone = this.sql.exec<{ id: number }>(`DELETE FROM messages WHERE id <= ? AND status IN ${FINISHED} RETURNING id`, horizon).toArray().map((r) => r.id);
    }
    this.permits.drop(gone);
    this.postKeys.forgetBefore(now - retention.postKeyMs);
    return gone;
  }
}
