// A message's step journal as pure rules: what a successor replays instead of re-running. A step
// is recorded once, under the message token current at the write; an effect records its intent
// before it runs and its outcome after, so an intent without an outcome means the outcome is
// unknown and a policy (or a person) decides, never a silent second run.
//
//   step:    (none) ──done──▶ done
//   effect:  (none) ──intent──▶ intent ──done──▶ done
//                                  └─ attempt ends ─▶ unknown: retry (same key) | ask (park for a person)
//   answer:  (none) ──a person (or a deadline) answers a question──▶ done   (never written by a runner)

import type { ResumeOutcome } from "../wire/enums.ts";
import type { OnUnknown } from "../wire/step-keys.ts";
import type { ApprovalAsk } from "./permits.ts";

export { accountTag, idempotencyKey, legacyIdempotencyKey, unknownOutcomeReason, type OnUnknown } from "../wire/step-keys.ts";

/** A step or an effect is written by the run; an answer only by the answer path (a person, or a deadline on their behalf). */
export type StepKind = "step" | "effect" | "answer";
export type StepStatus = "intent" | "done";

export interface StepRecord {
  name: string;
  kind: StepKind;
  status: StepStatus;
  /** JSON text of the result (null for an intent, or when the result is a blob). */
  value: string | null;
  /** A result too large to keep inline: the R2 blob holding its JSON text. */
  blob: BlobRef | null;
  onUnknown: OnUnknown | null;
  /** The attempt and token the record was written under. */
  attempt: number;
  token: number;
  at: number;
}

export interface BlobRef {
  id: string;
  bytes: number;
}

export interface StepWrite {
  name: string;
  kind: StepKind;
  phase: StepStatus;
  value: string | null;
  /** A staged blob the write commits as its result, instead of an inline value (checked by the caller). */
  blob?: BlobRef | null;
  onUnknown: OnUnknown | null;
  /** An effect's intent that needs a person's approval (./permits.ts decides it after this journal's rules). */
  approve?: ApprovalAsk | null;
}

export interface JournalBudget {
  steps: number;
  bytes: number;
}

export interface JournalUsage {
  steps: number;
  bytes: number;
}

export type StepDecision =
  | { action: "record"; record: Omit<StepRecord, "at"> }
  /** Already done: the stored record stands, the write changes nothing. */
  | { action: "duplicate"; record: StepRecord }
  | { action: "refuse"; code: "bad_request" | "too_large" | "effect_in_progress"; message: string };

/**
 * Decides one journal write of a message attempt whose token was already checked. A done record is
 * final: writing it again (or an intent after it) changes nothing. An intent is written once per
 * attempt: a second one under the same token is refused. An effect is a step of its own
 * kind under its name; a step and an effect cannot share a name. The journal's size is bounded in
 * records and bytes, so no write can make the message cost more than its budget.
 */
export function decideStepWrite(
  existing: StepRecord | null, write: StepWrite, at: { attempt: number; token: number }, usage: JournalUsage, budget: JournalBudget,
): StepDecision {
  if (existing && existing.kind !== write.kind) {
    return { action: "refuse", code: "bad_request", message: `"${write.name}" is recorded as ${KIND_NAMES[existing.kind]}, not as ${KIND_NAMES[write.kind]}` };
  }
  if (existing?.status === "done") return { action: "duplicate", record: existing };
  if (existing?.status === "intent" && write.phase === "intent" && existing.token === at.token) {
    // Two calls of one effect in one attempt (Promise.all, a retry wrapper): the first may have acted.
    return { action: "refuse", code: "effect_in_progress", message: `effect "${write.name}" already began in this attempt and its outcome is not recorded; it does not run twice` };
  }
  if (write.kind !== "effect" && write.phase === "intent") {
    return { action: "refuse", code: "bad_request", message: "a step records only its result; intents are for effects" };
  }
  const blob = write.phase === "done" ? write.blob ?? null : null;
  if (write.blob && write.phase !== "done") return { action: "refuse", code: "bad_request", message: "only a result (phase done) may be a blob" };
  if (blob && write.value !== null) return { action: "refuse", code: "bad_request", message: "a result is a value or a blob, not both" };
  const added = utf8Bytes(write.value) - utf8Bytes(existing?.value ?? null);
  if (!existing && usage.steps >= budget.steps) {
    return { action: "refuse", code: "too_large", message: `a message records at most ${budget.steps} steps` };
  }
  if (usage.bytes + added > budget.bytes) {
    return { action: "refuse", code: "too_large", message: `a message's steps hold at most ${budget.bytes} bytes together` };
  }
  return {
    action: "record",
    record: {
      name: write.name, kind: write.kind, status: write.phase, value: write.phase === "done" && !blob ? write.value ?? "null" : null, blob,
      onUnknown: write.kind === "effect" ? write.onUnknown ?? "ask" : null, attempt: at.attempt, token: at.token,
    },
  };
}

const KIND_NAMES: Record<StepKind, string> = { step: "a step", effect: "an effect", answer: "a person's answer" };

/** Journal names the clients give a question's answer by default (`ask:1`, `ask:<hash>`): a run never writes one. */
export const ANSWER_PREFIX = "ask:";

/**
 * Why a run may not write a step or an effect under `name`, or null when it may. Answers are kept
 * in the journal as records of their own kind that only the answer path writes; the names the
 * clients give them are kept free of run writes too, so no run can stand in for a person.
 */
export function runWriteRefusal(name: string): string | null {
  return name.startsWith(ANSWER_PREFIX) ? `"${name}": names starting with ${ANSWER_PREFIX} are kept for a person's answers; a step or effect needs another name` : null;
}

/**
 * Why a question whose answer is to be kept under `step` cannot be asked, or null when it can:
 * the name already holds a record (a run's step or effect, or an earlier answer), which the answer
 * could never replace, so the next attempt would get that record instead of the person's answer.
 */
export function questionStepRefusal(step: string, existing: Pick<StepRecord, "kind"> | null): string | null {
  if (existing === null) return null;
  return `the answer to this question would be kept under "${step}", which is recorded as ${KIND_NAMES[existing.kind]} already: an ask needs a name of its own`;
}

/**
 * The effect this attempt (`token`) began and has not finished, if any: a question asked now could
 * never be answered (ending the attempt leaves the message waiting on the effect's outcome), so
 * it is refused.
 */
export function openEffectOf(journal: readonly Pick<StepRecord, "kind" | "status" | "token" | "name">[], token: number): string | null {
  return journal.find((r) => r.kind === "effect" && r.status === "intent" && r.token === token)?.name ?? null;
}

function utf8Bytes(text: string | null): number {
  return text === null ? 0 : new TextEncoder().encode(text).byteLength;
}

/**
 * The effect a person must answer for if this attempt ends now: the first (in journal order) whose
 * intent is recorded, whose outcome is not, and whose policy is to ask. The agent object keeps it on
 * the message, so ending the attempt parks the message instead of running it again; with several,
 * a person answers them one at a time.
 */
export function pendingAsk(journal: readonly Pick<StepRecord, "kind" | "status" | "onUnknown" | "name">[]): string | null {
  return journal.find((r) => r.kind === "effect" && r.status === "intent" && r.onUnknown === "ask")?.name ?? null;
}

/** What a person decides for an effect whose outcome is unknown: it happened (done), or run it again (redo). */
export type UnknownOutcome = ResumeOutcome;
