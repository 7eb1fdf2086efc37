// A run's own writes beside its reply (./write.ts): a step or an effect's intent or outcome, a
// heartbeat, a question asked over HTTP (`baton ask`), an upload's reserve or stage. Each is decided
// at the message's current token by this object's clock over the rows it touches (read by the
// object, objects/message-leases.ts), as an answer and the change the plan stores. Pure: nothing
// here reads storage, draws randomness or sends.
import { checkMessageWrite, extendRun, type MessageLease, type MessagePolicy } from "../message-lease.ts";
import { commitRefusal, decideReserve, type BlobBudget, type BlobRow } from "../blob-ledger.ts";
import {
  decideStepWrite, idempotencyKey, legacyIdempotencyKey, openEffectOf, pendingAsk, questionStepRefusal, runWriteRefusal,
  type BlobRef, type JournalUsage, type StepRecord, type StepWrite,
} from "../step-journal.ts";
import type { ErrorCode } from "../../wire/error-codes.ts";
import type { Question } from "../../wire/protocol.ts";
import { keptQuestion, type KeptQuestion } from "./kept-question.ts";
import { decidePermit, type Permit } from "../permits.ts";
import type { ChangeOf, MessageChange } from "./message-change.ts";
import { stepValueJson } from "../message-json.ts";

/** Who makes a write for a running message: a connection (its runner id), or an HTTP caller whose run key matched the run's or not. */
export type RunWriter = { runner: string } | { runKeyMatches: boolean };

/** A refused write, with the HTTP status it answers with; `expired`: the run deadline had passed. */
export interface Refusal {
  ok: false;
  status: 400 | 403 | 404 | 409 | 413 | 500;
  code: ErrorCode;
  message: string;
  expired: boolean;
}

export const REFUSAL_STATUS: Partial<Record<ErrorCode, Refusal["status"]>> = {
  unknown_message: 404, not_your_message: 403, stale_token: 409, message_not_running: 409, cancelled: 409, too_large: 413, bad_request: 400, effect_in_progress: 409,
  outcome_unknown: 409, question_open: 409, approval_required: 409,
};

export type StepAnswer =
  | {
    ok: true; id: number; token: number; name: string; status: "intent" | "done"; duplicate: boolean; value: unknown; blob: BlobRef | null;
    idempotency_key?: string;
  }
  | Refusal;
export type HeartbeatAnswer = { ok: true; id: number; token: number; expires_at: number | null } | Refusal;
export type AskAnswer = { ok: true; id: number; token: number } | Refusal;
export type BlobReserve = { ok: true; blob: string; r2Key: string; token: number } | Refusal;
export type StageAnswer = { ok: true } | Refusal;

/** One of these writes decided: its answer, and the change the plan stores (null: nothing). */
export interface RunWriteDecision<T> {
  answer: T;
  change: MessageChange | null;
}

/** The journal rows a write about the journal reads: the open intents, and the record under the name it writes or asks under. */
export interface JournalRows {
  openIntents: readonly Pick<StepRecord, "name" | "kind" | "status" | "onUnknown" | "token">[];
  /** The record under the write's name (a step's, or the name a question's answer would be kept under); null: none. */
  record: StepRecord | null;
}

/** A step write's rows: the journal's size, the blob it names, and the effect key kept or the account it would be minted for (`openIntents`: read for an effect only). */
export interface StepRows extends JournalRows {
  usage: JournalUsage;
  blob: BlobRow | null;
  /** The key kept with the effect's first intent (null: none kept). */
  keptKey: string | null;
  /** Whose effects' keys this object hands out (null until it knows its account). */
  keys: { tag: string; agent: string } | null;
  /** The effect's permit, read only for an intent that needs approval (null: none, or not read). */
  permit: Permit | null;
}

/** What an upload's reserve reads: the message's blobs, and the id and R2 key drawn for a new one. */
export interface ReserveRows {
  blobs: readonly BlobRow[];
  fresh: { blob: string; r2Key: string };
}

/** A run's write over the rows it touches (`lease`: the message's, null when there is none). */
export type RunWrite = { id: number; token: number; writer: RunWriter; lease: MessageLease | null } & (
  | { kind: "step"; step: StepWrite; rows: StepRows }
  | { kind: "heartbeat"; details: unknown }
  | { kind: "ask"; question: Question; deadlineSeconds: number | null; open: KeptQuestion | null; rows: JournalRows }
  | { kind: "reserve"; bytes: number; rows: ReserveRows; budget: BlobBudget }
  | { kind: "stage"; blob: string; stored: boolean; row: BlobRow | null }
);

const refusal = (code: ErrorCode, message: string, expired = false): Refusal => ({ ok: false, status: REFUSAL_STATUS[code] ?? 409, code, message, expired });

/** The token check of every run write, at `now`; a run key stands for the runner it was handed to. */
export function checkRun(m: MessageLease | null, id: number, token: number, writer: RunWriter, now: number): { ok: true; lease: MessageLease } | Refusal {
  if (m === null) return { ok: false, status: 404, code: "unknown_message", message: `no message ${id}`, expired: false };
  const runner = "runner" in writer ? writer.runner : writer.runKeyMatches ? (m.runner ?? "") : "(wrong run key)";
  const verdict = checkMessageWrite(m, token, runner, now);
  if (verdict.ok) return { ok: true, lease: m };
  const expired = m.status === "running" && m.expiresAt !== null && now >= m.expiresAt;
  return refusal(verdict.code, verdict.message, expired);
}

/**
 * Why this attempt may not ask a question now, or null: inside an effect it could never be
 * answered (the message would wait on the effect's outcome), and its answer must be kept under a
 * name nothing else holds, or the next attempt would get that record instead of the answer.
 */
export function questionRefusal(rows: JournalRows, token: number, step: string | null): { code: "effect_in_progress" | "bad_request"; message: string } | null {
  const inside = openEffectOf(rows.openIntents, token);
  if (inside !== null) {
    return {
      code: "effect_in_progress",
      message: `effect "${inside}" of this attempt began and its outcome is not recorded: a question asked inside an effect could never be answered; ask before the effect or after it`,
    };
  }
  const taken = step === null ? null : questionStepRefusal(step, rows.record);
  return taken === null ? null : { code: "bad_request", message: taken };
}

/** A staged blob this token may commit, with its size, or why not. */
export function committable(row: BlobRow | null, blob: string, token: number): { blob: BlobRef } | { refusal: string } {
  const why = commitRefusal(row, token);
  return why === null ? { blob: { id: blob, bytes: row!.bytes } } : { refusal: `blob ${blob}: ${why}` };
}

/** The open intents of a journal once `record` is stored: an intent keeps its place (or joins the end), an outcome closes it. */
function openAfter(open: JournalRows["openIntents"], record: Omit<StepRecord, "at">): Pick<StepRecord, "name" | "kind" | "status" | "onUnknown">[] {
  const rest = open.map((r) => ({ name: r.name, kind: "effect" as const, status: "intent" as const, onUnknown: r.name === record.name ? record.onUnknown : r.onUnknown }));
  if (record.status !== "intent") return rest.filter((r) => r.name !== record.name);
  return rest.some((r) => r.name === record.name) ? rest : [...rest, { name: record.name, kind: "effect", status: "intent", onUnknown: record.onUnknown }];
}

/**
 * The key an effect hands to external APIs: the one kept with its first intent, else minted now
 * (and kept with this write). An intent the previous release recorded (kept with no key) keeps the
 * key that release handed out, so a retry after an upgrade is still a retry to the API.
 */
export function effectKeyOf(id: number, name: string, rows: Pick<StepRows, "keptKey" | "keys" | "record">): { key: string; minted: boolean } | null {
  if (rows.keptKey !== null) return { key: rows.keptKey, minted: false };
  if (rows.keys === null) return null;
  const { tag, agent } = rows.keys;
  return { key: rows.record?.status === "intent" ? legacyIdempotencyKey(agent, id, name) : idempotencyKey(tag, agent, id, name), minted: true };
}

/**
 * A journal write decided (rules/step-journal.ts decideStepWrite): a result, or an effect's intent
 * or outcome, under the token just checked. This is the one place an effect's intent is decided.
 */
export function decideJournalWrite(lease: MessageLease, token: number, write: StepWrite, rows: StepRows, budget: JournalUsage) {
  return decideStepWrite(rows.record, write, { attempt: lease.attempts, token }, rows.usage, budget);
}

/**
 * A step's result, or an effect's intent or outcome, as a change for the plan. An effect whose
 * policy is to ask marks the message while its intent is open, so an attempt that ends before the
 * outcome parks the message for a person.
 */
export function planStep(w: Extract<RunWrite, { kind: "step" }>, now: number, budget: JournalUsage): RunWriteDecision<StepAnswer> {
  const run = checkRun(w.lease, w.id, w.token, w.writer, now);
  if (!run.ok) return { answer: run, change: null };
  const { step: write, rows, id, token } = w;
  const reserved = write.kind === "answer" ? "a run never writes a person's answer" : runWriteRefusal(write.name);
  if (reserved !== null) return { answer: refusal("bad_request", reserved), change: null };
  let decision = decideJournalWrite(run.lease, token, write, rows, budget);
  if (decision.action === "record" && write.blob) {
    // Checked only for a write that records: a repeated write of a done step stays a duplicate.
    const blob = committable(rows.blob, write.blob.id, token);
    if ("refusal" in blob) return { answer: refusal("bad_request", blob.refusal), change: null };
    decision = { ...decision, record: { ...decision.record, blob: blob.blob } };
  }
  if (decision.action === "refuse") return { answer: { ...refusal(decision.code, decision.message), status: REFUSAL_STATUS[decision.code] ?? 400 }, change: null };
  // An intent that needs approval is recorded only on a permit it spends (../permits.ts); else the coordinator asks, and stores its question.
  const permit = decision.action === "record" && write.approve ? decidePermit(rows.permit, write.name, write.approve, token, now) : null;
  if (permit?.action === "ask") {
    return { answer: refusal("approval_required", permit.message), change: { kind: "ask", id, before: run.lease.status, lease: null, question: permit.question } };
  }
  const record = decision.record;
  const recorded = decision.action === "record";
  const asking = recorded && record.kind === "effect" ? pendingAsk(openAfter(rows.openIntents, record)) : run.lease.pendingAsk;
  const key = record.kind === "effect" ? effectKeyOf(id, record.name, rows) : null;
  const change: ChangeOf<"step"> = {
    kind: "step", id, before: run.lease.status, lease: null, journal: recorded ? { record, existing: rows.record } : null,
    keepKey: key?.minted ? { name: record.name, key: key.key } : null, pendingAsk: asking !== run.lease.pendingAsk ? { step: asking } : null,
    spend: permit && { effect: permit.effect, token: permit.token, at: permit.at }, commitBlob: recorded && record.blob ? record.blob.id : null,
  };
  const value = record.value === null ? { ok: true as const, value: null } : stepValueJson.read(record.value);
  // Only a stored record's text can fail to parse (a write's own value was parsed from its frame): a corrupt row, named, never replayed as another value.
  if (!value.ok) return { answer: { ok: false, status: 500, code: "internal", message: `step ${record.name} of message ${id}: ${value.problem}`, expired: false }, change: null };
  return {
    answer: {
      ok: true, id, token, name: record.name, status: record.status, duplicate: decision.action === "duplicate",
      value: value.value, blob: record.blob, ...(key === null ? {} : { idempotency_key: key.key }),
    },
    change: recorded || change.keepKey !== null ? change : null,
  };
}

/** The run is alive: its deadline moves on by the heartbeat timeout (never past the run timeout), its details kept as progress. */
export function planHeartbeat(w: Extract<RunWrite, { kind: "heartbeat" }>, policy: MessagePolicy, now: number): RunWriteDecision<HeartbeatAnswer> {
  const run = checkRun(w.lease, w.id, w.token, w.writer, now);
  if (!run.ok) return { answer: run, change: null };
  const next = extendRun(run.lease, now, policy);
  return {
    answer: { ok: true, id: w.id, token: w.token, expires_at: next.expiresAt },
    change: { kind: "heartbeat", id: w.id, before: run.lease.status, lease: null, expiresAt: next.expiresAt, progress: w.details === undefined ? null : JSON.stringify(w.details) },
  };
}

/** The running attempt's question (`baton ask`), a change its park then carries; a run that asks again after its first still parks on the first. */
export function planAsk(w: Extract<RunWrite, { kind: "ask" }>, now: number): RunWriteDecision<AskAnswer> {
  const run = checkRun(w.lease, w.id, w.token, w.writer, now);
  if (!run.ok) return { answer: run, change: null };
  const refused = questionRefusal(w.rows, w.token, w.question.step ?? null);
  if (refused !== null) return { answer: { ...refusal(refused.code, refused.message), status: REFUSAL_STATUS[refused.code] ?? 400 }, change: null };
  const asks = w.open === null || w.open.step === (w.question.step ?? null);
  const change: MessageChange = { kind: "ask", id: w.id, before: run.lease.status, lease: null, question: { ...keptQuestion(w.question, w.token, now), deadline_seconds: w.deadlineSeconds } };
  return { answer: { ok: true, id: w.id, token: w.token }, change: asks ? change : null };
}

/**
 * Room for one upload of the running attempt: the R2 key it may be stored under, or a refusal.
 * Uploads of earlier attempts that nothing committed go first, whatever the verdict: only their own
 * token could commit them.
 */
export function planReserve(w: Extract<RunWrite, { kind: "reserve" }>, now: number): RunWriteDecision<BlobReserve> {
  const run = checkRun(w.lease, w.id, w.token, w.writer, now);
  if (!run.ok) return { answer: run, change: null };
  const kept = w.rows.blobs.filter((b) => b.token >= w.token || b.state === "committed");
  const change: ChangeOf<"reserve"> = { kind: "reserve", id: w.id, before: run.lease.status, lease: null, dropBefore: w.token, reserve: null };
  const room = decideReserve(kept, w.bytes, w.budget);
  if (!room.ok) return { answer: { ok: false, status: 413, code: room.code, message: room.message, expired: false }, change };
  return {
    answer: { ok: true, blob: w.rows.fresh.blob, r2Key: w.rows.fresh.r2Key, token: w.token },
    change: { ...change, reserve: { blob: w.rows.fresh.blob, token: w.token, bytes: w.bytes } },
  };
}

/** The upload is stored: staged under its token, or discarded (and refused) when the run ended meanwhile or the upload failed. */
export function planStage(w: Extract<RunWrite, { kind: "stage" }>, now: number): RunWriteDecision<StageAnswer> {
  const row = w.row;
  if (!row || row.token !== w.token || row.state !== "uploading" || w.lease === null) {
    return { answer: refusal("bad_request", `blob ${w.blob} is not being uploaded`), change: null };
  }
  const run = w.stored ? checkRun(w.lease, w.id, w.token, w.writer, now) : null;
  const ok = run !== null && run.ok;
  return {
    answer: ok ? { ok: true } : run ?? refusal("bad_request", "the upload failed"),
    change: { kind: "stage", id: w.id, before: w.lease.status, lease: null, blob: w.blob, staged: ok },
  };
}
