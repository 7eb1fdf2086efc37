// A2A push notifications over plain data (worker/rules/a2a-push.ts and the plan's wake for them):
// which status changes a task's targets hear, the body a push carries, the budgets, an A2A config
// as baton's route takes it and shows it, and the plan waking the outbox at once for a push.
import { describe, expect, it } from "vitest";
import { a2aConfigOf, pushBody, pushedState, pushTargetOf, pushTargetRefusal } from "../../worker/rules/a2a-push.ts";
import { makesPush, webhookWake } from "../../worker/rules/plan/webhook-wake.ts";
import { pushOf } from "../../worker/rules/plan/effects.ts";
import type { MessageChange } from "../../worker/rules/agent-plan.ts";
import type { MessageStatus } from "../../worker/wire/enums.ts";
import type { MessageView } from "../../worker/wire/http-responses.ts";
import { PUSH_LIMITS } from "../../worker/wire/push.ts";
import { message, NOW } from "./plan-fixtures.ts";

describe("pushedState", () => {
  const cases: [MessageStatus, MessageStatus, number, string | null][] = [
    ["queued", "running", 1, "TASK_STATE_WORKING"],
    ["running", "queued", 1, null], // a failover's requeue: still working
    ["queued", "running", 2, null], // its next attempt
    ["running", "parked", 1, "TASK_STATE_INPUT_REQUIRED"],
    ["queued", "parked", 0, "TASK_STATE_INPUT_REQUIRED"], // a question for a person alone
    ["parked", "parked", 1, null], // an escalation
    ["parked", "queued", 1, "TASK_STATE_WORKING"], // answered
    ["running", "acknowledged", 1, "TASK_STATE_COMPLETED"],
    ["running", "failed", 3, "TASK_STATE_FAILED"],
    ["parked", "rejected", 1, "TASK_STATE_REJECTED"],
    ["queued", "cancelled", 0, "TASK_STATE_CANCELED"],
    ["queued", "superseded", 0, "TASK_STATE_CANCELED"],
    ["running", "running", 1, null], // a heartbeat
  ];
  for (const [before, status, attempts, state] of cases) {
    it(`${before} to ${status} (attempt ${attempts}): ${state ?? "nothing"}`, () => expect(pushedState(before, { status, attempts })).toBe(state));
  }
  it("a person's retry after 3 attempts pushes submitted; its next hand-out (attempt 4) working; a failed try after it nothing", () => {
    expect(pushedState("failed", { status: "queued", attempts: 3, retriedAfter: 3 })).toBe("TASK_STATE_SUBMITTED");
    expect(pushedState("queued", { status: "running", attempts: 4, retriedAfter: 3 })).toBe("TASK_STATE_WORKING");
    expect(pushedState("running", { status: "queued", attempts: 4, retriedAfter: 3 })).toBeNull();
  });
});

describe("a push's body and a target's budgets", () => {
  it("is an A2A StreamResponse with the status update and the question while input is required", () => {
    const m = { id: 7, status: "parked", attempts: 1, group: "pr-42", question: { text: "Ship?", choices: ["ship"] }, answers: [] } as unknown as MessageView;
    expect(JSON.parse(pushBody(m, NOW))).toEqual({
      statusUpdate: {
        taskId: "7", contextId: "pr-42",
        status: { state: "TASK_STATE_INPUT_REQUIRED", timestamp: new Date(NOW).toISOString(), message: expect.objectContaining({ parts: [{ text: "Ship?\nanswer with one of: ship, reject" }] }) },
        metadata: { baton: { message: 7, status: "parked", attempts: 1 } },
      },
    });
  });
  it("says how many of its attempts were declined unstarted, when any were", () => {
    const m = { id: 7, status: "running", attempts: 3, declined: 2, group: null, question: null, answers: [] } as unknown as MessageView;
    expect(JSON.parse(pushBody(m, NOW)).statusUpdate.metadata).toEqual({ baton: { message: 7, status: "running", attempts: 3, declined: 2 } });
  });
  it("refuses one more past the task's, the agent's or the account's count; a replacement always fits", () => {
    const fits = { task: 0, agent: 0, elsewhere: 0, replaces: false };
    expect(pushTargetRefusal(fits)).toBeNull();
    expect(pushTargetRefusal({ ...fits, task: PUSH_LIMITS.perTask })).toMatch(/a task has at most 4/);
    expect(pushTargetRefusal({ ...fits, agent: PUSH_LIMITS.perAgent })).toMatch(/an agent's open tasks have at most 100/);
    expect(pushTargetRefusal({ ...fits, agent: 10, elsewhere: PUSH_LIMITS.perAccount - 10 })).toMatch(/an account's tasks have at most 1000/);
    expect(pushTargetRefusal({ task: 99, agent: 9999, elsewhere: 9999, replaces: true })).toBeNull();
  });
  it("an A2A config names the task's own target when it has no id, and is shown without its token or credentials", () => {
    expect(pushTargetOf({ url: "https://r.example/a", token: "t".repeat(16), authentication: { scheme: "Bearer", credentials: "c" } }, 9)).toEqual({
      id: "9", body: { url: "https://r.example/a", token: "t".repeat(16), auth_scheme: "Bearer", auth_credentials: "c" },
    });
    expect(pushTargetOf({ id: "mine", url: "https://r.example/a" }, 9)).toEqual({ id: "mine", body: { url: "https://r.example/a", token: "" } });
    expect(a2aConfigOf({ task: 9, id: "mine", url: "https://r.example/a", auth_scheme: "Bearer", created_at: NOW })).toEqual({ id: "mine", taskId: "9", url: "https://r.example/a", authentication: { scheme: "Bearer" } });
  });
});

describe("the plan's wake for pushes", () => {
  const change = (before: MessageStatus, status: MessageStatus, attempts = 1): MessageChange => ({ kind: "fail", id: 1, before, lease: message(1, { status, attempts }), failure: "" });
  const w = { dueAt: null, sendsNow: false, keeps: false, outage: { since: null, notified: false }, noHolderAfterMs: null, push: { tasks: new Set([1]), sendsNow: true } };
  it("a change a task's targets hear wakes the outbox now, whatever webhook there is; not when no slot is free, not for a task without targets", () => {
    expect(makesPush(change("running", "parked"), new Set([1]))).toBe(true);
    expect(makesPush(change("running", "parked"), new Set([2]))).toBe(false);
    expect(makesPush(change("running", "queued"), new Set([1]))).toBe(false);
    expect(webhookWake(w, [change("running", "acknowledged")], null, NOW, NOW)).toBe(NOW);
    expect(webhookWake({ ...w, push: { ...w.push, sendsNow: false } }, [change("running", "acknowledged")], null, NOW, NOW)).toBeNull();
    expect(webhookWake({ ...w, push: { ...w.push, tasks: new Set<number>() } }, [change("running", "acknowledged")], null, NOW, NOW)).toBeNull();
  });

  it("a declined first attempt pushes nothing: the task stays working, never back to submitted", () => {
    const declined: MessageChange = { kind: "declined", id: 1, before: "running", lease: message(1, { status: "queued", attempts: 1, declined: 1 }) };
    // Its hand-out keeps its number, so the queued task reads as working by the state rules themselves.
    expect(pushedState("running", declined.lease!)).toBeNull();
    expect(pushOf(declined, new Set([1]))).toBeNull();
    expect(makesPush(declined, new Set([1]))).toBe(false);
  });
});
