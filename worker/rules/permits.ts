// Approvals as one-use permits, pure. An effect that needs approval sends its question and
// arguments with its intent; a person's approval of that question becomes a permit bound to the
// message, the effect's name, the digest of the arguments' canonical JSON and the token of the
// attempt that asked. The intent is recorded only when it spends an unspent permit of the same
// effect and digest, from an attempt later than the one that asked (the message's current one:
// the token check ran first); otherwise the coordinator asks again. A permit is spent by the
// intent that uses it, so the effect runs on it at most once:
//
//   (none) ──person approves──▶ granted ──intent, same digest, current later token──▶ spent
//      ▲                           │ intent with other arguments: asks again (a new question)
//      └──── a new approval of the same effect replaces it ◀── spent: any further intent asks again
//
// A stale attempt never reaches this rule (its token is refused first, and nothing changes).
import { approvalAnswerStep, argsDigest, canonicalJson } from "../wire/approvals.ts";
import type { EffectApproval } from "../wire/protocol.ts";
import type { KeptQuestion } from "./plan/write.ts";

/** What an effect's intent asks to be approved: the question, and the arguments as canonical JSON with their digest. */
export interface ApprovalAsk {
  question: string;
  choices: string[] | null;
  onDeadline: "fail" | "reject" | "escalate" | null;
  /** Canonical JSON of the arguments (what a person is shown). */
  args: string;
  digest: string;
  /** Several people (rules/quorum.ts), as the question's own fields; absent: one approval grants. */
  quorum: Pick<KeptQuestion, "needs" | "reject_needs" | "approvers">;
}

/** A question's approval part, kept with the question: what approving it permits. */
export interface ApprovalAsked {
  effect: string;
  args: string;
  digest: string;
}

/** Who approved, from where. */
export interface PermitGrantor {
  account: string;
  token: string;
  via: string;
}

/** A stored permit for one effect of one message. */
export interface Permit {
  effect: string;
  digest: string;
  args: string;
  /** The token of the attempt that asked: only a later attempt may spend it. */
  askedToken: number;
  grantedAt: number;
  by: PermitGrantor;
  /** The token of the intent that spent it, and when (null: not spent). */
  spentToken: number | null;
  spentAt: number | null;
}

export type PermitRefusal = "none" | "other_args" | "spent" | "same_attempt";

export type PermitDecision =
  | { action: "spend"; effect: string; token: number; at: number }
  | { action: "ask"; reason: PermitRefusal; message: string; question: KeptQuestion };

/** An intent's approval as the rules read it; throws TypeError for arguments that are not JSON (the wire refused them already). */
export function approvalAsk(approve: EffectApproval): ApprovalAsk {
  const args = canonicalJson(approve.args);
  const quorum = {
    ...(approve.needs === undefined ? {} : { needs: approve.needs }),
    ...(approve.reject_needs === undefined ? {} : { reject_needs: approve.reject_needs }),
    ...(approve.approvers === undefined ? {} : { approvers: approve.approvers }),
  };
  return { question: approve.question, choices: approve.choices ?? null, onDeadline: approve.on_deadline ?? null, args, digest: argsDigest(args), quorum };
}

/**
 * Decides an effect's intent that needs approval, for the attempt of `token` (already checked to
 * be the message's current one) at `now`: spend the permit, or ask (again) with the question this
 * attempt then parks on. `permit`: the one stored for this message and effect, or null.
 */
export function decidePermit(permit: Permit | null, effect: string, ask: ApprovalAsk, token: number, now: number): PermitDecision {
  const refusal = permitRefusal(permit, ask.digest, token);
  if (refusal === null) return { action: "spend", effect, token, at: now };
  const question: KeptQuestion = {
    text: ask.question, choices: ask.choices, step: approvalAnswerStep(effect), on_deadline: ask.onDeadline, token, asked_at: now,
    approve: { effect, args: ask.args, digest: ask.digest }, ...ask.quorum,
  };
  return { action: "ask", reason: refusal, message: REFUSAL_TEXT[refusal](effect, ask.digest, permit), question };
}

function permitRefusal(permit: Permit | null, digest: string, token: number): PermitRefusal | null {
  if (permit === null) return "none";
  if (permit.digest !== digest) return "other_args";
  if (permit.spentToken !== null) return "spent";
  // The attempt that asked parked; only one handed the message afterwards holds a later token.
  if (token <= permit.askedToken) return "same_attempt";
  return null;
}

const REFUSAL_TEXT: Record<PermitRefusal, (effect: string, digest: string, p: Permit | null) => string> = {
  none: (e, d) => `effect "${e}" needs a person's approval of arguments sha256:${d}; asked, park and wait for the answer`,
  other_args: (e, d, p) => `effect "${e}" was approved for arguments sha256:${p!.digest}, not sha256:${d}; asked again, park and wait for the answer`,
  spent: (e, d, p) => `the approval of effect "${e}" (sha256:${d}) was spent by attempt token ${p!.spentToken}; asked again, park and wait for the answer`,
  same_attempt: (e) => `effect "${e}": the attempt that asked cannot spend its own approval; asked again`,
};

/**
 * The permit a person's answer grants, or null when it grants none. The one place that reads
 * "this question was approved": a question asked for an effect, answered approve. (A question
 * that needs several people calls this once their approvals are complete.)
 */
export function permitGranted(question: Pick<KeptQuestion, "approve" | "token"> | null, choice: string, by: PermitGrantor, now: number): Permit | null {
  const asked = question?.approve ?? null;
  if (asked === null || question === null || choice !== "approve") return null;
  return { effect: asked.effect, digest: asked.digest, args: asked.args, askedToken: question.token, grantedAt: now, by, spentToken: null, spentAt: null };
}
