// Each message's own lease, wired to storage: accepts writes only under a message's current token,
// from the connection it was handed to, before its run deadline by this object's clock, and
// resumes parked messages. Who runs what, and what is taken back, is decided by
// ../rules/agent-plan.ts; the rules of one message are in ../rules/message-lease.ts.
import {
  checkMessageWrite, extendRun, type MessagePolicy,
} from "../rules/message-lease.ts";
import type { MessageChange, TargetMessage } from "../rules/agent-plan.ts";
import { decideWrite, keptQuestion, type RunnerWrite, type WriteDecision, type WriteTarget } from "../rules/plan/write.ts";
import {
  decideStepWrite, idempotencyKey, legacyIdempotencyKey, openEffectOf, pendingAsk, questionStepRefusal, runWriteRefusal, unknownOutcomeReason,
  type BlobRef, type StepRecord, type StepWrite,
} from "../rules/step-journal.ts";
import type { ConnState } from "./connections.ts";
import {
  leaseOf, questionOf, type CancelRecord, type AnswerRecord, type MessageStore, type RunRow, type StoredMessage, type StoredValue,
} from "./message-store.ts";
import { RunPolicyStore } from "./run-policy-store.ts";
import type { StepStore } from "./step-store.ts";
import type { BlobStore } from "./blob-store.ts";
import { randomHex128, sameSecret } from "./secrets.ts";
import { commitRefusal, decideReserve } from "../rules/blob-ledger.ts";
import { errorFrame, LIMITS, type ClientFrame, type ErrorCode, type JournalEntry, type Question } from "../wire/protocol.ts";
import type { ServerFrame, WorkReport } from "../wire/server-frames.ts";

export interface DeskSocket {
  ws: WebSocket;
  state: ConnState;
}

/** A write made under a message's token: reply, ack, message checkpoint, fail, park, step or heartbeat. */
export type TokenWrite = Extract<ClientFrame, { type: "ack" | "reply" | "checkpoint" | "fail" | "park" | "step" | "heartbeat" }> & { id: number; token: number };

/** Who makes a write for a running message: a connection (by its runner id) or an HTTP caller with the run's key. */
export type Writer = { runner: string } | { runKey: string };

/** A refused write, with the HTTP status it answers with; `expired`: the run deadline had passed, so the object plans again. */
export interface Refusal {
  ok: false;
  status: 400 | 403 | 404 | 409 | 413;
  code: ErrorCode;
  message: string;
  expired: boolean;
}

export type StepAnswer =
  | {
    ok: true; id: number; token: number; name: string; status: "intent" | "done"; duplicate: boolean; value: unknown; blob: { id: string; bytes: number } | null;
    idempotency_key?: string;
  }
  | Refusal;
export type BlobReserve = { ok: true; blob: string; r2Key: string; token: number } | Refusal;
export type HeartbeatAnswer = { ok: true; id: number; token: number; expires_at: number | null } | Refusal;

const REFUSAL_STATUS: Partial<Record<ErrorCode, Refusal["status"]>> = {
  unknown_message: 404, not_your_message: 403, stale_token: 409, message_not_running: 409, cancelled: 409, too_large: 413, bad_request: 400, effect_in_progress: 409,
};

/** How much one message's journal may hold. */
export const JOURNAL_BUDGET = { steps: LIMITS.stepsPerMessage, bytes: LIMITS.journalBytes };

/** A runner's write as checked at its token: its answer, what it moves for the plan, and a refusal of the token check (for /metrics). */
export type WriteOutcome = WriteDecision;

/** A run's journal write (step, heartbeat) decided: its answer, and the change the plan stores (null: nothing to store). */
export interface Journaled<T> {
  answer: T;
  change: MessageChange | null;
}

/** The open intents of a journal once `record` is stored: an intent keeps its place (or joins the end), an outcome closes it. */
function openAfter<T extends Pick<StepRecord, "name" | "onUnknown">>(open: readonly T[], record: Omit<StepRecord, "at">): Pick<StepRecord, "name" | "kind" | "status" | "onUnknown">[] {
  const rest = open.map((r) => ({ name: r.name, kind: "effect" as const, status: "intent" as const, onUnknown: r.name === record.name ? record.onUnknown : r.onUnknown }));
  if (record.status !== "intent") return rest.filter((r) => r.name !== record.name);
  return rest.some((r) => r.name === record.name) ? rest : [...rest, { name: record.name, kind: "effect", status: "intent", onUnknown: record.onUnknown }];
}

/** The refusals of the token check, which /metrics counts. */
const TOKEN_REFUSALS: ReadonlySet<ErrorCode> = new Set(["stale_token", "not_your_message", "message_not_running", "cancelled"]);

/** `code` when the token check refused the write, else null. */
export function refusedAtToken(code: ErrorCode): ErrorCode | null {
  return TOKEN_REFUSALS.has(code) ? code : null;
}

/** Who answers a parked message: the account, the name of its token, and from where (page, cli, http). */
export type Answerer = Pick<AnswerRecord, "account" | "token" | "via">;


const REPORTED_RUNNING = 50;
const REPORTED_PARKED = 20;
const REPORTED_FAILED = 10;
const REPORTED_CANCELLED = 10;

export class MessageLeases {
  readonly policies: RunPolicyStore;
  /** Whose effects' idempotency keys this object hands out (wire/step-keys.ts); null until it knows its account. */
  private keys: { tag: string; agent: string } | null = null;

  constructor(sql: SqlStorage, private readonly messages: MessageStore, private readonly steps: StepStore, private readonly blobs: BlobStore) {
    this.policies = new RunPolicyStore(sql);
  }

  /**
   * A write under a message token, decided by rules/plan/write.ts over what it touches (its lease,
   * the write that finished it, the question its attempt stored, the blob it names); what it moves
   * (a checkpoint, a park, a fail, a reply or ack) is returned as a change for the plan, never
   * stored here; a step or a heartbeat likewise (recordStep, heartbeat).
   */
  write(writer: string, frame: TokenWrite, now: number, fence: number): WriteOutcome {
    if (frame.type === "step" || frame.type === "heartbeat") return this.journalWrite(writer, frame, now);
    return decideWrite(this.writeTarget(frame, now), frame, writer, fence, this.policies.policy(), now);
  }

  /** What a runner's write reads of its message; null when there is none. */
  private writeTarget(frame: RunnerWrite, now: number): WriteTarget | null {
    const stored = this.messages.get(frame.id);
    if (!stored) return null;
    const asked = questionOf(stored, frame.token);
    const key = frame.type === "reply" ? frame.key : "ack";
    const done = stored.status === "acknowledged" ? this.messages.ackedWrite(stored.id) : null;
    const parksWith = frame.type !== "park" ? null : frame.question ? keptQuestion(frame.question, frame.token, now) : asked;
    return {
      lease: leaseOf(stored), asked,
      acked: { runner: stored.acked_runner, write: done ?? { id: stored.id, fence: stored.acked_fence ?? 0, key } },
      blob: "blob" in frame && frame.blob !== undefined ? this.committable(stored.id, frame.blob, frame.token) : null,
      questionRefusal: parksWith === null ? null : this.questionRefusal(stored.id, frame.token, parksWith.step),
    };
  }

  /**
   * Why this attempt may not ask a question now, or null: inside an effect it could never be
   * answered (the message would wait on the effect's outcome), and its answer must be kept under a
   * name nothing else holds, or the next attempt would get that record instead of the answer.
   */
  private questionRefusal(id: number, token: number, step: string | null): { code: "effect_in_progress" | "bad_request"; message: string } | null {
    const inside = openEffectOf(this.steps.openIntents(id), token);
    if (inside !== null) {
      return {
        code: "effect_in_progress",
        message: `effect "${inside}" of this attempt began and its outcome is not recorded: a question asked inside an effect could never be answered; ask before the effect or after it`,
      };
    }
    const taken = step === null ? null : questionStepRefusal(step, this.steps.get(id, step));
    return taken === null ? null : { code: "bad_request", message: taken };
  }

  /** A staged blob this token may commit, with its size, or why not. */
  private committable(id: number, blob: string, token: number): { blob: BlobRef } | { refusal: string } {
    const row = this.blobs.get(id, blob);
    const refusal = commitRefusal(row, token);
    return refusal === null ? { blob: { id: blob, bytes: row!.bytes } } : { refusal: `blob ${blob}: ${refusal}` };
  }

  /** A message checkpoint, inline or a blob it commits; the blob of the checkpoint it replaces goes. */
  private saveCheckpoint(id: number, checkpoint: StoredValue, token: number, now: number): void {
    const replaced = this.messages.saveMessageCheckpoint(id, checkpoint, token);
    if ("blob" in checkpoint) this.blobs.setState(id, checkpoint.blob.id, "committed");
    if (replaced !== null) this.blobs.discard(id, replaced, now);
  }

  /** A step or heartbeat frame: its answer and what the plan stores; `expired`: its run deadline had passed. */
  private journalWrite(runner: string, frame: Extract<TokenWrite, { type: "step" | "heartbeat" }>, now: number): WriteOutcome {
    const writer = { runner };
    const answer = frame.type === "step"
      ? this.recordStep(frame.id, frame.token, writer, {
          name: frame.name, kind: frame.kind, phase: frame.phase, onUnknown: frame.on_unknown ?? null,
          value: frame.value === undefined ? null : JSON.stringify(frame.value), blob: frame.blob === undefined ? null : { id: frame.blob, bytes: 0 },
        }, now)
      : this.heartbeat(frame.id, frame.token, writer, frame.details, now);
    if (!answer.answer.ok) {
      return { reply: errorFrame(answer.answer.code, answer.answer.message, frame.req), change: null, refused: refusedAtToken(answer.answer.code), expired: answer.answer.expired };
    }
    const { ok: _ok, ...result } = answer.answer;
    return { reply: { type: "result", op: frame.type, req: frame.req, ...result } as ServerFrame, change: answer.change, refused: null, expired: false };
  }

  /** The token check of every write for a running message, at this moment; a run key proves an HTTP writer. */
  private checkRun(id: number, token: number, writer: Writer, now: number): { ok: true; stored: RunRow } | Refusal {
    const stored = this.messages.runOf(id);
    if (!stored) return { ok: false, status: 404, code: "unknown_message", message: `no message ${id}`, expired: false };
    const m = leaseOf(stored);
    const runner = "runner" in writer ? writer.runner : sameSecret(writer.runKey, stored.run_key) ? (m.runner ?? "") : "(wrong run key)";
    const verdict = checkMessageWrite(m, token, runner, now);
    if (verdict.ok) return { ok: true, stored };
    const expired = m.status === "running" && m.expiresAt !== null && now >= m.expiresAt;
    return { ok: false, status: REFUSAL_STATUS[verdict.code] ?? 409, code: verdict.code, message: verdict.message, expired };
  }

  /**
   * Records a step's result, or an effect's intent or outcome, under the message's current token
   * (rules/step-journal.ts), as a change for the plan to store. An effect whose policy is to ask
   * marks the message while its intent is open, so an attempt that ends before the outcome parks
   * the message for a person.
   */
  recordStep(id: number, token: number, writer: Writer, write: StepWrite, now: number): Journaled<StepAnswer> {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return { answer: run, change: null };
    const reserved = write.kind === "answer" ? "a run never writes a person's answer" : runWriteRefusal(write.name);
    if (reserved !== null) return { answer: { ok: false, status: 400, code: "bad_request", message: reserved, expired: false }, change: null };
    const { stored } = run;
    const existing = this.steps.get(id, write.name);
    let decision = decideStepWrite(existing, write, { attempt: stored.attempts, token }, this.steps.usage(id), JOURNAL_BUDGET);
    if (decision.action === "record" && write.blob) {
      // Checked only for a write that records: a repeated write of a done step stays a duplicate.
      const blob = this.committable(id, write.blob.id, token);
      if ("refusal" in blob) return { answer: { ok: false, status: 400, code: "bad_request", message: blob.refusal, expired: false }, change: null };
      decision = { ...decision, record: { ...decision.record, blob: blob.blob } };
    }
    if (decision.action === "refuse") {
      return { answer: { ok: false, status: REFUSAL_STATUS[decision.code] ?? 400, code: decision.code, message: decision.message, expired: false }, change: null };
    }
    const record = decision.record;
    const change: MessageChange = { id, before: stored.status, lease: null };
    if (decision.action === "record") {
      change.journal = { record, existing };
      if (record.blob) change.commitBlob = record.blob.id;
      const asking = record.kind === "effect" ? pendingAsk(openAfter(this.steps.openIntents(id), record)) : stored.pending_ask;
      if (asking !== stored.pending_ask) change.pendingAsk = asking;
    }
    let key: string | null = null;
    if (record.kind === "effect") {
      key = this.steps.effectKey(id, record.name);
      if (key === null) {
        key = this.effectKey(id, record.name, existing?.status === "intent");
        if (key !== null) change.keepKey = { name: record.name, key };
      }
    }
    return {
      answer: {
        ok: true, id, token, name: record.name, status: record.status, duplicate: decision.action === "duplicate",
        value: record.value === null ? null : (JSON.parse(record.value) as unknown), blob: record.blob, ...(key === null ? {} : { idempotency_key: key }),
      },
      change: decision.action === "record" || change.keepKey !== undefined ? change : null,
    };
  }

  /** The account (its tag) and agent whose effect keys this object hands out, once known. */
  knowKeys(tag: string, agent: string): void {
    this.keys = { tag, agent };
  }

  /** The idempotency key of a message's effect, or with `legacy` the previous release's; null until the object knows its account. */
  private effectKey(id: number, name: string, legacy: boolean): string | null {
    if (this.keys === null) return null;
    return legacy ? legacyIdempotencyKey(this.keys.agent, id, name) : idempotencyKey(this.keys.tag, this.keys.agent, id, name);
  }

  /**
   * The key an effect hands to external APIs, kept with its first intent so it never changes while
   * the effect may run again. An intent the previous release recorded (kept with no key) keeps the
   * key that release handed out, so a retry after an upgrade is still a retry to the API.
   */
  effectKeyOf(id: number, name: string): string | null {
    return this.steps.effectKey(id, name) ?? this.effectKey(id, name, this.steps.get(id, name)?.status === "intent");
  }

  /**
   * Reserves room for one upload of the running attempt (token and writer checked now): the R2 key
   * it may be stored under, or a refusal. Nothing is stored in R2 before this says yes.
   */
  reserveBlob(id: number, token: number, writer: Writer, bytes: number, now: number): BlobReserve {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return run;
    this.blobs.discardUncommitted(id, token, now);
    const room = decideReserve(this.blobs.of(id), bytes, { bytes: LIMITS.messageBlobBytes, count: LIMITS.blobsPerMessage, perBlob: LIMITS.blobBytes });
    if (!room.ok) return { ok: false, status: 413, code: room.code, message: room.message, expired: false };
    const blob = `b-${randomHex128()}`;
    this.blobs.add(id, { blob, token, bytes, state: "uploading" }, now);
    return { ok: true, blob, r2Key: this.blobs.keyOf(id, blob), token };
  }

  /** The upload is stored: staged under its token, or discarded (and refused) when the run ended meanwhile. */
  stageBlob(id: number, token: number, writer: Writer, blob: string, stored: boolean, now: number): Refusal | { ok: true } {
    const row = this.blobs.get(id, blob);
    if (!row && stored) this.blobs.forgetStored(id, blob, now);
    if (!row || row.token !== token || row.state !== "uploading") return { ok: false, status: 400, code: "bad_request", message: `blob ${blob} is not being uploaded`, expired: false };
    const run = stored ? this.checkRun(id, token, writer, now) : null;
    if (run === null || !run.ok) {
      this.blobs.discard(id, blob, now);
      return run ?? { ok: false, status: 400, code: "bad_request", message: "the upload failed", expired: false };
    }
    this.blobs.setState(id, blob, "staged");
    return { ok: true };
  }

  /** The R2 key of a blob a journal record refers to (staged or committed), for reading it. */
  blobKey(id: number, blob: string): string | null {
    const row = this.blobs.get(id, blob);
    return row && row.state !== "uploading" ? this.blobs.keyOf(id, blob) : null;
  }

  /** The run is alive: its deadline moves on by the heartbeat timeout (never past the run timeout), its details kept as progress. */
  heartbeat(id: number, token: number, writer: Writer, details: unknown, now: number): Journaled<HeartbeatAnswer> {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return { answer: run, change: null };
    const next = extendRun(leaseOf(run.stored), now, this.policies.policy());
    return {
      answer: { ok: true, id, token, expires_at: next.expiresAt },
      change: { id, before: run.stored.status, lease: null, heartbeat: { expiresAt: next.expiresAt, progress: details === undefined ? null : JSON.stringify(details) } },
    };
  }

  /** Every record of a message, for its runner's hand-out. */
  journal(id: number): JournalEntry[] {
    return this.steps.journal(id).map((r) => ({
      name: r.name, kind: r.kind, status: r.status, on_unknown: r.onUnknown, attempt: r.attempt,
      ...(r.value === null ? {} : { value: JSON.parse(r.value) as unknown }),
      ...(r.blob === null ? {} : { blob: r.blob }),
    }));
  }

  /** A message as a person's input (or a deadline that answers for one) reads it; null when there is none. */
  target(id: number): TargetMessage | null {
    const stored = this.messages.get(id);
    if (!stored) return null;
    const asked = questionOf(stored);
    const entries = new Map<string, StepRecord>();
    for (const name of [asked?.step, stored.pending_ask]) {
      const record = name ? this.steps.get(id, name) : null;
      if (record) entries.set(record.name, record);
    }
    return {
      lease: leaseOf(stored), question: asked && { text: asked.text, choices: asked.choices, step: asked.step }, error: stored.error,
      entries, openIntents: stored.pending_ask === null ? [] : this.steps.openIntents(id), usage: this.steps.usage(id),
    };
  }

  /**
   * Stores one message change of a plan, in the order MessageChange names: its journal, its answer
   * record, why it failed, who cancelled or replaced it, its question and resume input, then its
   * lease (a hand-out with `handOut`: the serve fence, the runner's machine and a fresh run key).
   * Returns the row as stored when its lease was written, for the webhook event its status change makes.
   */
  save(c: MessageChange, now: number, handOut: { fence: number; machine: string; runKey: string } | null): StoredMessage | null {
    const { messages } = this;
    if (c.forgetStep !== undefined) this.steps.forget(c.id, c.forgetStep);
    if (c.journal) this.steps.save(c.id, c.journal.record, now, c.journal.existing);
    if (c.keepKey) this.steps.keepEffectKey(c.id, c.keepKey.name, c.keepKey.key);
    if (c.heartbeat) messages.saveHeartbeat(c.id, c.heartbeat.expiresAt, c.heartbeat.progress, now);
    if (c.pendingAsk !== undefined) messages.setPendingAsk(c.id, c.pendingAsk);
    if (c.answer) {
      const { by, ...answered } = c.answer;
      messages.recordAnswer(c.id, { at: now, ...answered, account: by.account, token: by.token, via: by.via });
    }
    if (c.personReply !== undefined) messages.answeredForPerson(c.id, c.personReply, now);
    if (c.failure !== undefined) messages.recordFailure(c.id, c.failure);
    if (c.cancel) {
      const record: CancelRecord = { at: now, ...c.cancel.by, reason: c.cancel.reason };
      messages.saveCancel(c.id, record);
      messages.recordAnswer(c.id, { at: now, choice: "cancel", text: record.reason, question: null, account: record.account, token: record.token, via: record.via });
    }
    if (c.supersededBy !== undefined) messages.saveSupersededBy(c.id, c.supersededBy);
    if (c.checkpoint) this.saveCheckpoint(c.id, c.checkpoint.kept, c.checkpoint.token, now);
    if (c.question !== undefined) messages.ask(c.id, c.question);
    if (c.closeQuestion) messages.ask(c.id, null);
    if (c.resume) {
      messages.setResumeInput(c.id, c.resume.input);
      messages.setResumeChoice(c.id, c.resume.choice);
    }
    let saved: StoredMessage | null = null;
    if (c.ack && c.lease) messages.acknowledge({ id: c.id, fence: c.ack.fence, key: c.ack.key }, c.ack.reply, now, c.ack.token, c.ack.runner, c.lease);
    else if (c.lease) saved = messages.saveLease(c.lease, handOut);
    if (c.commitBlob !== undefined) this.blobs.setState(c.id, c.commitBlob, "committed");
    if (c.dropUncommitted) this.blobs.discardUnkept(c.id, now);
    return saved;
  }

  /** The running attempt stores what it asks (`baton ask`); its park then carries it. */
  ask(id: number, token: number, writer: Writer, question: Question, deadlineSeconds: number | null, now: number): Refusal | { ok: true; id: number; token: number } {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return run;
    const refused = this.questionRefusal(id, token, question.step ?? null);
    if (refused !== null) return { ok: false, status: REFUSAL_STATUS[refused.code] ?? 400, ...refused, expired: false };
    // A run that goes on asking after its first question (no `|| exit`) still parks on the first one.
    const open = questionOf(this.messages.get(id)!, token);
    if (open === null || open.step === (question.step ?? null)) this.messages.ask(id, { ...keptQuestion(question, token, now), deadline_seconds: deadlineSeconds });
    return { ok: true, id, token };
  }

  /** `machines`: the machine of each connected runner (by runnerOf). */
  report(machines: ReadonlyMap<string, string>): WorkReport {
    const policy = this.policies.policy();
    return {
      mode: policy.mode,
      max_running: policy.maxRunning,
      run_timeout_seconds: policy.runTimeoutMs / 1000,
      max_attempts: policy.maxAttempts,
      counts: this.messages.countByStatus(),
      running: this.messages.inStatus("running", REPORTED_RUNNING).map((m) => ({
        id: m.id, attempt: m.attempts, token: m.token, claim_seq: m.runner === null ? null : Number(m.runner),
        machine: machines.get(m.runner ?? "") ?? null, expires_at: m.expires_at, group: m.msg_group,
        heartbeat_at: m.heartbeat_at,
      })),
      parked: this.messages.inStatus("parked", REPORTED_PARKED).map((m) => {
        const asked = questionOf(m);
        return {
          id: m.id, attempt: m.attempts, deadline: m.expires_at, group: m.msg_group, waiting_on: m.pending_ask,
          reason: m.pending_ask === null ? null : unknownOutcomeReason(m.pending_ask),
          ...(asked === null ? {} : { question: asked.text, choices: asked.choices }),
          ...(m.on_deadline === null ? {} : { on_deadline: m.on_deadline }),
        };
      }),
      failed: this.messages.inStatus("failed", REPORTED_FAILED).map((m) => ({ id: m.id, attempts: m.attempts, error: m.error })),
      cancelled: this.messages.inStatus("cancelled", REPORTED_CANCELLED).flatMap((m) => {
        if (m.cancel === null) return [];
        const c = JSON.parse(m.cancel) as CancelRecord;
        return [{ id: m.id, at: c.at, account: c.account, token: c.token, via: c.via, reason: c.reason }];
      }),
    };
  }
}
