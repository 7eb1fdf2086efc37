// Each message's own lease, wired to storage: accepts writes only under a message's current token,
// from the connection it was handed to, before its run deadline by this object's clock, and
// resumes parked messages. Who runs what, and what is taken back, is decided by
// ../rules/agent-plan.ts; the rules of one message are in ../rules/message-lease.ts.
import {
  answer, checkMessageWrite, extendRun, failAttempt, park, resume, retry, type Answer, type MessageLease, type MessagePolicy,
} from "../rules/message-lease.ts";
import { runnerOf } from "../rules/agent-plan.ts";
import {
  decideStepWrite, openEffectOf, pendingAsk, questionStepRefusal, runWriteRefusal, unknownOutcomeReason, type BlobRef, type StepRecord, type StepWrite,
  type UnknownOutcome,
} from "../rules/step-journal.ts";
import { send, type ConnState } from "./connections.ts";
import {
  leaseOf, questionOf, type CancelRecord, type AnswerRecord, type MessageStore, type RunRow, type StoredMessage, type StoredQuestion, type StoredValue,
} from "./message-store.ts";
import { RunPolicyStore } from "./run-policy-store.ts";
import type { StepStore } from "./step-store.ts";
import type { BlobStore } from "./blob-store.ts";
import { randomHex128, sameSecret } from "./secrets.ts";
import { commitRefusal, decideReserve } from "../rules/blob-ledger.ts";
import { errorFrame, LIMITS, type ClientFrame, type ErrorCode, type JournalEntry, type Question } from "../wire/protocol.ts";
import type { WorkReport } from "../wire/server-frames.ts";

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

const JOURNAL_BUDGET = { steps: LIMITS.stepsPerMessage, bytes: LIMITS.journalBytes };

/** Who answers a parked message: the account, the name of its token, and from where (page, cli, http). */
export type Answerer = Pick<AnswerRecord, "account" | "token" | "via">;
/** A deadline that answered for a person. */
const DEADLINE: Answerer = { account: "baton", token: "deadline", via: "deadline" };

/** What a question for a person ends with as its reply: the answer, who gave it and when (JSON). */
function personReply(reply: Answer, by: Answerer, now: number): string {
  return JSON.stringify({ choice: reply.choice, text: reply.text, by: { account: by.account, token: by.token, via: by.via }, at: now });
}

function storedQuestion(q: Question, token: number, now: number): StoredQuestion {
  return { text: q.text, choices: q.choices ?? null, step: q.step ?? null, on_deadline: q.on_deadline ?? null, token, asked_at: now };
}

const REPORTED_RUNNING = 50;
const REPORTED_PARKED = 20;
const REPORTED_FAILED = 10;
const REPORTED_CANCELLED = 10;

export type ResumeOutcome =
  | { ok: true; message: StoredMessage }
  | { ok: false; status: 400 | 404 | 409 | 413; code: "not_found" | "not_parked" | "outcome_unknown" | "bad_request" | "too_large" | "question_open" | "cancelled"; message: string };

export class MessageLeases {
  readonly policies: RunPolicyStore;
  /** Told of every write refused by the token check, before the error frame goes out (for /metrics). */
  onRefused: (code: ErrorCode) => void = () => {};
  /**
   * The idempotency key of a message's effect (wire/step-keys.ts), or with `legacy` the previous
   * release's; null until the object knows its account.
   */
  effectKey: (id: number, name: string, legacy: boolean) => string | null = () => null;

  constructor(sql: SqlStorage, private readonly messages: MessageStore, private readonly steps: StepStore, private readonly blobs: BlobStore) {
    this.policies = new RunPolicyStore(sql);
  }

  /**
   * A write under a message token, checked at this moment by this object's clock. A token other
   * than the message's current one is refused as stale_token (also once the message finished), a
   * write from any connection but the one the message was handed to as not_your_message, and a
   * write after the run deadline as message_not_running (the message is taken back at once). A
   * reply or ack under the token that finished the message, from its runner, is answered
   * `duplicate: true` with the write that did. Returns true when the message may have moved, so
   * the object plans again (a checkpoint moves nothing).
   */
  write(socket: DeskSocket, frame: TokenWrite, now: number, fence: number): boolean {
    if (frame.type === "step" || frame.type === "heartbeat") return this.journalWrite(socket, frame, now);
    const stored = this.messages.get(frame.id);
    if (!stored) {
      send(socket.ws, errorFrame("unknown_message", `no message ${frame.id}`, frame.req));
      return false;
    }
    const m = leaseOf(stored);
    const key = frame.type === "reply" ? frame.key : "ack";
    const writer = runnerOf(socket.state);
    if (frame.token === m.token && m.status === "acknowledged" && (frame.type === "reply" || frame.type === "ack") && stored.acked_runner === writer) {
      const done = this.messages.ackedWrite(m.id) ?? { id: m.id, fence: stored.acked_fence ?? 0, key };
      send(socket.ws, { type: "result", ...done, token: m.token, op: frame.type, req: frame.req, duplicate: true });
      return false;
    }
    const verdict = checkMessageWrite(m, frame.token, writer, now);
    if (!verdict.ok) {
      this.onRefused(verdict.code);
      send(socket.ws, errorFrame(verdict.code, verdict.message, frame.req));
      // A deadline that passed before its alarm ran is applied now: the message goes back at once.
      return m.status === "running" && m.expiresAt !== null && now >= m.expiresAt;
    }
    const blob = "blob" in frame && frame.blob !== undefined ? this.committable(m.id, frame.blob, frame.token) : null;
    if (blob !== null && "refusal" in blob) {
      send(socket.ws, errorFrame("bad_request", blob.refusal, frame.req));
      return false;
    }
    switch (frame.type) {
      case "checkpoint":
        this.saveCheckpoint(m.id, blob ?? { value: frame.value }, frame.token, now);
        send(socket.ws, { type: "result", op: "checkpoint", req: frame.req, id: m.id, token: frame.token });
        return false;
      case "park": {
        // The question is the frame's, or the one this attempt stored over HTTP (`baton ask`) before it parked.
        const asked = frame.question ? storedQuestion(frame.question, frame.token, now) : questionOf(stored, frame.token);
        const refused = asked === null ? null : this.questionRefusal(m.id, frame.token, asked.step);
        if (refused !== null) {
          send(socket.ws, errorFrame(refused.code, refused.message, frame.req));
          return false;
        }
        if (blob !== null || frame.value !== undefined) this.saveCheckpoint(m.id, blob ?? { value: frame.value }, frame.token, now);
        this.messages.ask(m.id, asked);
        const onDeadline = frame.question?.on_deadline ?? asked?.on_deadline ?? null;
        const deadlineSeconds = frame.deadline_seconds ?? asked?.deadline_seconds ?? null;
        const parked = park(m, now, deadlineSeconds === null ? null : deadlineSeconds * 1000, onDeadline);
        this.messages.saveLease(parked);
        send(socket.ws, { type: "result", op: "park", req: frame.req, id: m.id, token: frame.token, deadline: parked.expiresAt });
        return true;
      }
      case "fail": {
        const next = failAttempt(m, now, this.policies.policy());
        this.messages.recordFailure(m.id, frame.reason || "the run failed");
        this.messages.saveLease(next);
        send(socket.ws, { type: "result", op: "fail", req: frame.req, id: m.id, token: frame.token, status: next.status, retry_at: next.retryAt });
        return true;
      }
      default: {
        if (m.pendingAsk !== null) {
          // Finishing now would close the question nobody answered: the attempt must fail, and the message waits for a person.
          send(socket.ws, errorFrame("outcome_unknown", `${unknownOutcomeReason(m.pendingAsk)}: message ${m.id} cannot finish before a person answers; fail the attempt`, frame.req));
          return false;
        }
        const asked = questionOf(stored, frame.token);
        if (asked !== null) {
          // This run asked a person (`baton ask`) and went on without the answer: it parks instead of finishing.
          send(socket.ws, errorFrame("question_open", `message ${m.id} asked "${asked.text.slice(0, 200)}" and nobody has answered: it cannot finish; park it`, frame.req));
          return false;
        }
        const write = { id: m.id, fence, key };
        const reply = frame.type !== "reply" ? null : blob !== null ? blob.blob : frame.text;
        this.messages.acknowledge(write, reply, now, frame.token, writer);
        if (blob !== null) this.blobs.setState(m.id, blob.blob.id, "committed");
        this.blobs.discardUnkept(m.id, now);
        send(socket.ws, { type: "result", ...write, token: frame.token, op: frame.type, req: frame.req, duplicate: false });
        return true;
      }
    }
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

  /** A step or heartbeat frame, answered on its socket; true when its run deadline had passed (the object plans again). */
  private journalWrite(socket: DeskSocket, frame: Extract<TokenWrite, { type: "step" | "heartbeat" }>, now: number): boolean {
    const writer = { runner: runnerOf(socket.state) };
    const answer = frame.type === "step"
      ? this.recordStep(frame.id, frame.token, writer, {
          name: frame.name, kind: frame.kind, phase: frame.phase, onUnknown: frame.on_unknown ?? null,
          value: frame.value === undefined ? null : JSON.stringify(frame.value), blob: frame.blob === undefined ? null : { id: frame.blob, bytes: 0 },
        }, now)
      : this.heartbeat(frame.id, frame.token, writer, frame.details, now);
    if (!answer.ok) {
      send(socket.ws, errorFrame(answer.code, answer.message, frame.req));
      return answer.expired;
    }
    const { ok: _ok, ...result } = answer;
    send(socket.ws, { type: "result", op: frame.type, req: frame.req, ...result } as never);
    return false;
  }

  /** The token check of every write for a running message, at this moment; a run key proves an HTTP writer. */
  private checkRun(id: number, token: number, writer: Writer, now: number): { ok: true; stored: RunRow } | Refusal {
    const stored = this.messages.runOf(id);
    if (!stored) return { ok: false, status: 404, code: "unknown_message", message: `no message ${id}`, expired: false };
    const m = leaseOf(stored);
    const runner = "runner" in writer ? writer.runner : sameSecret(writer.runKey, stored.run_key) ? (m.runner ?? "") : "(wrong run key)";
    const verdict = checkMessageWrite(m, token, runner, now);
    if (verdict.ok) return { ok: true, stored };
    this.onRefused(verdict.code);
    const expired = m.status === "running" && m.expiresAt !== null && now >= m.expiresAt;
    return { ok: false, status: REFUSAL_STATUS[verdict.code] ?? 409, code: verdict.code, message: verdict.message, expired };
  }

  /**
   * Records a step's result, or an effect's intent or outcome, under the message's current token
   * (rules/step-journal.ts). An effect whose policy is to ask marks the message while its intent is
   * open, so an attempt that ends before the outcome parks the message for a person.
   */
  recordStep(id: number, token: number, writer: Writer, write: StepWrite, now: number): StepAnswer {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return run;
    const reserved = write.kind === "answer" ? "a run never writes a person's answer" : runWriteRefusal(write.name);
    if (reserved !== null) return { ok: false, status: 400, code: "bad_request", message: reserved, expired: false };
    const { stored } = run;
    const existing = this.steps.get(id, write.name);
    let decision = decideStepWrite(existing, write, { attempt: stored.attempts, token }, this.steps.usage(id), JOURNAL_BUDGET);
    if (decision.action === "record" && write.blob) {
      // Checked only for a write that records: a repeated write of a done step stays a duplicate.
      const blob = this.committable(id, write.blob.id, token);
      if ("refusal" in blob) return { ok: false, status: 400, code: "bad_request", message: blob.refusal, expired: false };
      decision = { ...decision, record: { ...decision.record, blob: blob.blob } };
    }
    if (decision.action === "refuse") return { ok: false, status: REFUSAL_STATUS[decision.code] ?? 400, code: decision.code, message: decision.message, expired: false };
    const record: StepRecord = decision.action === "duplicate" ? decision.record : this.steps.save(id, decision.record, now, existing);
    if (decision.action === "record") {
      if (record.blob) this.blobs.setState(id, record.blob.id, "committed");
      if (record.kind === "effect") this.noteOpenAsk(id, stored.pending_ask);
    }
    const key = record.kind === "effect" ? this.keyOf(id, record.name, existing) : null;
    return {
      ok: true, id, token, name: record.name, status: record.status, duplicate: decision.action === "duplicate",
      value: record.value === null ? null : (JSON.parse(record.value) as unknown), blob: record.blob, ...(key === null ? {} : { idempotency_key: key }),
    };
  }

  /**
   * The key an effect hands to external APIs, kept with its first intent so it never changes while
   * the effect may run again. An intent the previous release recorded (kept with no key) keeps the
   * key that release handed out, so a retry after an upgrade is still a retry to the API.
   */
  effectKeyOf(id: number, name: string): string | null {
    return this.steps.effectKey(id, name) ?? this.effectKey(id, name, this.steps.get(id, name)?.status === "intent");
  }

  private keyOf(id: number, name: string, before: StepRecord | null): string | null {
    const kept = this.steps.effectKey(id, name);
    if (kept !== null) return kept;
    const key = this.effectKey(id, name, before?.status === "intent");
    if (key !== null) this.steps.keepEffectKey(id, name, key);
    return key;
  }

  /** Keeps the message's pending question equal to what its journal says (rules/step-journal.ts pendingAsk). */
  private noteOpenAsk(id: number, current: string | null): string | null {
    const asking = pendingAsk(this.steps.openIntents(id));
    if (asking !== current) this.messages.setPendingAsk(id, asking);
    return asking;
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
  heartbeat(id: number, token: number, writer: Writer, details: unknown, now: number): HeartbeatAnswer {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return run;
    const next = extendRun(leaseOf(run.stored), now, this.policies.policy());
    this.messages.saveHeartbeat(id, next.expiresAt, details === undefined ? null : JSON.stringify(details), now);
    return { ok: true, id, token, expires_at: next.expiresAt };
  }

  /** Every record of a message, for its runner's hand-out. */
  journal(id: number): JournalEntry[] {
    return this.steps.journal(id).map((r) => ({
      name: r.name, kind: r.kind, status: r.status, on_unknown: r.onUnknown, attempt: r.attempt,
      ...(r.value === null ? {} : { value: JSON.parse(r.value) as unknown }),
      ...(r.blob === null ? {} : { blob: r.blob }),
    }));
  }

  /**
   * Queues a parked message again with the person's input; it is handed out with attempt + 1 and
   * its checkpoint by the plan that follows. A park deadline that passed before its alarm ran
   * refuses the resume; the plan that follows fails the message.
   */
  resume(id: number, input: string | null, outcome: UnknownOutcome | null, by: Answerer, now: number): ResumeOutcome {
    const stored = this.messages.get(id);
    if (!stored) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
    const result = resume(leaseOf(stored), now, outcome);
    if (!result.ok) return { ...result, status: result.code === "bad_request" ? 400 : 409 };
    const asked = stored.pending_ask === null ? questionOf(stored) : null;
    if (asked !== null) {
      // A resume would lose the answer the run waits for, and it would only ask again.
      return { ok: false, status: 409, code: "question_open", message: `message ${id} asks "${asked.text.slice(0, 200)}": answer it with approve, answer or reject` };
    }
    const unknown = stored.pending_ask;
    if (unknown !== null && outcome === "redo") this.steps.forget(id, unknown);
    if (unknown !== null && outcome === "done") {
      // The person's answer is the effect's outcome: recorded like any other, inside the journal's budget.
      const existing = this.steps.get(id, unknown);
      const decision = decideStepWrite(existing, {
        name: unknown, kind: "effect", phase: "done", value: JSON.stringify(input), onUnknown: "ask",
      }, { attempt: stored.attempts, token: stored.token }, this.steps.usage(id), JOURNAL_BUDGET);
      if (decision.action === "refuse") return { ok: false, status: decision.code === "too_large" ? 413 : 400, code: decision.code === "too_large" ? "too_large" : "bad_request", message: decision.message };
      if (decision.action === "record") this.steps.save(id, decision.record, now, existing);
    }
    this.messages.recordAnswer(id, { at: now, choice: outcome ?? "resume", text: input, question: unknown === null ? questionOf(stored)?.text ?? null : unknownOutcomeReason(unknown), ...by });
    // Several effects may have been left unknown: each is answered in turn, and the message stays parked until none is.
    if (unknown !== null && this.noteOpenAsk(id, unknown) !== null) return { ok: true, message: this.messages.get(id)! };
    this.settle(stored, result.message, { choice: "resume", text: input }, false);
    return { ok: true, message: this.messages.get(id)! };
  }

  /**
   * A person's answer to a parked message (approve, reject, or one of the question's choices), kept
   * with who gave it. Reject ends the message; any other answer queues it with the answer as its
   * resume input and choice, and in the journal under the question's step, so a handler run again
   * from the top gets it from `ask`.
   */
  answer(id: number, reply: Answer, by: Answerer, now: number): ResumeOutcome {
    const stored = this.messages.get(id);
    if (!stored) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
    const asked = questionOf(stored);
    const result = answer(leaseOf(stored), reply, asked?.choices ?? null, now);
    if (!result.ok) return { ...result, status: result.code === "bad_request" ? 400 : 409 };
    if (asked?.step && result.message.status === "queued") {
      const recorded = this.recordAnswerStep(stored, asked.step, reply, by, now);
      if (recorded !== null) return recorded;
    }
    this.messages.recordAnswer(id, { at: now, choice: reply.choice, text: reply.text, question: asked?.text ?? null, ...by });
    if (result.message.forPerson) this.messages.answeredForPerson(id, personReply(reply, by, now), now);
    this.settle(stored, result.message, reply, true);
    return { ok: true, message: this.messages.get(id)! };
  }

  /** A question for a person alone (an MCP host's ask): parked from the start with it, never handed to a runner. */
  askPerson(id: number, question: Question, deadlineSeconds: number | null, now: number): StoredMessage {
    const stored = this.messages.get(id)!;
    this.messages.ask(id, storedQuestion({ ...question, step: undefined }, stored.token, now));
    return this.messages.saveLease(park(leaseOf(stored), now, deadlineSeconds === null ? null : deadlineSeconds * 1000, question.on_deadline ?? null));
  }

  /**
   * A parked message whose deadline answered for the person (approve, reject): recorded as answered
   * by the deadline. False when it could not be (its journal is full): it failed instead, and the
   * plan's hand-out of it must not happen.
   */
  answeredByDeadline(after: MessageLease, choice: "approve" | "reject", now: number): boolean {
    const stored = this.messages.get(after.id);
    if (!stored) return false;
    const asked = questionOf(stored);
    const reply = { choice, text: null };
    const refused = asked?.step && choice === "approve" ? this.recordAnswerStep(stored, asked.step, reply, DEADLINE, now) : null;
    if (refused !== null) {
      // Without the answer in its journal the run would only ask again: the message fails, saying why.
      this.messages.recordFailure(after.id, `its deadline answered approve, but its journal is full: ${refused.message}`);
      this.settle(stored, { ...after, status: "failed" }, reply, false);
      return false;
    }
    this.messages.recordAnswer(after.id, { at: now, choice, text: null, question: asked?.text ?? null, ...DEADLINE });
    if (after.forPerson) this.messages.answeredForPerson(after.id, personReply(reply, DEADLINE, now), now);
    this.settle(stored, after, reply, true);
    return true;
  }

  /** A failed message queued again by a person, with a fresh set of attempts. */
  retry(id: number, by: Answerer, now: number): ResumeOutcome {
    const stored = this.messages.get(id);
    if (!stored) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
    const result = retry(leaseOf(stored));
    if (!result.ok) return { ok: false, status: 409, code: result.code === "cancelled" ? "cancelled" : "not_parked", message: result.message };
    this.messages.recordAnswer(id, { at: now, choice: "retry", text: null, question: stored.error, ...by });
    this.messages.saveLease(result.message);
    return { ok: true, message: this.messages.get(id)! };
  }

  /**
   * Stores a cancel the plan decided (rules/message-cancel.ts): who and why with the message, the
   * same record among its answers, then the lease that ends it (its status change makes the
   * `message.cancelled` event). Its steps stay as they are.
   */
  saveCancel(after: MessageLease, record: CancelRecord): void {
    this.messages.saveCancel(after.id, record);
    this.messages.recordAnswer(after.id, { at: record.at, choice: "cancel", text: record.reason, question: null, account: record.account, token: record.token, via: record.via });
    this.messages.saveLease(after);
  }

  /** Stores a queued message replaced by a newer one of its group (on_busy replace); its status change makes `message.superseded`. */
  saveSuperseded(after: MessageLease, by: number): void {
    this.messages.saveSupersededBy(after.id, by);
    this.messages.saveLease(after);
  }

  /** The running attempt stores what it asks (`baton ask`); its park then carries it. */
  ask(id: number, token: number, writer: Writer, question: Question, deadlineSeconds: number | null, now: number): Refusal | { ok: true; id: number; token: number } {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return run;
    const refused = this.questionRefusal(id, token, question.step ?? null);
    if (refused !== null) return { ok: false, status: REFUSAL_STATUS[refused.code] ?? 400, ...refused, expired: false };
    // A run that goes on asking after its first question (no `|| exit`) still parks on the first one.
    const open = questionOf(this.messages.get(id)!, token);
    if (open === null || open.step === (question.step ?? null)) this.messages.ask(id, { ...storedQuestion(question, token, now), deadline_seconds: deadlineSeconds });
    return { ok: true, id, token };
  }

  /**
   * The answer in the journal under the question's step, as a record of kind answer that no run can
   * write (its token is the parked attempt's); a refusal when the journal is full.
   */
  private recordAnswerStep(stored: StoredMessage, step: string, reply: Answer, by: Answerer, now: number): ResumeOutcome | null {
    const existing = this.steps.get(stored.id, step);
    const value = JSON.stringify({ choice: reply.choice, text: reply.text, by: { account: by.account, token: by.token, via: by.via }, at: now });
    const decision = decideStepWrite(existing, { name: step, kind: "answer", phase: "done", value, onUnknown: null },
      { attempt: stored.attempts, token: stored.token }, this.steps.usage(stored.id), JOURNAL_BUDGET);
    if (decision.action === "refuse") return { ok: false, status: decision.code === "too_large" ? 413 : 400, code: decision.code === "too_large" ? "too_large" : "bad_request", message: decision.message };
    if (decision.action === "record") this.steps.save(stored.id, decision.record, now, existing);
    return null;
  }

  /** Stores a parked message as answered: the question is closed, and a queued one carries the answer to its next attempt. */
  private settle(stored: StoredMessage, after: MessageLease, reply: Answer, withChoice: boolean): void {
    this.messages.ask(stored.id, null);
    if (after.status === "queued") {
      this.messages.setResumeInput(stored.id, reply.text);
      this.messages.setResumeChoice(stored.id, withChoice ? reply.choice : null);
    }
    this.messages.saveLease(after);
  }

  setPolicy(update: Partial<MessagePolicy>): MessagePolicy {
    const policy = { ...this.policies.policy(), ...update };
    this.policies.savePolicy(policy);
    return policy;
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
