// What a person is asked: a parked message's question and an effect's approval, with the checks
// several people deciding puts on both (rules/quorum.ts).
import * as z from "zod/mini";
import { canonicalJson, inexactNumber } from "./approvals.ts";
import { TOKEN_NAME } from "./token-scopes.ts";
import { ON_DEADLINE } from "./enums.ts";
import { LIMITS, QUESTION_TEXT, utf8Bytes } from "./limits.ts";
import { choice, stepName } from "./fields.ts";

/** What several people deciding asks of a question or an effect's approval (rules/quorum.ts), checked the same on both. */
function quorumChecks(what: string) {
  type Quorum = { choices?: string[]; needs?: number; reject_needs?: number; approvers?: string[] };
  return [
    // Counting approvals means every answer is approve or reject; a choice among several is one person's.
    z.refine<Quorum>((q) => ((q.needs ?? 1) === 1 && (q.reject_needs ?? 1) === 1) || q.choices === undefined, {
      error: `needs and reject_needs above 1 take ${what} without choices (approve or reject)`,
    }),
    // Otherwise the named approvers could never decide it and only its deadline would.
    z.refine<Quorum>((q) => q.approvers === undefined || Math.max(q.needs ?? 1, q.reject_needs ?? 1) <= q.approvers.length, {
      error: "needs and reject_needs are at most the number of approvers",
    }),
  ];
}

/**
 * What a person is asked when a message parks: a short text, optional choices (absent: approve or
 * reject), what the deadline does if nobody answers (with the park's deadline_seconds), and the
 * journal step the answer is recorded under, so a handler run again from the top gets it back.
 */
export const questionSchema = z.strictObject({
  // Read by a person on a page or a terminal: no control or format characters but newline and tab.
  text: z.string().check(z.minLength(1), z.maxLength(LIMITS.questionChars), z.regex(QUESTION_TEXT)),
  // Reject is always offered and always ends the message, so it is no choice of the question's.
  choices: z.optional(z.array(choice).check(z.minLength(1), z.maxLength(LIMITS.choices),
    z.refine((cs) => new Set(cs).size === cs.length && !cs.includes("reject"), { error: "choices are distinct, and reject is always offered (not one of them)" }))),
  on_deadline: z.optional(z.enum(ON_DEADLINE)),
  step: z.optional(stepName),
  // Several people (rules/quorum.ts): approvals from this many distinct tokens decide approve (default 1).
  needs: z.optional(z.int().check(z.gte(1), z.lte(LIMITS.approvers))),
  // Only these tokens (by name) may answer; absent: any token that may answer.
  approvers: z.optional(z.array(z.string().check(z.regex(TOKEN_NAME))).check(z.minLength(1), z.maxLength(LIMITS.approvers),
    z.refine((names) => new Set(names).size === names.length, { error: "approvers are distinct token names" }))),
  // Rejects from this many distinct tokens decide reject (default 1: any one reject decides).
  reject_needs: z.optional(z.int().check(z.gte(1), z.lte(LIMITS.approvers))),
}).check(z.refine((q) => q.on_deadline !== "approve" || q.choices === undefined || q.choices.includes("approve"), {
  // The deadline would answer a choice the question does not offer, and the run that asked would never get one of its own.
  error: "on_deadline approve needs approve among the choices (or no choices)",
}), ...quorumChecks("a question"));
export type Question = z.infer<typeof questionSchema>;

/**
 * An effect that needs a person's approval (on its intent): the question, the arguments the
 * person approves (JSON; shown as canonical JSON with its SHA-256, wire/approvals.ts), and the
 * choices besides reject (absent: approve or reject; with choices, approve is one of them) and what
 * the park's deadline does (never approve). The
 * coordinator records the intent only on an unspent permit for these very arguments; otherwise it
 * stores this question for the attempt and refuses with approval_required (rules/permits.ts).
 */
export const effectApprovalSchema = z.strictObject({
  question: z.string().check(z.minLength(1), z.maxLength(LIMITS.questionChars), z.regex(QUESTION_TEXT)),
  args: z.unknown().check(z.refine((a) => a !== undefined, { error: "approve.args is a JSON value" })),
  choices: z.optional(z.array(choice).check(z.minLength(1), z.maxLength(LIMITS.choices),
    z.refine((cs) => new Set(cs).size === cs.length && cs.includes("approve") && !cs.includes("reject"), { error: "choices are distinct and include approve; reject is always offered" }))),
  /** What the park's deadline does: fail (default), reject or escalate. Never approve: a deadline grants no permit. */
  on_deadline: z.optional(z.enum(["fail", "reject", "escalate"])),
  /** Several people, as on a question (rules/quorum.ts): the permit is granted once this many distinct tokens approve. */
  needs: questionSchema.shape.needs,
  approvers: questionSchema.shape.approvers,
  reject_needs: questionSchema.shape.reject_needs,
}).check(...quorumChecks("an approval"));
export type EffectApproval = z.infer<typeof effectApprovalSchema>;

/** Why an approval on a journal write is refused (not an effect's intent, arguments not JSON or over their budget), or null. */
export function approvalRefusal(kind: string, phase: string, approve: EffectApproval): { code: "bad_request" | "too_large"; message: string } | null {
  if (kind !== "effect" || phase !== "intent") return { code: "bad_request", message: "approve goes with an effect's intent" };
  let canonical: string;
  try {
    canonical = canonicalJson(approve.args);
  } catch (err) {
    return { code: "bad_request", message: (err as Error).message };
  }
  const inexact = inexactNumber(approve.args);
  if (inexact !== null) {
    return { code: "bad_request", message: `approve.args holds ${inexact}, beyond what a JSON number carries exactly (±2^53): send it as a string` };
  }
  return utf8Bytes(canonical) > LIMITS.approveArgsBytes ? { code: "too_large", message: `approve.args is canonical JSON of at most ${LIMITS.approveArgsBytes} bytes` } : null;
}
