// Each message's own lease: decides writes only under its current token, from the connection it
// was handed to (or its run key), before its run deadline by this object's clock, as changes the
// plan (../rules/agent-plan.ts) stores; the rules of one message are in ../rules/message-lease.ts.
// Beside it: the writes' answers and refusals (message-writes.ts), how a plan's change is stored
// (message-changes.ts) and what presence shows of the work (work-report.ts).
import { quorumOf } from "../rules/quorum.ts";
import { checkMessageWrite, extendRun } from "../rules/message-lease.ts";
import type { MessageChange, TargetMessage } from "../rules/agent-plan.ts";
import { decideWrite, keptQuestion, type RunnerWrite, type WriteTarget } from "../rules/plan/write.ts";
import { approvalAsk, decidePermit } from "../rules/permits.ts";
import {
  decideStepWrite, idempotencyKey, legacyIdempotencyKey, openEffectOf, pendingAsk, questionStepRefusal, runWriteRefusal,
  type BlobRef, type StepRecord, type StepWrite,
} from "../rules/step-journal.ts";
import { leaseOf, questionOf, type MessageStore, type RunRow, type StoredMessage } from "./message-store.ts";
import { RunPolicyStore } from "./run-policy-store.ts";
import type { StepStore } from "./step-store.ts";
import type { BlobStore } from "./blob-store.ts";
import { randomHex128, sameSecret } from "./secrets.ts";
import { commitRefusal, decideReserve } from "../rules/blob-ledger.ts";
import { errorFrame, LIMITS, type Question } from "../wire/protocol.ts";
import type { ServerFrame, WorkReport } from "../wire/server-frames.ts";
import { saveChange, type MessageStores } from "./message-changes.ts";
import { workReport } from "./work-report.ts";
import {
  JOURNAL_BUDGET, REFUSAL_STATUS, refusedAtToken, type BlobReserve, type HeartbeatAnswer, type Journaled, type Refusal, type StepAnswer, type TokenWrite,
  type WriteOutcome, type Writer,
} from "./message-writes.ts";

export {
  JOURNAL_BUDGET, refusedAtToken, type Answerer, type BlobReserve, type DeskSocket, type HeartbeatAnswer, type Journaled, type Refusal, type StepAnswer,
  type TokenWrite, type WriteOutcome, type Writer,
} from "./message-writes.ts";

/** The open intents of a journal once `record` is stored: an intent keeps its place (or joins the end), an outcome closes it. */
function openAfter<T extends Pick<StepRecord, "name" | "onUnknown">>(open: readonly T[], record: Omit<StepRecord, "at">): Pick<StepRecord, "name" | "kind" | "status" | "onUnknown">[] {
  const rest = open.map((r) => ({ name: r.name, kind: "effect" as const, status: "intent" as const, onUnknown: r.name === record.name ? record.onUnknown : r.onUnknown }));
  if (record.status !== "intent") return rest.filter((r) => r.name !== record.name);
  return rest.some((r) => r.name === record.name) ? rest : [...rest, { name: record.name, kind: "effect", status: "intent", onUnknown: record.onUnknown }];
}

export class MessageLeases {
  readonly policies: RunPolicyStore;
  /** Whose effects' idempotency keys this object hands out (wire/step-keys.ts); null until it knows its account. */
  private keys: { tag: string; agent: string } | null = null;

  private readonly stores: MessageStores;

  constructor(sql: SqlStorage, private readonly messages: MessageStore, private readonly steps: StepStore, private readonly blobs: BlobStore) {
    this.policies = new RunPolicyStore(sql);
    this.stores = { messages, steps, blobs };
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

  /** A step or heartbeat frame: its answer and what the plan stores; `expired`: its run deadline had passed. */
  private journalWrite(runner: string, frame: Extract<TokenWrite, { type: "step" | "heartbeat" }>, now: number): WriteOutcome {
    const writer = { runner };
    const answer = frame.type === "step"
      ? this.recordStep(frame.id, frame.token, writer, {
          name: frame.name, kind: frame.kind, phase: frame.phase, onUnknown: frame.on_unknown ?? null,
          value: frame.value === undefined ? null : JSON.stringify(frame.value), blob: frame.blob === undefined ? null : { id: frame.blob, bytes: 0 },
          approve: frame.approve === undefined ? null : approvalAsk(frame.approve),
        }, now)
      : this.heartbeat(frame.id, frame.token, writer, frame.details, now);
    if (!answer.answer.ok) {
      // A refusal may still store something: the question an intent that needs approval asks.
      return { reply: errorFrame(answer.answer.code, answer.answer.message, frame.req), change: answer.change, refused: refusedAtToken(answer.answer.code), expired: answer.answer.expired };
    }
    const { ok: _ok, ...result } = answer.answer;
    return { reply: { type: "result", op: frame.type, req: frame.req, ...result } as ServerFrame, change: answer.change, refused: null, expired: false };
  }

  /** A run reading its journal to replay it: refused as its write would be, so a stale attempt never takes another's result for its own. */
  checkReplay(id: number, token: number, writer: Writer, now: number): Refusal | { ok: true } {
    const run = this.checkRun(id, token, writer, now);
    return run.ok ? { ok: true } : run;
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
    // An intent that needs approval is recorded only on a permit it spends (rules/permits.ts); else the coordinator asks.
    const permit = decision.action === "record" && write.approve ? decidePermit(this.messages.permits.get(id, write.name), write.name, write.approve, token, now) : null;
    if (permit?.action === "ask") {
      return { answer: { ok: false, status: 409, code: "approval_required", message: permit.message, expired: false }, change: { id, before: stored.status, lease: null, question: permit.question } };
    }
    const record = decision.record;
    const change: MessageChange = { id, before: stored.status, lease: null, ...(permit ? { permit: { spend: permit } } : {}) };
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
  reserveBlob(id: number, token: number, writer: Writer, bytes: number, now: number): Journaled<BlobReserve> {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return { answer: run, change: null };
    // Uploads of earlier attempts that nothing committed go first, whatever the verdict: only their own token could commit them.
    const kept = this.blobs.of(id).filter((b) => b.token >= token || b.state === "committed");
    const upload: NonNullable<MessageChange["upload"]> = { dropBefore: token };
    const change: MessageChange = { id, before: run.stored.status, lease: null, upload };
    const room = decideReserve(kept, bytes, { bytes: LIMITS.messageBlobBytes, count: LIMITS.blobsPerMessage, perBlob: LIMITS.blobBytes });
    if (!room.ok) return { answer: { ok: false, status: 413, code: room.code, message: room.message, expired: false }, change };
    const blob = `b-${randomHex128()}`;
    upload.reserve = { blob, token, bytes };
    return { answer: { ok: true, blob, r2Key: this.blobs.keyOf(id, blob), token }, change };
  }

  /** The upload is stored: staged under its token, or discarded (and refused) when the run ended meanwhile. */
  stageBlob(id: number, token: number, writer: Writer, blob: string, stored: boolean, now: number): Journaled<Refusal | { ok: true }> {
    const row = this.blobs.get(id, blob);
    // Its message was pruned while it streamed: nothing of a message changes, the R2 object goes to the garbage.
    if (!row && stored) this.blobs.forgetStored(id, blob, now);
    const notUploading: Refusal = { ok: false, status: 400, code: "bad_request", message: `blob ${blob} is not being uploaded`, expired: false };
    const message = this.messages.runOf(id);
    if (!row || row.token !== token || row.state !== "uploading" || message === null) return { answer: notUploading, change: null };
    const run = stored ? this.checkRun(id, token, writer, now) : null;
    const ok = run !== null && run.ok;
    return {
      answer: ok ? { ok: true } : run ?? { ok: false, status: 400, code: "bad_request", message: "the upload failed", expired: false },
      change: { id, before: message.status, lease: null, upload: ok ? { stage: blob } : { discard: blob } },
    };
  }

  /** The R2 key of a blob a journal record refers to (staged or committed). */
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
      lease: leaseOf(stored), question: asked && { text: asked.text, choices: asked.choices, step: asked.step, approve: asked.approve ?? null, token: asked.token, quorum: quorumOf(asked) }, error: stored.error,
      entries, openIntents: stored.pending_ask === null ? [] : this.steps.openIntents(id), usage: this.steps.usage(id),
    };
  }

  /**
   * Stores one message change of a plan (message-changes.ts). Returns the row as stored when its
   * lease was written, for the webhook event its status change makes.
   */
  save(c: MessageChange, now: number, handOut: { fence: number; machine: string; runKey: string } | null): StoredMessage | null {
    return saveChange(this.stores, c, now, handOut);
  }

  /** The running attempt's question (`baton ask`), a change its park then carries. */
  ask(id: number, token: number, writer: Writer, question: Question, deadlineSeconds: number | null, now: number): Journaled<Refusal | { ok: true; id: number; token: number }> {
    const run = this.checkRun(id, token, writer, now);
    if (!run.ok) return { answer: run, change: null };
    const refused = this.questionRefusal(id, token, question.step ?? null);
    if (refused !== null) return { answer: { ok: false, status: REFUSAL_STATUS[refused.code] ?? 400, ...refused, expired: false }, change: null };
    // A run that goes on asking after its first question (no `|| exit`) still parks on the first one.
    const open = questionOf(this.messages.get(id)!, token);
    const asks = open === null || open.step === (question.step ?? null);
    const change = { id, before: run.stored.status, lease: null, question: { ...keptQuestion(question, token, now), deadline_seconds: deadlineSeconds } };
    return { answer: { ok: true, id, token }, change: asks ? change : null };
  }

  /** `machines`: the machine of each connected runner (by runnerOf). */
  report(machines: ReadonlyMap<string, string>): WorkReport {
    return workReport(this.messages, this.policies.policy(), machines);
  }
}
