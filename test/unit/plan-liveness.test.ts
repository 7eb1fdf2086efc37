// Phase 2: who is alive (worker/rules/plan/liveness.ts).
import { describe, expect, it } from "vitest";
import { liveness } from "../../worker/rules/plan/liveness.ts";
import { conn, HELD, NOW, TTL } from "./plan-fixtures.ts";

describe("liveness", () => {
  const cases: { name: string; heartbeats: number[]; lastSeen?: number; live: number[]; close: number[]; lostAt: number | null; folded?: number }[] = [
    { name: "everyone within the TTL is live", heartbeats: [NOW, NOW - TTL + 1], live: [0, 1], close: [], lostAt: null },
    { name: "a silent standby is closed; the lease is not lost", heartbeats: [NOW, NOW - TTL - 1], live: [0], close: [1], lostAt: null },
    { name: "a silent holder is closed and lost at its own deadline, not now", heartbeats: [NOW - 3000, NOW], live: [1], close: [0], lostAt: NOW - 3000 + TTL },
    { name: "the holder's later accepted ping is folded into its attachment", heartbeats: [NOW - 100, NOW], lastSeen: NOW - 600, live: [0, 1], close: [], lostAt: null, folded: NOW - 100 },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const out = liveness([conn(1, { lastSeen: c.lastSeen ?? NOW - 1000 }), conn(2)], c.heartbeats, HELD, NOW, TTL);
      expect([out.live, out.close, out.holderLostAt]).toEqual([c.live, c.close, c.lostAt]);
      if (c.folded !== undefined) expect(out.patches.get(0)).toEqual({ lastSeen: c.folded });
    });
  }
});
