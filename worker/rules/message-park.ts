// A message a person decides, as pure functions over its lease record (message-lease.ts): parked
// (by its runner, or posted as a question for a person alone), answered, resumed, or retried after
// it failed. Every status change goes through the lifecycle table (message-lifecycle.ts).
import type { OnDeadline, ResumeOutcome } from "../wire/enums.ts";
import type { MessageLease } from "./message-lease.ts";
import { enter, refusalOf } from "./message-lifecycle.ts";

/**
 * Gives the lease up while a person decides. With `deadlineMs`, the deadline's action (fail unless
 * said otherwise) happens if nobody answers by then.
 */
export function park(m: MessageLease, now: number, deadlineMs: number | null = null, onDeadline: OnDeadline | null = null): MessageLease {
  return enter(m, "park", parked(m, now, deadlineMs, onDeadline));
}

/** A question for a person alone (an MCP host's ask), parked the moment it is posted: nobody runs it. */
export function askPerson(m: MessageLease, now: number, deadlineMs: number | null, onDeadline: OnDeadline | null): MessageLease {
  return enter(m, "ask_person", parked(m, now, deadlineMs, onDeadline));
}

function parked(m: MessageLease, now: number, deadlineMs: number | null, onDeadline: OnDeadline | null): MessageLease {
  return {
    ...m, status: "parked", runner: null, capAt: null, expiresAt: deadlineMs === null ? null : now + deadlineMs,
    parkMs: deadlineMs, onDeadline: deadlineMs === null ? null : onDeadline,
  };
}

/** A person's answer to a parked message: a choice (approve, reject, or one the question offered) and optional text. */
export interface Answer {
  choice: string;
  text: string | null;
}

export type AnswerResult =
  | { ok: true; message: MessageLease }
  | { ok: false; code: "not_parked" | "outcome_unknown" | "bad_request"; message: string };

/**
 * Answers a parked message. Reject ends it (`rejected`, never run again); any other choice queues
 * it to run again with the answer. A question with choices takes one of them (or reject); one
 * without takes approve or reject. An effect whose outcome is unknown is answered with resume
 * --done/--redo instead, and a passed deadline has already decided.
 */
export function answer(m: MessageLease, reply: Answer, choices: readonly string[] | null, now: number): AnswerResult {
  if (refusalOf(m.status, "answer") !== null) return { ok: false, code: "not_parked", message: `message ${m.id} is ${m.status}: there is nothing to answer (answered already, or never asked)` };
  if (deadlineDecides(m, now)) {
    return { ok: false, code: "not_parked", message: `message ${m.id}'s deadline passed ${now - m.expiresAt!} ms ago; its deadline decided` };
  }
  if (m.pendingAsk !== null) {
    return { ok: false, code: "outcome_unknown", message: `message ${m.id} waits on step ${m.pendingAsk}, whose outcome is unknown: answer it with resume --done or --redo` };
  }
  const allowed = choices ?? ["approve"];
  if (reply.choice !== "reject" && !allowed.includes(reply.choice)) {
    return { ok: false, code: "bad_request", message: `message ${m.id} takes ${[...allowed, "reject"].map((c) => JSON.stringify(c)).join(", ")}, not ${JSON.stringify(reply.choice)}` };
  }
  const settled = { runner: null, expiresAt: null, capAt: null, retryAt: null, onDeadline: null, parkMs: null };
  return { ok: true, message: enter(m, "answer", { ...m, ...settled, status: reply.choice === "reject" ? "rejected" : m.forPerson ? "acknowledged" : "queued" }) };
}

/**
 * A failed message queued again by a person: a fresh set of tries (max attempts counts from here,
 * and nothing declined before counts on), while its attempt numbers go on, as its tokens do: the
 * next hand-out is attempt N + 1, so its output, steps and history stay its own.
 */
export function retry(m: MessageLease): { ok: true; message: MessageLease } | { ok: false; code: "bad_request" | "cancelled" | "not_parked"; message: string } {
  const refused = refusalOf(m.status, "retry");
  if (refused === "cancelled") return { ok: false, code: "cancelled", message: `message ${m.id} was cancelled, and a cancelled message is final: send it again to run it` };
  if (refused !== null) return { ok: false, code: "not_parked", message: `message ${m.id} is ${m.status}; only a failed message is retried` };
  if (m.forPerson) return { ok: false, code: "bad_request", message: `message ${m.id} was a question for a person and nothing runs it: ask again with a new one` };
  return { ok: true, message: enter(m, "retry", { ...m, status: "queued", retriedAfter: m.attempts, declined: 0, runner: null, expiresAt: null, capAt: null, retryAt: null, pendingAsk: null }) };
}

export type ResumeResult =
  | { ok: true; message: MessageLease }
  | { ok: false; code: "not_parked" | "outcome_unknown" | "bad_request"; message: string };

/**
 * Queues a parked message again; it is handed out with attempt + 1 and a new token. A park deadline
 * that has passed, by now, has failed it. A message parked because an effect's outcome is unknown
 * is resumed only with the person's answer for it (`outcome`: it happened, or run it again).
 */
export function resume(m: MessageLease, now: number, outcome: ResumeOutcome | null = null): ResumeResult {
  if (refusalOf(m.status, "resume") !== null) return { ok: false, code: "not_parked", message: `message ${m.id} is ${m.status}, not parked` };
  if (m.forPerson) return { ok: false, code: "bad_request", message: `message ${m.id} is a question for a person and nothing runs it: answer it with approve, answer or reject` };
  if (deadlineDecides(m, now)) {
    return { ok: false, code: "not_parked", message: `message ${m.id}'s park deadline passed ${now - m.expiresAt!} ms ago; it has failed` };
  }
  if (m.pendingAsk !== null && outcome === null) {
    return { ok: false, code: "outcome_unknown", message: `message ${m.id} waits for an answer on step ${m.pendingAsk}, whose outcome is unknown: say done (it happened) or redo (run it again)` };
  }
  if (m.pendingAsk === null && outcome !== null) {
    return { ok: false, code: "bad_request", message: `message ${m.id} has no step whose outcome is unknown` };
  }
  return { ok: true, message: enter(m, "resume", { ...m, status: "queued", runner: null, expiresAt: null, capAt: null, retryAt: null, pendingAsk: null, onDeadline: null, parkMs: null }) };
}

/**
 * Whether a parked message's passed deadline has decided it, so answers and resumes are refused:
 * not an escalating one (it only tells people again and keeps waiting for the answer), and not
 * one waiting on an effect whose outcome is unknown (only a person's done or redo settles that).
 */
function deadlineDecides(m: MessageLease, now: number): boolean {
  return m.expiresAt !== null && now >= m.expiresAt && m.onDeadline !== "escalate" && m.pendingAsk === null;
}
