// planAgent on a write that moves no message: stored and answered alone, with nothing else planned beside it.
import { describe, expect, it } from "vitest";
import { planAgent, type AgentEvent, type AgentSnapshot } from "../../worker/rules/agent-plan.ts";
import { DEFAULT_POLICY } from "../../worker/rules/message-lease.ts";
import type { WriteInput } from "../../worker/rules/plan/write-event.ts";
import { BUDGET, STEP_RECORD, agentCheckpointWrite, conn, failWrite, heartbeatWrite, snapshot, staleWrite, stepWrite } from "./agent-plan-fixtures.ts";
import { NOW, TTL, message } from "./plan-fixtures.ts";

describe("planAgent: a write that moves no message", () => {
  const running = message(7, { status: "running", attempts: 1, token: 1, runner: "1", expiresAt: NOW + 5000 });
  /** A holder silent past its TTL, a standby and a queued message: a full plan would close, elect and dispatch. */
  const busy = (): AgentSnapshot => snapshot({
    conns: [conn(1, { toldHeld: true, toldFence: 1 }, NOW - 2 * TTL), conn(2)],
    work: { policy: DEFAULT_POLICY, open: [running, message(8)], parkDeadline: null, due: new Map(), journalBudget: BUDGET },
  });
  const quiet: [string, WriteInput][] = [
    ["a heartbeat", heartbeatWrite],
    ["a step record", stepWrite],
    ["an answered write that stored nothing", { ...stepWrite, rows: { ...stepWrite.rows, record: { ...STEP_RECORD, at: 0 } } }],
  ];
  for (const [name, event] of quiet) {
    it(`${name} is stored and answered, with no liveness, election, take back, dispatch or alarm planned beside it (as before writes went through the plan)`, () => {
      const plan = planAgent(busy(), { type: "write", from: "c1", write: event });
      expect([plan.changes, plan.replies]).toEqual([plan.write!.change ? [plan.write!.change] : [], [{ to: "c1", frame: plan.write!.frame }]]);
      expect(plan.replies[0]!.frame).toMatchObject({ type: "result" });
      expect([plan.close, plan.tells, plan.takeBacks, plan.handOuts, plan.patches.size, plan.leaseChanged, plan.alarm, plan.presenceChanged])
        .toEqual([[], [], [], [], 0, false, null, false]);
    });
  }

  it("a write that moves its message, a refusal and the holder's checkpoint are planned in full (the silent holder is closed)", () => {
    const full: AgentEvent[] = [failWrite, staleWrite, agentCheckpointWrite].map((write) => ({ type: "write", from: "c1", write }));
    for (const event of full) expect(planAgent(busy(), event).close).toEqual([0]);
  });
});
