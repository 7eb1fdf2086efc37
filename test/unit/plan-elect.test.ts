// Phase 3: the election with preference and the safe point (worker/rules/plan/elect.ts).
import { describe, expect, it } from "vitest";
import { candidatesOf, elect } from "../../worker/rules/plan/elect.ts";
import type { AgentEvent, ControlsSnapshot, ServeConn } from "../../worker/rules/agent-plan.ts";
import type { LeaseRecord } from "../../worker/rules/election.ts";
import type { MessageLease } from "../../worker/rules/message-lease.ts";
import { conn, CONTROLS, HELD, NOBODY, NOW, running } from "./plan-fixtures.ts";

describe("elect", () => {
  const cases: {
    name: string; conns: ServeConn[]; lease?: LeaseRecord; open?: MessageLease[]; controls?: ControlsSnapshot; event?: AgentEvent; stale?: boolean;
    holder: number | null; fence: number; reason: string | null;
  }[] = [
    { name: "the first claimant of an empty agent holds with fence 1", conns: [conn(1)], lease: NOBODY, holder: 1, fence: 1, reason: "claimed" },
    { name: "a second claimant waits behind the holder", conns: [conn(1), conn(2)], holder: 1, fence: 1, reason: null },
    { name: "a released holder hands on, reason released", conns: [conn(1, { released: true }), conn(2)], event: { type: "release", from: "c1" }, holder: 2, fence: 2, reason: "released" },
    { name: "a holder liveness found silent hands on, reason stale", conns: [conn(2)], stale: true, holder: 2, fence: 2, reason: "stale" },
    { name: "a ready preferred runner takes an idle holder's lease", conns: [conn(1), conn(2, { priority: 5 })], holder: 2, fence: 2, reason: "preferred" },
    { name: "the safe point: a busy holder keeps the lease against a preferred runner", conns: [conn(1), conn(2, { priority: 5 })], open: [running(7, "1")], holder: 1, fence: 1, reason: null },
    { name: "a drained idle holder hands on", conns: [conn(1), conn(2)], controls: { ...CONTROLS, drained: new Set(["m1"]) }, holder: 2, fence: 2, reason: "drained" },
    { name: "the holder leaves: a stopping standby of the lowest claim is passed over for one that is not stopping", conns: [conn(2, { stopping: true }), conn(3)], event: { type: "closed" }, holder: 3, fence: 2, reason: "closed" },
    { name: "a stopping idle holder hands on to a standby that is not stopping, reason stopping", conns: [conn(1, { stopping: true }), conn(2)], event: { type: "hello", from: "c1", stopping: true }, holder: 2, fence: 2, reason: "stopping" },
    { name: "a stopping holder keeps the lease while it runs a message", conns: [conn(1, { stopping: true }), conn(2)], open: [running(7, "1")], holder: 1, fence: 1, reason: null },
    { name: "paused: the lease stays", conns: [conn(1), conn(2, { priority: 5 })], controls: { ...CONTROLS, paused: true }, holder: 1, fence: 1, reason: null },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const controls = c.controls ?? CONTROLS;
      const live = c.conns.map((_, i) => i);
      const candidates = candidatesOf(c.conns, c.conns.map(() => NOW), live, controls.drained);
      const out = elect(candidates, c.lease ?? HELD, c.open ?? [], controls, c.event ?? { type: "alarm" }, c.stale ?? false, NOW);
      expect([out.lease.holderClaim, out.lease.fence, out.transition?.reason ?? null]).toEqual([c.holder, c.fence, c.reason]);
    });
  }

  it("a released or unclaimed connection is no candidate", () => {
    expect(candidatesOf([conn(null), conn(2, { released: true }), conn(3)], [NOW, NOW, NOW], [0, 1, 2], new Set()).map((c) => c.claimSeq)).toEqual([3]);
  });
});
