// A question that needs several people: each person's answer is a vote kept with the question
// until enough distinct people (token names; an OAuth caller is the token that signed it in,
// oauth-grants.ts personOf) decide it. Pure: the question and its votes in, the
// outcome out. `questionOutcome` is what everything else reads ("is it approved?"); a question
// without needs, reject_needs or approvers is decided by its first answer, as before.
import { personOf } from "./oauth-grants.ts";

/** One person's answer kept with an open question: who (the token's name), when, what. */
export interface Vote {
  token: string;
  account: string;
  via: string;
  choice: string;
  text: string | null;
  at: number;
}

/** What a question needs to be decided, and the votes it has so far. */
export interface Quorum {
  /** Approvals from this many distinct tokens decide approve. */
  needs: number;
  /** Rejects from this many distinct tokens decide reject. */
  rejectNeeds: number;
  /** Only these token names may answer (null: any token that may answer). */
  approvers: readonly string[] | null;
  votes: readonly Vote[];
}

export type QuestionOutcome =
  | { state: "pending"; approvals: number; rejections: number; needs: number; rejectNeeds: number; waitingFor: string[] | null }
  | { state: "approved"; by: Vote }
  | { state: "rejected"; by: Vote }
  /** One of the question's own choices (a question of one person). */
  | { state: "choice"; choice: string; by: Vote };

/** The quorum of a stored question (fields absent from questions kept before several people: one answer decides). */
export function quorumOf(q: { needs?: number | null; reject_needs?: number | null; approvers?: readonly string[] | null; votes?: readonly Vote[] | null }): Quorum {
  return { needs: q.needs ?? 1, rejectNeeds: q.reject_needs ?? 1, approvers: q.approvers ?? null, votes: q.votes ?? [] };
}

/** Whether a question needs more than one person's answer (or names who may answer). */
export const countsPeople = (q: Quorum): boolean => q.needs > 1 || q.rejectNeeds > 1 || q.approvers !== null;

/**
 * Whether the question is decided, and how: approved once `needs` distinct tokens approve, rejected
 * once `rejectNeeds` distinct tokens reject; a choice of the question's own decides at once. Each
 * token counts once, with its latest vote.
 */
export function questionOutcome(q: Quorum): QuestionOutcome {
  const latest = latestVotes(q.votes);
  const approving = latest.filter((v) => v.choice === "approve");
  const rejecting = latest.filter((v) => v.choice === "reject");
  const other = latest.find((v) => v.choice !== "approve" && v.choice !== "reject");
  if (rejecting.length >= q.rejectNeeds) return { state: "rejected", by: rejecting[rejecting.length - 1]! };
  if (other !== undefined) return { state: "choice", choice: other.choice, by: other };
  if (approving.length >= q.needs) return { state: "approved", by: approving[approving.length - 1]! };
  const answered = new Set(latest.map((v) => v.token));
  return {
    state: "pending", approvals: approving.length, rejections: rejecting.length, needs: q.needs, rejectNeeds: q.rejectNeeds,
    waitingFor: q.approvers === null ? null : q.approvers.filter((name) => !answered.has(name)),
  };
}

/** Each person's latest vote, in the order of those votes (a token and its OAuth grants are one person). */
export function latestVotes(votes: readonly Vote[]): Vote[] {
  const byPerson = new Map<string, Vote>();
  for (const v of votes) {
    byPerson.delete(personOf(v.token));
    byPerson.set(personOf(v.token), v);
  }
  return [...byPerson.values()];
}

export type VoteResult = { ok: true; votes: Vote[]; outcome: QuestionOutcome } | { ok: false; message: string };

/**
 * One person's answer as a vote: refused from a token the question does not name; the same token
 * answering again replaces its earlier vote (it counts once).
 */
export function castVote(q: Quorum, vote: Vote): VoteResult {
  if (q.approvers !== null && !q.approvers.includes(vote.token)) {
    return { ok: false, message: `token ${JSON.stringify(vote.token)} is not among this question's approvers (${q.approvers.join(", ")})` };
  }
  const votes = [...q.votes.filter((v) => personOf(v.token) !== personOf(vote.token)), vote];
  return { ok: true, votes, outcome: questionOutcome({ ...q, votes }) };
}
