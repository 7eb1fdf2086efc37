// The rules of a question several people decide (worker/rules/quorum.ts), over plain data.
import { describe, expect, it } from "vitest";
import { castVote, questionOutcome, quorumOf, type Quorum, type Vote } from "../../worker/rules/quorum.ts";

const vote = (token: string, choice: string, at = 1): Vote => ({ token, account: "dev", via: "cli", choice, text: null, at });
const two: Quorum = quorumOf({ needs: 2 });

function cast(q: Quorum, ...votes: Vote[]) {
  let current = q;
  let last: ReturnType<typeof castVote> | null = null;
  for (const v of votes) {
    last = castVote(current, v);
    if (!last.ok) return last;
    current = { ...current, votes: last.votes };
  }
  return last!;
}

describe("questions several people decide", () => {
  it("the same token approving twice counts once: still 1 of 2", () => {
    const r = cast(two, vote("alice", "approve", 1), vote("alice", "approve", 2));
    expect(r).toMatchObject({ ok: true, outcome: { state: "pending", approvals: 1, needs: 2 } });
  });

  it("two distinct tokens approving decide approve, by the second", () => {
    expect(cast(two, vote("alice", "approve"), vote("bob", "approve", 2))).toMatchObject({ ok: true, outcome: { state: "approved", by: { token: "bob" } } });
  });

  it("any one reject decides by default, even after an approval", () => {
    expect(cast(two, vote("alice", "approve"), vote("bob", "reject"))).toMatchObject({ outcome: { state: "rejected", by: { token: "bob" } } });
  });

  it("with reject_needs 2, one reject waits and two distinct rejects decide", () => {
    const q = quorumOf({ needs: 2, reject_needs: 2 });
    expect(cast(q, vote("alice", "reject"))).toMatchObject({ outcome: { state: "pending", rejections: 1, rejectNeeds: 2 } });
    expect(cast(q, vote("alice", "reject"), vote("alice", "reject"))).toMatchObject({ outcome: { state: "pending", rejections: 1 } });
    expect(cast(q, vote("alice", "reject"), vote("bob", "reject"))).toMatchObject({ outcome: { state: "rejected" } });
  });

  it("a token that changes its answer counts once, with its latest", () => {
    const q = quorumOf({ needs: 2, reject_needs: 2 });
    expect(cast(q, vote("alice", "reject"), vote("alice", "approve"), vote("bob", "approve"))).toMatchObject({ outcome: { state: "approved" } });
  });

  it("named approvers only: another token is refused, and those who have not answered are listed", () => {
    const q = quorumOf({ needs: 2, approvers: ["alice", "bob", "carol"] });
    expect(castVote(q, vote("mallory", "approve"))).toMatchObject({ ok: false, message: expect.stringMatching(/not among this question's approvers/) });
    expect(cast(q, vote("bob", "approve"))).toMatchObject({ outcome: { state: "pending", approvals: 1, waitingFor: ["alice", "carol"] } });
  });

  it("a question of one person is decided by its first answer, a choice of its own included", () => {
    expect(questionOutcome(quorumOf({ votes: [vote("alice", "ship")] }))).toMatchObject({ state: "choice", choice: "ship" });
    expect(questionOutcome(quorumOf({ votes: [vote("alice", "approve")] }))).toMatchObject({ state: "approved" });
    expect(questionOutcome(quorumOf({}))).toMatchObject({ state: "pending", approvals: 0, needs: 1 });
  });
});
