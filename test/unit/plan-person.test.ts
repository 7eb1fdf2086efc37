// A person's input, and a deadline that answers for one (worker/rules/plan/person.ts).
import { describe, expect, it } from "vitest";
import { deadlineAnswer, personAnswer, personResume, personRetry, type TargetMessage } from "../../worker/rules/plan/person.ts";
import type { StepRecord } from "../../worker/rules/step-journal.ts";
import { message, NOW } from "./plan-fixtures.ts";

const BY = { account: "acct", token: "alice", via: "page" };
const BUDGET = { steps: 10, bytes: 10_000 };

function target(over: Partial<TargetMessage> = {}, lease: Partial<TargetMessage["lease"]> = {}): TargetMessage {
  return {
    lease: message(5, { status: "parked", attempts: 1, token: 3, ...lease }), question: null, error: null, entries: new Map(), openIntents: [], usage: { steps: 0, bytes: 0 },
    ...over,
  };
}

const ASKED = { question: { text: "ship it?", choices: ["yes", "no"], step: "ask:ship" } };
const intent = (name: string): StepRecord => ({ name, kind: "effect", status: "intent", value: null, blob: null, onUnknown: "ask", attempt: 1, token: 3, at: 0 });

describe("personAnswer", () => {
  const cases: { name: string; t: TargetMessage | null; choice: string; ok: boolean; status?: number; after?: string; journal?: boolean; code?: string }[] = [
    { name: "no message is 404", t: null, choice: "approve", ok: false, status: 404, code: "not_found" },
    { name: "approve queues a parked message with the answer as its resume input", t: target(), choice: "approve", ok: true, after: "queued", journal: false },
    { name: "reject ends it rejected", t: target(), choice: "reject", ok: true, after: "rejected", journal: false },
    { name: "a choice of its question queues it and records the answer under the question's step", t: target(ASKED), choice: "yes", ok: true, after: "queued", journal: true },
    { name: "a choice its question does not offer is 400", t: target(ASKED), choice: "maybe", ok: false, status: 400, code: "bad_request" },
    { name: "a message that is not parked is 409", t: target({}, { status: "running" }), choice: "approve", ok: false, status: 409, code: "not_parked" },
    { name: "a message waiting on an unknown effect takes resume --done/--redo instead", t: target({}, { pendingAsk: "pay" }), choice: "approve", ok: false, status: 409, code: "outcome_unknown" },
    { name: "a full journal refuses the answer", t: target({ ...ASKED, usage: { steps: 10, bytes: 0 } }), choice: "yes", ok: false, status: 413, code: "too_large" },
    { name: "a question for a person alone ends acknowledged, its reply the answer", t: target({}, { forPerson: true }), choice: "approve", ok: true, after: "acknowledged", journal: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const v = personAnswer(c.t, 5, { choice: c.choice, text: "go" }, BY, BUDGET, NOW);
      if (!v.ok) return expect([v.ok, v.status, v.code]).toEqual([c.ok, c.status, c.code]);
      if (v.change.kind !== "settled") throw new Error(`a decided answer settles its question, not ${v.change.kind}`);
      expect([v.ok, v.change.lease.status, v.change.journal !== null]).toEqual([c.ok, c.after, c.journal]);
      expect(v.change).toMatchObject({ answer: { choice: c.choice, text: "go", by: BY } });
      if (c.after === "queued") expect(v.change.resume).toEqual({ input: "go", choice: c.choice });
      if (c.after === "acknowledged") expect(JSON.parse(v.change.personReply!)).toMatchObject({ choice: "approve", by: BY, at: NOW });
    });
  }
});

describe("personAnswer of an effect's approval question", () => {
  const approve = { effect: "charge", args: '{"amount":500}', digest: "d".repeat(64) };
  const asked = target({ question: { text: "Charge $500?", choices: ["approve", "deny"], step: "ask:approve:charge", approve, token: 2 } });
  it("approve grants a permit bound to the effect, digest and asking token, and keeps nothing in the journal", () => {
    const v = personAnswer(asked, 5, { choice: "approve", text: null }, BY, BUDGET, NOW);
    expect(v.ok && v.change).toMatchObject({ kind: "settled", lease: { status: "queued" }, journal: null, grant: {
      effect: "charge", digest: approve.digest, args: approve.args, askedToken: 2, grantedAt: NOW, by: BY, spentToken: null, spentAt: null,
    } });
  });
  it("another choice grants none and is kept in the journal under the question's step", () => {
    const v = personAnswer(asked, 5, { choice: "deny", text: null }, BY, BUDGET, NOW);
    expect(v.ok && v.change).toMatchObject({ kind: "settled", grant: null, journal: { record: { name: "ask:approve:charge" } } });
  });
  it("reject grants none", () => {
    const v = personAnswer(asked, 5, { choice: "reject", text: null }, BY, BUDGET, NOW);
    expect(v.ok && v.change).toMatchObject({ kind: "settled", lease: { status: "rejected" }, grant: null });
  });
});

describe("personResume", () => {
  it("queues a parked message with the person's input", () => {
    const v = personResume(target(), 5, "more", null, BY, BUDGET, NOW);
    expect(v.ok && v.change).toMatchObject({ kind: "settled", lease: { status: "queued" }, resume: { input: "more", choice: null } });
  });

  it("refuses while a question waits for its answer", () => {
    expect(personResume(target(ASKED), 5, null, null, BY, BUDGET, NOW)).toMatchObject({ ok: false, code: "question_open", status: 409 });
  });

  it("done records the effect's outcome from the person's input; redo forgets its intent", () => {
    const t = target({ entries: new Map([["pay", intent("pay")]]), openIntents: [intent("pay")] }, { pendingAsk: "pay" });
    const done = personResume(t, 5, "receipt-1", "done", BY, BUDGET, NOW);
    expect(done.ok && done.change).toMatchObject({ kind: "settled", journal: { record: { name: "pay", status: "done", value: JSON.stringify("receipt-1") } } });
    const redo = personResume(t, 5, null, "redo", BY, BUDGET, NOW);
    expect(redo.ok && redo.change).toMatchObject({ kind: "settled", forgetStep: "pay", lease: { status: "queued" } });
  });

  it("with another effect still unknown, the message stays parked and waits on that one", () => {
    const t = target({ openIntents: [intent("pay"), intent("ship")] }, { pendingAsk: "pay" });
    const v = personResume(t, 5, null, "redo", BY, BUDGET, NOW);
    expect(v.ok && v.change).toMatchObject({ kind: "outcome", lease: null, pendingAsk: "ship" });
  });
});

describe("personRetry", () => {
  const cases: { name: string; status: string; ok: boolean; code?: string }[] = [
    { name: "a failed message is queued again with a fresh set of tries, its attempts kept", status: "failed", ok: true },
    { name: "a cancelled one is final", status: "cancelled", ok: false, code: "cancelled" },
    { name: "anything else is not failed", status: "queued", ok: false, code: "not_parked" },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const v = personRetry(target({ error: "boom" }, { status: c.status as "failed", attempts: 2 }), 5, BY);
      if (v.ok) expect(v.change).toMatchObject({ kind: "retried", lease: { status: "queued", attempts: 2, retriedAfter: 2 }, answer: { question: "boom" } });
      else expect(v.code).toBe(c.code);
      expect(v.ok).toBe(c.ok);
    });
  }
});

describe("deadlineAnswer", () => {
  const queued = message(5, { status: "queued", attempts: 1, token: 3 });
  it("approve by the deadline is recorded as the deadline's answer, in the journal under the question's step", () => {
    const c = deadlineAnswer(target(ASKED), queued, "approve", BUDGET, NOW);
    expect(c).toMatchObject({ lease: { status: "queued" }, answer: { choice: "approve", by: { token: "deadline" } }, journal: { record: { name: "ask:ship", kind: "answer" } } });
  });

  it("with the journal full it fails instead, saying why, and is not handed out", () => {
    const c = deadlineAnswer(target({ ...ASKED, usage: { steps: 10, bytes: 0 } }), queued, "approve", BUDGET, NOW);
    expect(c.lease?.status).toBe("failed");
    expect(c.failure).toMatch(/^its deadline answered approve, but its journal is full/);
  });
});
