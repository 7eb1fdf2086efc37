// Phase 4: each claimant hears only its own change (worker/rules/plan/tell.ts).
import { describe, expect, it } from "vitest";
import { tell } from "../../worker/rules/plan/tell.ts";
import { candidatesOf } from "../../worker/rules/plan/elect.ts";
import type { LeaseRecord } from "../../worker/rules/election.ts";
import type { ServeConn } from "../../worker/rules/agent-plan.ts";
import { conn, HELD, NOW } from "./plan-fixtures.ts";

const MOVED: LeaseRecord = { fence: 2, holderClaim: 2, holderMachine: "m2", since: NOW };

describe("tell", () => {
  const cases: { name: string; conns: ServeConn[]; lease: LeaseRecord; force?: boolean; told: [number, boolean, number, number][] }[] = [
    { name: "nobody whose state is unchanged is told", conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { toldHeld: false, toldFence: 1 })], lease: HELD, told: [] },
    { name: "a move tells the old holder and the new one, not a third in line", lease: MOVED,
      conns: [conn(1, { toldHeld: true, toldFence: 1, released: true }), conn(2, { toldHeld: false, toldFence: 1 }), conn(3, { toldHeld: false, toldFence: 1 })],
      told: [[0, false, 2, -1], [1, true, 2, 0]] },
    { name: "a new claimant hears its place in line", conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)], lease: HELD, told: [[1, false, 1, 1]] },
    { name: "a relabelled holder tells everyone", conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { toldHeld: false, toldFence: 1 })], lease: HELD, force: true,
      told: [[0, true, 1, 0], [1, false, 1, 1]] },
    { name: "a connection that never claimed is never told", conns: [conn(null)], lease: HELD, told: [] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const live = c.conns.map((_, i) => i);
      const beats = c.conns.map(() => NOW);
      const out = tell(c.conns, beats, live, candidatesOf(c.conns, beats, live, new Set()), c.lease, c.force ?? false);
      expect(out.tells.map((t) => [t.to, t.held, t.fence, t.position])).toEqual(c.told);
      for (const t of out.tells) expect(out.patches.get(t.to)).toMatchObject({ toldHeld: t.held, toldFence: t.fence });
    });
  }

  it("a new holder's deadline runs from its latest proof as a standby", () => {
    const out = tell([conn(2, { lastSeen: NOW - 500, toldHeld: false })], [NOW - 100], [0], [], MOVED, false);
    expect(out.patches.get(0)).toMatchObject({ lastSeen: NOW - 100 });
  });
});
