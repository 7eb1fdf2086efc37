// What the directory says about heartbeat ages without asking any agent: the reported age plus
// the time since the report, an upper bound, never above the TTL.
import { describe, expect, it } from "vitest";
import { agedEntry } from "../../worker/wire/presence.ts";
import type { DirectoryEntry } from "../../worker/wire/protocol.ts";

function entry(ages: number[], reportedAt: number, ttlSeconds = 60): DirectoryEntry {
  return {
    agent: "a", connection_count: ages.length, serve_candidates: ages.length, serve_standbys: ages.length - 1, fence: 1,
    holder: null, heartbeat_ttl_seconds: ttlSeconds, transitions: [], recent_messages: [], wakes: 0, reported_at: reportedAt,
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
  it("adds the time since the report to each reported age and restamps the entry", () => {
    const aged = agedEntry(entry([0.5, 2], 10_000), 13_000);
    expect(aged.connections.map((c) => c.heartbeat_age_seconds)).toEqual([3.5, 5]);
    expect(aged.reported_at).toBe(13_000);
  });

  it("never says older than the TTL: a connection silent that long is closed by its agent", () => {
    const aged = agedEntry(entry([1, 59], 0, 60), 30_000);
    expect(aged.connections.map((c) => c.heartbeat_age_seconds)).toEqual([31, 60]);
  });

  it("a report stamped after now (clock skew between objects) ages nothing", () => {
    expect(agedEntry(entry([4], 5_000), 4_000).connections[0]!.heartbeat_age_seconds).toBe(4);
  });
});
