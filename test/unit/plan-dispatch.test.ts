// Phase 6: hand-outs (worker/rules/plan/dispatch.ts).
import { describe, expect, it } from "vitest";
import { dispatch, eligibleRunners } from "../../worker/rules/plan/dispatch.ts";
import { candidatesOf } from "../../worker/rules/plan/elect.ts";
import { DEFAULT_POLICY, type MessageLease, type MessagePolicy } from "../../worker/rules/message-lease.ts";
import type { ControlsSnapshot, ServeConn } from "../../worker/rules/agent-plan.ts";
import { conn, CONTROLS, HELD, message, NOW, running } from "./plan-fixtures.ts";

const POOL: MessagePolicy = { ...DEFAULT_POLICY, mode: "pool" };

describe("dispatch", () => {
  const cases: { name: string; conns: ServeConn[]; open: MessageLease[]; policy?: MessagePolicy; controls?: ControlsSnapshot; given: [number, number, number][] }[] = [
    { name: "queued messages go to the holder, oldest first, one per free slot, under new tokens",
      conns: [conn(1, { slots: 2 })], open: [message(3), message(4), message(5)], given: [[3, 0, 11], [4, 0, 12]] },
    { name: "a standby gets nothing in single mode", conns: [conn(1), conn(2)], open: [message(3), message(4)], given: [[3, 0, 11]] },
    { name: "every claimant runs in pool mode", conns: [conn(1), conn(2)], open: [message(3), message(4)], policy: POOL, given: [[3, 0, 11], [4, 1, 12]] },
    { name: "the safe point: a holder that should hand on takes nothing new",
      conns: [conn(1, { slots: 2 }), conn(2, { priority: 5 })], open: [running(7, "1"), message(9)], given: [] },
    { name: "paused: nothing is handed out", conns: [conn(1)], open: [message(3)], controls: { ...CONTROLS, paused: true }, given: [] },
    { name: "a drained machine takes nothing", conns: [conn(1), conn(2)], open: [message(3)], policy: POOL, controls: { ...CONTROLS, drained: new Set(["m1"]) }, given: [[3, 1, 11]] },
    { name: "a question for a person is never handed out", conns: [conn(1)], open: [message(3, { status: "parked", forPerson: true })], given: [] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const policy = c.policy ?? DEFAULT_POLICY;
      const controls = c.controls ?? CONTROLS;
      const live = c.conns.map((_, i) => i);
      const candidates = candidatesOf(c.conns, c.conns.map(() => NOW), live, controls.drained);
      const out = dispatch(new Map(c.open.map((m) => [m.id, m])), c.conns, eligibleRunners(c.conns, live, HELD, policy), candidates, HELD, controls, policy, new Map(), 10, NOW);
      expect(out.handOuts.map((h) => [h.lease.id, h.to, h.lease.token])).toEqual(c.given);
      expect(out.tokenCounter).toBe(10 + c.given.length);
      for (const h of out.handOuts) expect(h.lease).toMatchObject({ status: "running", attempts: 1, expiresAt: NOW + policy.runTimeoutMs });
    });
  }
});
