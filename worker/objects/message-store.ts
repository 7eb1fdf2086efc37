// SQLite seam for durable work: the agent's messages with their own leases, the write that
// acknowledged each one, the idempotency keys of posts and the agent's latest checkpoint. Ids come
// from AUTOINCREMENT, so they only grow and are never reused. History is bounded: see prune().
import { addMissingColumns } from "./sql-columns.ts";
import { watchWrites } from "./kv-table.ts";
import type { MessageLease, MessageStatus, OnDeadline } from "../rules/message-lease.ts";
import type { BlobRef } from "../rules/step-journal.ts";

export type { MessageStatus };

export interface StoredMessage {
  id: number;
  text: string;
  created_at: number;
  status: MessageStatus;
  attempts: number;
  delivered_fence: number | null;
  acked_at: number | null;
  acked_fence: number | null;
  reply: string | null;
  /** The message's lease token (0 before its first hand-out) and the claim sequence running it. */
  token: number;
  runner: string | null;
  /** Run deadline while running, park deadline while parked (server ms). */
  expires_at: number | null;
  msg_group: string | null;
  run_timeout_ms: number | null;
  resume_input: string | null;
  /** The message's own checkpoint (JSON text) and the token it was written under. */
  checkpoint: string | null;
  checkpoint_token: number | null;
  acked_token: number | null;
  /** A queued message is not handed out before this (the backoff after a failed attempt). */
  retry_at: number | null;
  /** Why the latest attempt failed or was taken back; null while none did. */
  error: string | null;
  /** Attempts that ended in failure (a `fail` write or being taken back). */
  failures: number;
  /** The connection (claim sequence) whose write acknowledged the message. */
  acked_runner: string | null;
  /** The machine label of the runner it was last handed to. */
  machine: string | null;
  /** While running: the run timeout's hard cap, which heartbeats never pass. */
  cap_at: number | null;
  /** An effect of the running attempt with an intent and no outcome, whose policy is to ask. */
  pending_ask: string | null;
  /** The latest heartbeat's details (JSON text) and when it arrived: the run's progress. */
  progress: string | null;
  heartbeat_at: number | null;
  /** A secret per hand-out, given only to its runner: HTTP writes for the run carry it instead of a connection. */
  run_key: string | null;
  /** A checkpoint or reply too large to keep inline: the committed R2 blob holding it, and its size. */
  checkpoint_blob: string | null;
  checkpoint_blob_bytes: number | null;
  reply_blob: string | null;
  reply_blob_bytes: number | null;
  /** While parked: what a person is asked (JSON of StoredQuestion), what its deadline does, and how long each wait is. */
  question: string | null;
  on_deadline: OnDeadline | null;
  park_ms: number | null;
  /** The choice of the answer that queued the message again (approve, or one the question offered). */
  resume_choice: string | null;
  /** The W3C traceparent the post carried (null: none). */
  traceparent: string | null;
  /** 1: a question for a person and nothing else, parked from the start and never run (rules/message-lease.ts forPerson). */
  for_person: number;
  /** Once cancelled: who, from where, when and why (JSON of CancelRecord). */
  cancel: string | null;
  /** Once superseded (on_busy replace): the newer message of its group that took its place. */
  superseded_by: number | null;
  /** 1: runs before older queued messages of its group (it interrupted the group, on_busy interrupt). */
  run_first: number | null;
}

/** Who cancelled a message, from where, when and why. */
export interface CancelRecord {
  at: number;
  account: string;
  token: string;
  via: string;
  reason: string | null;
}

/** A question as stored with its message: what a runner asked, and the journal step its answer replays as. */
export interface StoredQuestion {
  text: string;
  choices: string[] | null;
  step: string | null;
  on_deadline: OnDeadline | null;
  /** The deadline a served command asked with (`baton ask --deadline`), used when its park names none. */
  deadline_seconds?: number | null;
  /** The token of the attempt that asked: a question a later attempt never parked with is not shown. */
  token: number;
  asked_at: number;
}

/** One answer to a parked message, kept with it: who, from where, when, and what. */
export interface AnswerRecord {
  at: number;
  choice: string;
  text: string | null;
  question: string | null;
  account: string;
  token: string;
  via: string;
}

export type RunRow = Pick<StoredMessage,
  "id" | "status" | "attempts" | "token" | "runner" | "expires_at" | "msg_group" | "run_timeout_ms" | "retry_at" | "cap_at" | "pending_ask" | "on_deadline" | "park_ms" | "run_key" | "for_person"> & Partial<Pick<StoredMessage, "run_first">>;

/** A value kept inline (JSON-able), or in a committed blob. */
export type StoredValue = { value: unknown } | { blob: BlobRef };

/** Columns added after the first schema, with their definitions, for tables created before them. */
const LEASE_COLUMNS: Record<string, string> = {
  token: "INTEGER NOT NULL DEFAULT 0",
  runner: "TEXT",
  expires_at: "INTEGER",
  msg_group: "TEXT",
  run_timeout_ms: "INTEGER",
  resume_input: "TEXT",
  checkpoint: "TEXT",
  checkpoint_token: "INTEGER",
  acked_token: "INTEGER",
  retry_at: "INTEGER",
  error: "TEXT",
  failures: "INTEGER NOT NULL DEFAULT 0",
  acked_runner: "TEXT",
  machine: "TEXT",
  cap_at: "INTEGER",
  pending_ask: "TEXT",
  progress: "TEXT",
  heartbeat_at: "INTEGER",
  run_key: "TEXT",
  checkpoint_blob: "TEXT",
  checkpoint_blob_bytes: "INTEGER",
  reply_blob: "TEXT",
  reply_blob_bytes: "INTEGER",
  question: "TEXT",
  on_deadline: "TEXT",
  park_ms: "INTEGER",
  resume_choice: "TEXT",
  for_person: "INTEGER NOT NULL DEFAULT 0",
  cancel: "TEXT",
  superseded_by: "INTEGER",
  run_first: "INTEGER",
  traceparent: "TEXT",
};

/** The columns a message's lease is made of (see leaseOf). */
const LEASE_FIELDS = "id, status, attempts, token, runner, expires_at, msg_group, run_timeout_ms, retry_at, cap_at, pending_ask, on_deadline, park_ms, for_person, run_first";

/** How many queued messages one dispatch looks at (oldest first): a bound on its work, not on the queue. */
export const DISPATCH_WINDOW = 500;

export interface Checkpoint {
  value: unknown;
  fence: number;
  at: number;
}

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

const HISTORY_PAGE = 500;
/** Statuses nothing will change any more: pruned from history past the retention. */
const FINISHED = "('acknowledged', 'failed', 'rejected', 'cancelled', 'superseded')";
/** Answers kept per message (a message parked and answered again and again keeps its newest ones). */
const ANSWERS_KEPT = 20;

type ReportedField = "id" | "attempts" | "token" | "runner" | "expires_at" | "msg_group" | "error" | "heartbeat_at" | "pending_ask" | "question" | "on_deadline" | "cancel";

export class MessageStore {
  /** Told when saveLease moved a message to another status (the agent object turns that into webhook events). */
  onStatusChange: ((before: MessageStatus, after: StoredMessage) => void) | null = null;

  private readonly sql: SqlStorage;
  /**
   * The open leases and park deadline as last read, kept until this store writes anything (no other
   * code writes messages) or the park deadline passes: every event's snapshot reads them.
   */
  private open: { leases: MessageLease[]; parkDeadline: number | null } | null = null;

  constructor(sql: SqlStorage) {
    this.sql = watchWrites(sql, () => (this.open = null));
    sql.exec(`CREATE TABLE IF NOT EXISTS messages (
      id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, created_at INTEGER NOT NULL,
      status TEXT NOT NULL DEFAULT 'queued', attempts INTEGER NOT NULL DEFAULT 0, delivered_fence INTEGER,
      acked_at INTEGER, acked_fence INTEGER, reply TEXT)`);
    upgradeMessages(sql);
    // Dispatch reads only open work (by status, oldest first), so its cost follows that, not the history.
    sql.exec(`CREATE INDEX IF NOT EXISTS messages_open ON messages (id) WHERE status != 'acknowledged'`);
    sql.exec(`CREATE INDEX IF NOT EXISTS messages_status ON messages (status, id)`);
    // The few messages that jump their group's queue (on_busy interrupt) are found without scanning the queue.
    sql.exec(`CREATE INDEX IF NOT EXISTS messages_run_first ON messages (id) WHERE run_first = 1`);
    // Keys used to be global, so one message's key could answer for another; they are per message now.
    sql.exec(`DROP TABLE IF EXISTS writes`);
    sql.exec(`CREATE TABLE IF NOT EXISTS message_writes (
      message_id INTEGER PRIMARY KEY, key TEXT NOT NULL, fence INTEGER NOT NULL, at INTEGER NOT NULL)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS post_keys (key TEXT PRIMARY KEY, message_id INTEGER NOT NULL, at INTEGER NOT NULL)`);
    sql.exec(`CREATE INDEX IF NOT EXISTS post_keys_at ON post_keys (at)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS checkpoint (one INTEGER PRIMARY KEY CHECK (one = 1), value TEXT NOT NULL, fence INTEGER NOT NULL, at INTEGER NOT NULL)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS message_answers (
      message_id INTEGER NOT NULL, at INTEGER NOT NULL, choice TEXT NOT NULL, text TEXT, question TEXT,
      account TEXT NOT NULL, token TEXT NOT NULL, via TEXT NOT NULL)`);
    sql.exec(`CREATE INDEX IF NOT EXISTS message_answers_id ON message_answers (message_id, at)`);
  }

  /** Stores the question the running attempt asks (it parks with it next), replacing an earlier one. */
  ask(id: number, question: StoredQuestion | null): void {
    this.sql.exec(`UPDATE messages SET question = ? WHERE id = ?`, question === null ? null : JSON.stringify(question), id);
  }

  /** Keeps who answered a message, when, from where and what (the newest ANSWERS_KEPT per message). */
  recordAnswer(id: number, record: AnswerRecord): void {
    this.sql.exec(`INSERT INTO message_answers (message_id, at, choice, text, question, account, token, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      id, record.at, record.choice, record.text, record.question, record.account, record.token, record.via);
    this.sql.exec(`DELETE FROM message_answers WHERE message_id = ? AND rowid NOT IN (
      SELECT rowid FROM message_answers WHERE message_id = ? ORDER BY at DESC, rowid DESC LIMIT ?)`, id, id, ANSWERS_KEPT);
  }

  /** The answers of a page of messages, in one query. */
  answersFor(ids: readonly number[]): Map<number, AnswerRecord[]> {
    const out = new Map<number, AnswerRecord[]>();
    if (ids.length === 0) return out;
    const rows = this.sql.exec<AnswerRecord & { message_id: number } & Record<string, SqlStorageValue>>(
      `SELECT message_id, at, choice, text, question, account, token, via FROM message_answers WHERE message_id BETWEEN ? AND ? ORDER BY message_id, at, rowid`,
      Math.min(...ids), Math.max(...ids)).toArray();
    for (const { message_id, ...record } of rows) {
      if (!out.has(message_id)) out.set(message_id, []);
      out.get(message_id)!.push(record);
    }
    return out;
  }

  /** The answer that queued the message again: its choice, beside the resume input. */
  setResumeChoice(id: number, choice: string | null): void {
    this.sql.exec(`UPDATE messages SET resume_choice = ? WHERE id = ?`, choice, id);
  }

  /**
   * `holdUntil`: not handed out before then (an on_busy replace debounce), as a retry's backoff;
   * `first`: runs before older queued messages of its group (on_busy interrupt); `forPerson`: a
   * question for a person alone, never run; `traceparent`: the sender's trace, which runs continue.
   */
  add(text: string, now: number, opts: { group?: string | null; runTimeoutMs?: number | null; holdUntil?: number | null; first?: boolean; forPerson?: boolean; traceparent?: string | null } = {}): StoredMessage {
    return this.sql.exec<Record<string, SqlStorageValue>>(
      `INSERT INTO messages (text, created_at, msg_group, run_timeout_ms, retry_at, run_first, for_person, traceparent) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      text, now, opts.group ?? null, opts.runTimeoutMs ?? null, opts.holdUntil ?? null, opts.first ? 1 : null, opts.forPerson ? 1 : 0, opts.traceparent ?? null).one() as unknown as StoredMessage;
  }

  /** A question for a person answered (by a person or its deadline): the answer is its reply. */
  answeredForPerson(id: number, reply: string, now: number): void {
    this.sql.exec(`UPDATE messages SET acked_at = ?, reply = ? WHERE id = ?`, now, reply, id);
  }

  /** What a write for a running message is checked against: its lease, attempt count, run key and pending question (no text, reply or checkpoint). */
  runOf(id: number): RunRow | null {
    return (this.sql.exec(`SELECT ${LEASE_FIELDS}, run_key FROM messages WHERE id = ?`, id).toArray()[0] as unknown as RunRow | undefined) ?? null;
  }

  get(id: number): StoredMessage | null {
    const rows = this.sql.exec(`SELECT * FROM messages WHERE id = ?`, id).toArray();
    return rows.length ? (rows[0] as unknown as StoredMessage) : null;
  }

  after(cursor: number, limit = HISTORY_PAGE): StoredMessage[] {
    return this.sql.exec(`SELECT * FROM messages WHERE id > ? ORDER BY id LIMIT ?`, cursor, Math.min(limit, HISTORY_PAGE))
      .toArray() as unknown as StoredMessage[];
  }

  /**
   * Plans the page after `cursor`: at most `count` messages and no more than `bytes` of text (but
   * at least one message). Reads sizes only, so a refused page never loads its texts.
   */
  planPage(cursor: number, count: number, bytes: number): { last: number; count: number; bytes: number; more: boolean } {
    const sizes = this.sql.exec<{ id: number; size: number }>(
      `SELECT id, length(CAST(text AS BLOB)) AS size FROM messages WHERE id > ? ORDER BY id LIMIT ?`, cursor, count + 1,
    ).toArray();
    let plan = { last: cursor, count: 0, bytes: 0, more: false };
    for (const s of sizes) {
      if (plan.count === count || (plan.count > 0 && plan.bytes + s.size > bytes)) return { ...plan, more: true };
      plan = { last: s.id, count: plan.count + 1, bytes: plan.bytes + s.size, more: false };
    }
    return plan;
  }

  /** Messages with cursor < id <= last, oldest first. */
  range(cursor: number, last: number): StoredMessage[] {
    return this.sql.exec(`SELECT * FROM messages WHERE id > ? AND id <= ? ORDER BY id`, cursor, last).toArray() as unknown as StoredMessage[];
  }

  lastId(): number {
    return this.sql.exec<{ id: number | null }>(`SELECT MAX(id) AS id FROM messages`).one().id ?? 0;
  }

  /** The newest messages for presence: their first `previewChars` characters only, so a report costs the same whatever the texts weigh. */
  recent(limit: number, previewChars: number): { id: number; status: MessageStatus; attempts: number; created_at: number; text: string }[] {
    return this.sql.exec<{ id: number; status: MessageStatus; attempts: number; created_at: number; text: string }>(
      `SELECT id, status, attempts, created_at, substr(text, 1, ?) AS text FROM messages ORDER BY id DESC LIMIT ?`, previewChars, limit).toArray();
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
    const rows = this.sql.exec(
      `SELECT ${LEASE_FIELDS} FROM messages WHERE status = 'running'
       UNION ALL SELECT ${LEASE_FIELDS} FROM messages WHERE status = 'parked' AND ((expires_at IS NOT NULL AND expires_at <= ?)
         OR msg_group IN (SELECT msg_group FROM (SELECT msg_group FROM messages WHERE status = 'queued' ORDER BY id LIMIT ?) WHERE msg_group IS NOT NULL))
       UNION ALL SELECT * FROM (SELECT ${LEASE_FIELDS} FROM messages WHERE status = 'queued' ORDER BY id LIMIT ?)
       UNION SELECT ${LEASE_FIELDS} FROM messages WHERE run_first = 1 AND status = 'queued'`, now, DISPATCH_WINDOW, DISPATCH_WINDOW,
    ).toArray() as unknown as StoredMessage[];
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
    const before = this.onStatusChange && this.sql.exec<{ status: MessageStatus }>(`SELECT status FROM messages WHERE id = ?`, m.id).toArray()[0]?.status;
    const saved = this.sql.exec(
      `UPDATE messages SET status = ?, attempts = ?, token = ?, runner = ?, expires_at = ?, retry_at = ?, cap_at = ?, pending_ask = ?,
       on_deadline = ?, park_ms = ?,
       delivered_fence = COALESCE(?, delivered_fence), machine = COALESCE(?, machine), run_key = COALESCE(?, run_key),
       progress = CASE WHEN ? THEN NULL ELSE progress END, heartbeat_at = CASE WHEN ? THEN NULL ELSE heartbeat_at END,
       run_first = CASE WHEN ? THEN NULL ELSE run_first END
       WHERE id = ? RETURNING *`,
      m.status, m.attempts, m.token, m.runner, m.expiresAt, m.retryAt, m.capAt, m.pendingAsk, m.onDeadline, m.parkMs,
      handOut?.fence ?? null, handOut?.machine ?? null, handOut?.runKey ?? null, handOut ? 1 : 0, handOut ? 1 : 0, handOut ? 1 : 0, m.id,
    ).one() as unknown as StoredMessage;
    if (before && before !== saved.status) this.onStatusChange?.(before, saved);
    return saved;
  }

  /** A heartbeat of a running message: its new deadline and progress. */
  saveHeartbeat(id: number, expiresAt: number | null, progress: string | null, now: number): void {
    this.sql.exec(`UPDATE messages SET expires_at = ?, progress = COALESCE(?, progress), heartbeat_at = ? WHERE id = ?`, expiresAt, progress, now, id);
  }

  setPendingAsk(id: number, name: string | null): void {
    this.sql.exec(`UPDATE messages SET pending_ask = ? WHERE id = ?`, name, id);
  }

  /** Keeps who cancelled message `id` and why; saved before the lease that makes it `cancelled`, so the status change's event carries it. */
  saveCancel(id: number, record: CancelRecord): void {
    this.sql.exec(`UPDATE messages SET cancel = ?, question = NULL WHERE id = ?`, JSON.stringify(record), id);
  }

  /** Notes the newer message that replaces `id` (on_busy replace); saved before the lease that makes it `superseded`. */
  saveSupersededBy(id: number, by: number): void {
    this.sql.exec(`UPDATE messages SET superseded_by = ? WHERE id = ?`, by, id);
  }

  /** The open messages (queued, running, parked) of one group (null: the ungrouped ones), as lease records, oldest first. */
  openInGroup(group: string | null): MessageLease[] {
    const rows = this.sql.exec(
      `SELECT ${LEASE_FIELDS} FROM messages WHERE status IN ('queued', 'running', 'parked') AND msg_group IS ? AND for_person = 0 ORDER BY id LIMIT ?`, group, DISPATCH_WINDOW,
    ).toArray() as unknown as RunRow[];
    return rows.map(leaseOf);
  }

  /** Notes why an attempt of message `id` ended without success. */
  recordFailure(id: number, error: string): void {
    this.sql.exec(`UPDATE messages SET error = ?, failures = failures + 1 WHERE id = ?`, error, id);
  }

  /** Stores a message's checkpoint, inline or as a committed blob; returns the blob it replaces (no longer kept), if any. */
  saveMessageCheckpoint(id: number, checkpoint: StoredValue, token: number): string | null {
    const blob = "blob" in checkpoint ? checkpoint.blob : null;
    const before = this.sql.exec<{ checkpoint_blob: string | null }>(`SELECT checkpoint_blob FROM messages WHERE id = ?`, id).toArray()[0];
    this.sql.exec(`UPDATE messages SET checkpoint = ?, checkpoint_blob = ?, checkpoint_blob_bytes = ?, checkpoint_token = ? WHERE id = ?`,
      blob ? null : JSON.stringify("value" in checkpoint ? checkpoint.value : null), blob?.id ?? null, blob?.bytes ?? null, token, id);
    const replaced = before?.checkpoint_blob ?? null;
    return replaced !== null && replaced !== blob?.id ? replaced : null;
  }

  setResumeInput(id: number, input: string | null): void {
    this.sql.exec(`UPDATE messages SET resume_input = ? WHERE id = ?`, input, id);
  }

  countByStatus(): Record<MessageStatus, number> {
    const counts: Record<MessageStatus, number> = { queued: 0, running: 0, parked: 0, acknowledged: 0, failed: 0, rejected: 0, cancelled: 0, superseded: 0 };
    for (const r of this.sql.exec<{ status: MessageStatus; n: number }>(`SELECT status, COUNT(*) AS n FROM messages GROUP BY status`)) {
      counts[r.status] = r.n;
    }
    return counts;
  }

  /** The newest messages in one status, newest first, without their texts, replies or checkpoints. */
  inStatus(status: MessageStatus, limit: number): Pick<StoredMessage, ReportedField>[] {
    return this.sql.exec<Pick<StoredMessage, ReportedField>>(
      `SELECT id, attempts, token, runner, expires_at, msg_group, substr(error, 1, 500) AS error, heartbeat_at, pending_ask,
       CASE WHEN status = 'parked' THEN question END AS question, on_deadline, CASE WHEN status = 'cancelled' THEN cancel END AS cancel
       FROM messages WHERE status = ? ORDER BY id DESC LIMIT ?`,
      status, limit).toArray();
  }

  /**
   * Marks the message done by this write, under its lease `token`, from its `runner`, with its reply
   * (text, or a committed blob) and its lease as rules/message-lease.ts `complete` left it; the
   * caller has checked it was not done already.
   */
  acknowledge(write: AckedWrite, reply: string | BlobRef | null, now: number, token: number, runner: string, done: MessageLease): void {
    const blob = reply !== null && typeof reply === "object" ? reply : null;
    this.sql.exec(
      `UPDATE messages SET status = ?, runner = ?, expires_at = ?, acked_at = ?, acked_fence = ?, acked_token = ?,
       acked_runner = ?, reply = COALESCE(?, reply), reply_blob = ?, reply_blob_bytes = ? WHERE id = ?`,
      done.status, done.runner, done.expiresAt, now, write.fence, token, runner, typeof reply === "string" ? reply : null, blob?.id ?? null, blob?.bytes ?? null, write.id,
    );
    this.sql.exec(`INSERT INTO message_writes (message_id, key, fence, at) VALUES (?, ?, ?, ?)`, write.id, write.key, write.fence, now);
  }

  /** The write that acknowledged message `id`, or null while it is not done. */
  ackedWrite(id: number): AckedWrite | null {
    const rows = this.sql.exec<{ key: string; fence: number }>(`SELECT key, fence FROM message_writes WHERE message_id = ?`, id).toArray();
    return rows.length ? { id, key: rows[0]!.key, fence: rows[0]!.fence } : null;
  }

  /** The message an earlier post with this idempotency key created, or null when the key is new or forgotten. */
  postedWith(key: string, now: number, retention: Retention): number | null {
    const rows = this.sql.exec<{ message_id: number; at: number }>(`SELECT message_id, at FROM post_keys WHERE key = ?`, key).toArray();
    const row = rows[0];
    return row && now - row.at <= retention.postKeyMs ? row.message_id : null;
  }

  rememberPost(key: string, messageId: number, now: number): void {
    this.sql.exec(
      `INSERT INTO post_keys (key, message_id, at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET message_id = excluded.message_id, at = excluded.at`,
      key, messageId, now,
    );
  }

  /**
   * Deletes acknowledged messages (and the write that acknowledged each) older than the newest
   * `retention.messages`, and post keys older than `retention.postKeyMs`. Unacknowledged work is
   * never deleted. Runs on each post, so history is bounded by what posts add.
   */
  /** Returns how many messages went, so their blobs are collected only when some did. */
  prune(newestId: number, now: number, retention: Retention): number {
    const horizon = newestId - retention.messages;
    let gone = 0;
    if (horizon > 0) {
      this.sql.exec(`DELETE FROM message_writes WHERE message_id <= ?`, horizon);
      for (const table of ["message_steps", "message_answers"]) {
        this.sql.exec(`DELETE FROM ${table} WHERE message_id IN (SELECT id FROM messages WHERE id <= ? AND status IN ${FINISHED})`, horizon);
      }
      gone = this.sql.exec(`DELETE FROM messages WHERE id <= ? AND status IN ${FINISHED}`, horizon).rowsWritten;
    }
    this.sql.exec(`DELETE FROM post_keys WHERE at < ?`, now - retention.postKeyMs);
    return gone;
  }

  checkpoint(): Checkpoint | null {
    const rows = this.sql.exec<{ value: string; fence: number; at: number }>(`SELECT value, fence, at FROM checkpoint`).toArray();
    return rows.length ? { value: JSON.parse(rows[0]!.value), fence: rows[0]!.fence, at: rows[0]!.at } : null;
  }

  saveCheckpoint(value: unknown, fence: number, now: number): void {
    this.sql.exec(
      `INSERT INTO checkpoint (one, value, fence, at) VALUES (1, ?, ?, ?)
       ON CONFLICT(one) DO UPDATE SET value = excluded.value, fence = excluded.fence, at = excluded.at`,
      JSON.stringify(value), fence, now,
    );
  }
}

/** The message's stored question; with `token`, only one the attempt of that token asked. */
export function questionOf(m: Pick<StoredMessage, "question">, token?: number): StoredQuestion | null {
  if (m.question === null) return null;
  const q = JSON.parse(m.question) as StoredQuestion;
  return token === undefined || q.token === token ? q : null;
}

export function leaseOf(m: RunRow): MessageLease {
  return {
    id: m.id, status: m.status, attempts: m.attempts, token: m.token, runner: m.runner, expiresAt: m.expires_at,
    group: m.msg_group, runTimeoutMs: m.run_timeout_ms, retryAt: m.retry_at, capAt: m.cap_at ?? null, pendingAsk: m.pending_ask ?? null,
    onDeadline: m.on_deadline ?? null, parkMs: m.park_ms ?? null, forPerson: m.for_person === 1, ...(m.run_first === 1 ? { first: true } : {}),
  };
}

/**
 * Brings a table created by an older version up to date: adds the lease columns, and queues again
 * what it had handed out ("delivered"), as a new holder would have been handed it anyway.
 */
function upgradeMessages(sql: SqlStorage): void {
  const hadTokens = sql.exec(`SELECT 1 FROM pragma_table_info('messages') WHERE name = 'token'`).toArray().length > 0;
  addMissingColumns(sql, "messages", LEASE_COLUMNS);
  if (!hadTokens) sql.exec(`UPDATE messages SET status = 'queued' WHERE status = 'delivered'`);
}
