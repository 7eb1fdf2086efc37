// A person's input about one message (answer, resume, retry), and a deadline that answers for a
// person: the verdict, and the message change it makes (lease, answer record, journal record,
// resume input). Pure: the snapshot reads the message, its question and the journal records the
// input may write over (TargetMessage); the object stores what this returns.
import { enter } from "../message-lifecycle.ts";
import { answer, resume, retry, type Answer, type MessageLease } from "../message-lease.ts";
import { decideStepWrite, pendingAsk, unknownOutcomeReason, type JournalUsage, type StepRecord, type UnknownOutcome } from "../step-journal.ts";
import { castVote, countsPeople, type Quorum } from "../quorum.ts";
import type { Canceller, MessageChange } from "./types.ts";
import type { ChangeOf, JournalWrite } from "./message-change.ts";
import { permitGranted, type ApprovalAsked } from "../permits.ts";

/** What a person's input about one message reads of it. */
export interface TargetMessage {
  lease: MessageLease;
  /** The question it asks (of whichever attempt), or null. */
  question: { text: string; choices: string[] | null; step: string | null; approve?: ApprovalAsked | null; token?: number; quorum?: Quorum } | null;
  /** Why its latest attempt failed (a retry keeps it with the answer). */
  error: string | null;
  /** Journal records an answer may write over, by name: its question's step and the effect it waits on. */
  entries: ReadonlyMap<string, StepRecord>;
  /** The effects of its journal with an intent and no outcome, in journal order. */
  openIntents: readonly Pick<StepRecord, "name" | "kind" | "status" | "onUnknown">[];
  usage: JournalUsage;
}

export type PersonRefusal = {
  ok: false; status: 400 | 403 | 404 | 409 | 413;
  code: "not_found" | "not_parked" | "outcome_unknown" | "bad_request" | "too_large" | "question_open" | "cancelled" | "forbidden"; message: string;
};
export type PersonVerdict = { ok: true; change: MessageChange } | PersonRefusal;

/** The journal's budget, as the run's writes have it. */
export interface Budget {
  steps: number;
  bytes: number;
}

/** A deadline that answered for a person. */
export const DEADLINE: Canceller = { account: "baton", token: "deadline", via: "deadline" };

const statusOf = (code: string): 400 | 409 => (code === "bad_request" ? 400 : 409);

/** What a question for a person ends with as its reply: the answer, who gave it and when (JSON). */
function personReply(reply: Answer, by: Canceller, now: number): string {
  return JSON.stringify({ choice: reply.choice, text: reply.text, by: { account: by.account, token: by.token, via: by.via }, at: now });
}

/** A parked message answered: its question closed, and a queued one carries the answer to its next attempt; the rest laid over. */
function settled(t: TargetMessage, after: MessageLease, reply: Answer, withChoice: boolean, over: Partial<ChangeOf<"settled">> = {}): ChangeOf<"settled"> {
  return {
    kind: "settled", id: t.lease.id, before: t.lease.status, lease: after, journal: null, forgetStep: null, answer: null, personReply: null, failure: null, grant: null,
    resume: after.status === "queued" ? { input: reply.text, choice: withChoice ? reply.choice : null } : null, ...over,
  };
}

/**
 * The answer in the journal under the question's step, as a record of kind answer that no run can
 * write (its token is the parked attempt's); a refusal when the journal is full.
 */
function answerStep(t: TargetMessage, step: string, reply: Answer, by: Canceller, budget: Budget, now: number): JournalWrite | PersonRefusal | null {
  const existing = t.entries.get(step) ?? null;
  const value = JSON.stringify({ choice: reply.choice, text: reply.text, by: { account: by.account, token: by.token, via: by.via }, at: now });
  const decision = decideStepWrite(existing, { name: step, kind: "answer", phase: "done", value, onUnknown: null }, { attempt: t.lease.attempts, token: t.lease.token }, t.usage, budget);
  if (decision.action === "refuse") return journalRefusal(decision.code, decision.message);
  return decision.action === "record" ? { record: decision.record, existing } : null;
}

function journalRefusal(code: string, message: string): PersonRefusal {
  return { ok: false, status: code === "too_large" ? 413 : 400, code: code === "too_large" ? "too_large" : "bad_request", message };
}

const refused = (x: unknown): x is PersonRefusal => typeof x === "object" && x !== null && "ok" in x;

/**
 * A person's answer to a parked message (approve, reject, or one of the question's choices), kept
 * with who gave it. Reject ends the message; any other answer queues it with the answer as its
 * resume input and choice, and in the journal under the question's step, so a handler run again
 * from the top gets it from `ask`.
 */
export function personAnswer(t: TargetMessage | null, id: number, reply: Answer, by: Canceller, budget: Budget, now: number): PersonVerdict {
  if (t === null) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
  const asked = t.question;
  const result = answer(t.lease, reply, asked?.choices ?? null, now);
  if (!result.ok) return { ...result, status: statusOf(result.code) };
  if (asked?.quorum !== undefined && countsPeople(asked.quorum)) {
    const vote = castVote(asked.quorum, { token: by.token, account: by.account, via: by.via, choice: reply.choice, text: reply.text, at: now });
    if (!vote.ok) return { ok: false, status: 403, code: "forbidden", message: vote.message };
    const record = { choice: reply.choice, text: reply.text, question: asked.text, by };
    if (vote.outcome.state === "pending") {
      // Kept with the question (and in its record); the message stays parked until enough people decide.
      return { ok: true, change: { kind: "votes", id, before: t.lease.status, lease: null, votes: vote.votes, answer: record } };
    }
    // Only the answer's own choice can cross its own count, so this answer decides with its choice.
  }
  return decidedAnswer(t, asked, result.message, reply, by, budget, now);
}

/** The answer that decided a parked message's question: it settles the message as one person's answer always did. */
function decidedAnswer(
  t: TargetMessage, asked: TargetMessage["question"], after: MessageLease, reply: Answer, by: Canceller, budget: Budget, now: number,
): PersonVerdict {
  const result = { message: after };
  // An effect's approval is kept as its permit, not in the journal, so a changed action can be asked again.
  const permit = result.message.status === "queued" && asked !== null ? permitGranted({ approve: asked.approve ?? null, token: asked.token ?? t.lease.token }, reply.choice, by, now) : null;
  const journal = asked?.step && result.message.status === "queued" && permit === null ? answerStep(t, asked.step, reply, by, budget, now) : null;
  if (refused(journal)) return journal;
  return {
    ok: true,
    change: settled(t, result.message, reply, true, {
      journal, grant: permit, answer: { choice: reply.choice, text: reply.text, question: asked?.text ?? null, by },
      personReply: result.message.forPerson ? personReply(reply, by, now) : null,
    }),
  };
}

/**
 * Queues a parked message again with the person's input; it is handed out with attempt + 1 and its
 * checkpoint by the same plan. A park deadline that passed before its alarm ran refuses the
 * resume; the same plan fails the message. Several effects may have been left unknown: each is
 * answered in turn, and the message stays parked until none is.
 */
export function personResume(
  t: TargetMessage | null, id: number, input: string | null, outcome: UnknownOutcome | null, by: Canceller, budget: Budget, now: number,
): PersonVerdict {
  if (t === null) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
  const result = resume(t.lease, now, outcome);
  if (!result.ok) return { ...result, status: statusOf(result.code) };
  const unknown = t.lease.pendingAsk;
  if (unknown === null && t.question !== null) {
    // A resume would lose the answer the run waits for, and it would only ask again.
    return { ok: false, status: 409, code: "question_open", message: `message ${id} asks "${t.question.text.slice(0, 200)}": answer it with approve, answer or reject` };
  }
  let journal: JournalWrite | null = null;
  if (unknown !== null && outcome === "done") {
    // The person's answer is the effect's outcome: recorded like any other, inside the journal's budget.
    const existing = t.entries.get(unknown) ?? null;
    const decision = decideStepWrite(existing, { name: unknown, kind: "effect", phase: "done", value: JSON.stringify(input), onUnknown: "ask" },
      { attempt: t.lease.attempts, token: t.lease.token }, t.usage, budget);
    if (decision.action === "refuse") return journalRefusal(decision.code, decision.message);
    if (decision.action === "record") journal = { record: decision.record, existing };
  }
  const forgetStep = unknown !== null && outcome === "redo" ? unknown : null;
  const answer = { choice: outcome ?? "resume", text: input, question: unknown === null ? t.question?.text ?? null : unknownOutcomeReason(unknown), by };
  if (unknown !== null) {
    const next = pendingAsk(t.openIntents.filter((r) => r.name !== unknown));
    if (next !== null) return { ok: true, change: { kind: "outcome", id, before: t.lease.status, lease: null, answer, journal, forgetStep, pendingAsk: next } };
  }
  return { ok: true, change: settled(t, result.message, { choice: "resume", text: input }, false, { journal, forgetStep, answer }) };
}

/** A failed message queued again by a person, with a fresh set of tries (its attempt numbers go on). */
export function personRetry(t: TargetMessage | null, id: number, by: Canceller): PersonVerdict {
  if (t === null) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
  const result = retry(t.lease);
  if (!result.ok) return { ok: false, status: 409, code: result.code === "bad_request" ? "not_parked" : result.code, message: result.message };
  return { ok: true, change: { kind: "retried", id, before: t.lease.status, lease: result.message, answer: { choice: "retry", text: null, question: t.error, by } } };
}

/**
 * A parked message whose deadline answered for the person (approve, reject): recorded as answered
 * by the deadline. When the answer cannot go into its journal (full), it fails instead, saying why:
 * without the answer the run would only ask again.
 */
export function deadlineAnswer(t: TargetMessage, after: MessageLease, choice: "approve" | "reject", budget: Budget, now: number): ChangeOf<"settled"> {
  const reply = { choice, text: null };
  const journal = t.question?.step && choice === "approve" ? answerStep(t, t.question.step, reply, DEADLINE, budget, now) : null;
  if (refused(journal)) {
    return settled(t, enter(t.lease, "deadline", { ...after, status: "failed" as const }), reply, false, { failure: `its deadline answered approve, but its journal is full: ${journal.message}` });
  }
  return settled(t, after, reply, true, {
    journal, answer: { choice, text: null, question: t.question?.text ?? null, by: DEADLINE },
    personReply: after.forPerson ? personReply(reply, DEADLINE, now) : null,
  });
}
