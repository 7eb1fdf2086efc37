// What the directory says without asking any agent: no heartbeat age (nobody measured one since
// the report), only the TTL bound, and whether the agent's own object still vouches for the entry.
import { describe, expect, it } from "vitest";
import { agedEntry } from "../../worker/rules/presence.ts";
import { confirmedUntil, nextConfirmation } from "../../worker/rules/directory-lease.ts";
import type { PresenceReport } from "../../worker/wire/protocol.ts";
import { renderPresence } from "../../cli/lib/presence-table.ts";

function report(ages: number[], reportedAt: number, ttlSeconds = 60): PresenceReport {
  return {
    agent: "a", connection_count: ages.length, serve_candidates: ages.length, serve_standbys: ages.length - 1, fence: 1,
    holder: { claim_seq: 1, machine: "m0", since: 0 }, heartbeat_ttl_seconds: ttlSeconds, transitions: [], recent_messages: [], wakes: 0, reported_at: reportedAt,
    controls: { paused: false, paused_since: null, drained: [], hysteresis_seconds: 10, reserved_until: null },
    work: {
      mode: "single", max_running: 1, run_timeout_seconds: 60, max_attempts: 3,
      counts: { queued: 0, running: 0, parked: 0, acknowledged: 0, failed: 0 }, running: [], parked: [], failed: [],
    },
    connections: ages.map((age, i) => ({
      role: "serve", claim_seq: i + 1, held: i === 0, machine: `m${i}`, joined_at: 0, heartbeat_age_seconds: age, cursor: 0, slots: 1, running: 0, priority: 0, drained: false,
    })),
  };
}

describe("agedEntry", () => {
  it("gives no heartbeat age, since later heartbeats reach nobody; the bound is the TTL", () => {
    const aged = agedEntry(report([0.5, 2], 10_000), confirmedUntil(10_000, 60_000), 13_000);
    expect(aged.connections.map((c) => c.heartbeat_age_seconds)).toEqual([null, null]);
    expect(aged.reported_at).toBe(10_000);
    expect(renderPresence(aged, 13_000)).toContain("within 60s");
  });

  it("is confirmed until three TTLs after the last confirmation, and unknown after", () => {
    const until = confirmedUntil(0, 1_000);
    expect(until).toBe(3_000);
    expect(agedEntry(report([1], 0, 1), until, 3_000).confirmed).toBe(true);
    const lapsed = agedEntry(report([1], 0, 1), until, 3_001);
    expect(lapsed.confirmed).toBe(false);
    expect(renderPresence(lapsed, 3_001)).toMatch(/^a: unknown: its coordinator object has not confirmed this since/);
  });

  it("an agent confirms every two TTLs while it has connections, and never without", () => {
    expect(nextConfirmation(5_000, true, 1_000)).toBe(7_000);
    expect(nextConfirmation(null, true, 1_000)).toBe(2_000);
    expect(nextConfirmation(5_000, false, 1_000)).toBeNull();
  });
});

describe("the observer's first frame", () => {
  it("carries at most the page size of agents (at least one) and leaves the rest to presence frames", async () => {
    const { firstPage, DIRECTORY_PAGE_BYTES } = await import("../../worker/rules/directory-page.ts");
    const entries = Array.from({ length: 300 }, (_, i) => agedEntry({ ...report([1], 0), agent: `agent-${i}` }, 3_000, 0));
    const { page, rest } = firstPage(entries);
    expect(page.length + rest.length).toBe(300);
    expect(rest.length).toBeGreaterThan(0);
    expect(JSON.stringify({ type: "directory", agents: page, server_time: 0, rest: rest.length }).length).toBeLessThan(DIRECTORY_PAGE_BYTES + 1024);
    expect([...page, ...rest].map((e) => e.agent)).toEqual(entries.map((e) => e.agent));
    expect(firstPage([entries[0]!], 10).page).toHaveLength(1);
  });
});

describe("who's table", () => {
  it("lists connections in line order: holder, then by priority and claim, drained after, watchers last", async () => {
    const { inLineOrder } = await import("../../cli/lib/presence-table.ts");
    const base = report([1], 0).connections[0]!;
    const conns = [
      { ...base, claim_seq: 1, held: false, priority: 0 },
      { ...base, claim_seq: null, held: false, priority: 0 },
      { ...base, claim_seq: 2, held: false, priority: 0, drained: true },
      { ...base, claim_seq: 3, held: false, priority: 5 },
      { ...base, claim_seq: 4, held: true, priority: 0 },
    ];
    expect(inLineOrder(conns).map((c) => c.claim_seq)).toEqual([4, 3, 1, 2, null]);
  });

  it("lists a stopping runner after every standby that is not stopping, whatever its priority, and before drained ones", async () => {
    const { inLineOrder } = await import("../../cli/lib/presence-table.ts");
    const base = report([1], 0).connections[0]!;
    const conns = [
      { ...base, claim_seq: 1, held: false, priority: 9, stopping: true },
      { ...base, claim_seq: 2, held: false, priority: 0, drained: true },
      { ...base, claim_seq: 3, held: false, priority: 0 },
      { ...base, claim_seq: 4, held: true, priority: 0, stopping: true },
    ];
    expect(inLineOrder(conns).map((c) => c.claim_seq)).toEqual([4, 3, 1, 2]);
  });
});
