// What a parked message waits on travels as data: presence's `waiting_on` (the step whose effect's
// outcome is unknown). `baton who` and the dashboard read that field; neither parses the sentence
// presence still carries for older readers.
import { describe, expect, it } from "vitest";
import { renderPresence } from "../../cli/lib/presence-table.ts";
import { askKind } from "../../worker/dashboard/person-ask.ts";
import { agedEntry, whoEntryOf } from "../../worker/rules/presence.ts";
import type { PresenceReport } from "../../worker/wire/server-frames.ts";

type Parked = PresenceReport["work"]["parked"][number];

const PAY: Parked = { id: 7, attempt: 1, deadline: null, group: null, waiting_on: "pay", reason: "outcome unknown: step pay" };
const QUESTION: Parked = { id: 8, attempt: 1, deadline: null, group: null, waiting_on: null, reason: null, question: "Ship it?", choices: ["ship", "hold"] };
const APPROVAL: Parked = { id: 9, attempt: 2, deadline: null, group: null, waiting_on: null, reason: null };

function report(parked: Parked[]): PresenceReport {
  return {
    agent: "billing", connection_count: 0, serve_candidates: 0, serve_standbys: 0, fence: 3, holder: null, heartbeat_ttl_seconds: 60,
    transitions: [], recent_messages: [], wakes: 0, reported_at: 1_000, connections: [],
    controls: { paused: false, paused_since: null, drained: [], hysteresis_seconds: 10, reserved_until: null },
    work: {
      mode: "single", max_running: 1, run_timeout_seconds: 60, max_attempts: 3,
      counts: { queued: 0, running: 0, parked: parked.length, acknowledged: 0, failed: 0 }, running: [], parked, failed: [],
    },
  };
}

describe("what a parked message waits on", () => {
  it("the who view keeps each parked message's waiting_on (null when it asks a question or for approval)", () => {
    const who = whoEntryOf(agedEntry(report([PAY, QUESTION, APPROVAL]), 2_000, 1_500));
    expect(who.work.parked).toEqual([{ id: 7, waiting_on: "pay" }, { id: 8, waiting_on: null }, { id: 9, waiting_on: null }]);
  });

  it("baton who names the step whose outcome is unknown and the two answers, and nothing for a question", () => {
    const table = renderPresence(whoEntryOf(agedEntry(report([PAY, QUESTION]), 2_000, 1_500)), 1_500);
    expect(table).toContain("2 parked (7, 8)");
    expect(table).toContain("  parked 7: outcome unknown: step pay: baton resume billing 7 --done | --redo\n");
    expect(table).not.toContain("parked 8:");
  });

  it("the dashboard tells an unknown outcome, a question and an approval apart by the data, never by the sentence", () => {
    expect(askKind(PAY)).toBe("unknown");
    expect(askKind(QUESTION)).toBe("question");
    expect(askKind(APPROVAL)).toBe("approval");
    // An entry an older coordinator reported has no waiting_on; there a reason was set exactly when an
    // effect's outcome was unknown, so its presence (not its words) says so until the agent reports again.
    expect(askKind({ ...APPROVAL, waiting_on: undefined, reason: "outcome unknown: step pay" })).toBe("unknown");
    expect(askKind({ ...APPROVAL, waiting_on: undefined, reason: null })).toBe("approval");
    expect(askKind({ ...PAY, reason: undefined })).toBe("unknown");
  });
});
