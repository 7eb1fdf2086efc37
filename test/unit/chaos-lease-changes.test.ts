// The main chaos run's "no message lost": a message that ended `failed` after its max attempts is
// not lost when each attempt had its own fence and every lease change over them follows a fault
// the run injected; a lease change no fault explains, or a failure before max attempts, is lost.
import { describe, expect, it } from "vitest";
import { checkRun, INVARIANTS, type CoordinatorMessage } from "../../scripts/chaos/invariants.ts";
import { fenceTimeline, leaseChanges, unaccountedFailure, type Fault } from "../../scripts/chaos/lease-changes.ts";

const T0 = Date.parse("2026-12-06T21:42:00.000Z");
const line = (s: number, fields: Record<string, unknown>) => JSON.stringify({ at: new Date(T0 + s * 1000).toISOString(), event: "status", ...fields });
const holder = (s: number, fence: number) => line(s, { kind: "holder", fence });
const ran = (s: number, fence: number, token: number) => line(s, { event: "log", type: "ran", fence, token });

// Shaped on a real failing run (message 3, five attempts at fences 2-6): three holders paused past
// the TTL after its effect, one killed just after election, and fence 6 went to a frozen standby
// that never logged holding it; the next token (9) ran at fence 7.
const logs = [
  [holder(1, 1), holder(9, 5)],
  [holder(5, 3)],
  [holder(2, 2), holder(7, 4), line(9.5, { kind: "standby", fence: 6 }), holder(10.5, 7), ran(11, 7, 9), holder(14, 8)],
];
const faults: Fault[] = [
  { kind: "restart", slot: 0, at: 1.5, until: 3 }, // released fence 1
  { kind: "pause", slot: 2, at: 4, until: 6 }, // lost fence 2
  { kind: "pause", slot: 1, at: 6.5, until: 8 }, // lost fence 3
  { kind: "pause", slot: 2, at: 8.5, until: 9.4 }, // lost fence 4
  { kind: "kill", slot: 0, at: 9.3, until: 12 }, // lost fence 5
  { kind: "pause", slot: 1, at: 8.9, until: 11.5 }, // fence 6, taken while frozen
  { kind: "kill", slot: 2, at: 13, until: 15 }, // lost fence 7
].map((f) => ({ ...f, at: T0 + f.at * 1000, until: T0 + f.until * 1000 }) as Fault);
const failed: CoordinatorMessage & { token: number; error: string | null } = { id: 3, status: "failed", attempts: 5, acked_fence: null, token: 8, error: "its runner left" };

describe("chaos main run: failed messages against injected faults", () => {
  it("accounts a message failed after 5 attempts when every lease change over its fences follows an injected fault", () => {
    const t = fenceTimeline(logs);
    expect(leaseChanges(t, faults)).toEqual({ total: 7, unexplained: [], holderUnknown: [7] });
    expect(unaccountedFailure({ ...failed, error: null }, 2, t, faults, 5)).toBeNull();
    const run = checkRun({ sentIds: [3], messages: [failed], effects: [], postFences: new Map([[3, 2]]), accountFailure: (m) => unaccountedFailure({ id: m.id, attempts: m.attempts, token: m.token!, error: null }, 2, t, faults, 5) });
    expect(run.invariants.find((i) => i.name === INVARIANTS.noneLost)!.ok).toBe(true);
    expect(run.tally).toMatchObject({ lost: 0, failedByFaults: 1 });
  });

  it("a message posted before the first holder (fence 0) counts changes from fence 2: the first election is no lease change", () => {
    expect(unaccountedFailure({ ...failed, attempts: 4, token: 4, error: null }, 0, fenceTimeline(logs), faults.slice(1), 4)).toBe(
      "3: lease changes to fence 2 follow no injected fault",
    );
    expect(unaccountedFailure({ ...failed, attempts: 4, token: 4, error: null }, 0, fenceTimeline(logs), faults, 4)).toBeNull();
  });

  it("calls it lost when one of those lease changes follows no injected fault", () => {
    const withoutKill = faults.filter((f) => f.kind !== "kill" || f.slot !== 0);
    const t = fenceTimeline(logs);
    expect(unaccountedFailure({ ...failed, error: null }, 2, t, withoutKill, 5)).toBe("3: lease changes to fence 6 follow no injected fault");
  });

  it("a change from a fence nobody logged holding is explained only by a pause or kill in effect at that fence's election", () => {
    const t = fenceTimeline(logs);
    const others = faults.filter((f) => !(f.slot === 1 && f.kind === "pause" && f.at === T0 + 8900) && !(f.slot === 0 && f.kind === "kill"));
    expect(leaseChanges(t, others).unexplained).toEqual([6, 7]);
    const restartAtElection: Fault = { kind: "restart", slot: 1, at: T0 + 9000, until: T0 + 11000 };
    expect(leaseChanges(t, [...others, restartAtElection]).unexplained).toContain(7);
    const pauseEndedBefore: Fault = { kind: "pause", slot: 1, at: T0 + 8000, until: T0 + 9400 };
    expect(leaseChanges(t, [...others, pauseEndedBefore]).unexplained).toContain(7);
    const frozenAtElection: Fault = { kind: "pause", slot: 1, at: T0 + 9400, until: T0 + 10600 };
    expect(leaseChanges(t, [...others, frozenAtElection]).unexplained).not.toContain(7);
  });

  it("calls it lost when it failed before its max attempts, or had more attempts than fences", () => {
    const t = fenceTimeline(logs);
    expect(unaccountedFailure({ ...failed, attempts: 4 }, 2, t, faults, 5)).toMatch(/failed after 4 of 5 attempts/);
    expect(unaccountedFailure({ ...failed }, 4, t, faults, 5)).toBe("3 had 5 attempts over fences 4..7");
  });

  it("counts a declined hand-out as no attempt against max attempts: five hand-outs, one declined, is a failure before its max", () => {
    expect(unaccountedFailure({ ...failed, declined: 1 }, 2, fenceTimeline(logs), faults, 5)).toMatch(/failed after 4 of 5 attempts/);
  });

  it("counts tries from a person's latest retry, as the coordinator does: five hand-outs, retried after 1, is a failure before its max", () => {
    expect(unaccountedFailure({ ...failed, retried_after: 1 }, 2, fenceTimeline(logs), faults, 5)).toMatch(/failed after 4 of 5 attempts/);
  });

  it("without an account of failures, a failed message is lost", () => {
    const run = checkRun({ sentIds: [3], messages: [failed], effects: [] });
    expect(run.invariants.find((i) => i.name === INVARIANTS.noneLost)).toMatchObject({ ok: false, detail: "3 failed" });
  });
});
