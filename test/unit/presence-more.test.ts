// Presence lists the newest few of each kind of work (20 parked, 50 running, 10 failed) and counts
// them all; `baton who` says what it does not list as "and K more" instead of letting the list pass
// for the whole. The workerd side (25 parked, 20 listed, counted 25) is test/worker/person-questions.test.ts.
import { describe, expect, it } from "vitest";
import { renderPresence } from "../../cli/lib/presence-table.ts";
import { agedEntry, whoEntryOf } from "../../worker/rules/presence.ts";
import type { PresenceReport } from "../../worker/wire/server-frames.ts";

function report(parked: number, listed: number): PresenceReport {
  return {
    agent: "desk", connection_count: 0, serve_candidates: 0, serve_standbys: 0, fence: 1, holder: null, heartbeat_ttl_seconds: 60,
    transitions: [], recent_messages: [], wakes: 0, reported_at: 1_000, connections: [],
    controls: { paused: false, paused_since: null, drained: [], hysteresis_seconds: 10, reserved_until: null },
    work: {
      mode: "single", max_running: 1, run_timeout_seconds: 60, max_attempts: 3,
      counts: { queued: 0, running: 0, parked, acknowledged: 0, failed: 0 }, running: [], failed: [],
      parked: Array.from({ length: listed }, (_, i) => ({ id: parked - i, attempt: 0, deadline: null, group: null, waiting_on: null, reason: null })),
    },
  };
}

describe("baton who with more parked messages than presence lists", () => {
  it("25 parked, the newest 20 listed: the line counts 25 and says the 5 it does not list", () => {
    const table = renderPresence(whoEntryOf(agedEntry(report(25, 20), 2_000, 1_500)), 1_500);
    const ids = Array.from({ length: 20 }, (_, i) => 25 - i).join(", ");
    expect(table).toContain(`25 parked (${ids} and 5 more)`);
  });

  it("when every parked message is listed, nothing more is claimed", () => {
    const table = renderPresence(whoEntryOf(agedEntry(report(3, 3), 2_000, 1_500)), 1_500);
    expect(table).toContain("3 parked (3, 2, 1),");
    expect(table).not.toContain("more");
  });
});

describe("baton who with a stored policy that could not be read", () => {
  it("says the policy could not be read and that the defaults run, instead of showing the mode as set", () => {
    const unread = report(0, 0);
    unread.work.policy_problem = "run_meta.policy holds text that is not JSON";
    const table = renderPresence(whoEntryOf(agedEntry(unread, 2_000, 1_500)), 1_500);
    expect(table).toContain("  policy: could not be read (run_meta.policy holds text that is not JSON); the defaults run until `baton agent set desk` saves one");
    expect(renderPresence(whoEntryOf(agedEntry(report(0, 0), 2_000, 1_500)), 1_500)).not.toContain("policy:");
  });
});
