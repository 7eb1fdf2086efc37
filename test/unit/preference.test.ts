// Preference, drain and restart grace: where the serve lease goes when runners differ.
import { describe, expect, it } from "vitest";
import { electPreferred, linePlace, nextPreferenceMoment, type PreferenceContext, type RankedCandidate } from "../../worker/rules/preference.ts";

const c = (claimSeq: number, priority = 0, readySince = 0, drained = false): RankedCandidate => ({
  claimSeq, runner: `r${claimSeq}`, priority, readySince, drained,
});
/** A candidate whose serve is shutting down (hello `stopping`). */
const stopping = (claimSeq: number, priority = 0): RankedCandidate => ({ ...c(claimSeq, priority), stopping: true });
const ctx = (over: Partial<PreferenceContext> = {}): PreferenceContext => ({
  holderClaim: null, holderBusy: false, paused: false, hysteresisMs: 10_000, reserved: null, now: 100_000, ...over,
});

describe("electPreferred", () => {
  it("with no holder, the highest priority wins, then the lowest claim sequence", () => {
    expect(electPreferred([c(1), c(2, 5), c(3, 5)], ctx()).winner?.claimSeq).toBe(2);
    expect(electPreferred([c(2), c(1)], ctx()).winner?.claimSeq).toBe(1);
  });

  it("equal priorities never steal back: the holder keeps the lease against an older claim", () => {
    expect(electPreferred([c(1), c(2)], ctx({ holderClaim: 2 }))).toEqual({ winner: c(2), reason: null });
  });

  it("a higher priority takes over only after the hysteresis period and only when the holder is idle", () => {
    const cands = [c(1), c(2, 5, 95_000)];
    expect(electPreferred(cands, ctx({ holderClaim: 1 })).winner?.claimSeq).toBe(1);
    expect(electPreferred(cands, ctx({ holderClaim: 1, now: 105_000, holderBusy: true })).winner?.claimSeq).toBe(1);
    expect(electPreferred(cands, ctx({ holderClaim: 1, now: 105_000 }))).toEqual({ winner: cands[1], reason: "preferred" });
  });

  it("a paused agent's lease stays where it is: neither a ready preferred runner nor a drain moves it, and no alarm is asked for", () => {
    const cands = [c(1), c(2, 5, 95_000)];
    expect(electPreferred(cands, ctx({ holderClaim: 1, now: 105_000, paused: true }))).toEqual({ winner: cands[0], reason: null });
    expect(electPreferred([c(1, 0, 0, true), c(2)], ctx({ holderClaim: 1, paused: true }))).toEqual({ winner: c(1, 0, 0, true), reason: null });
    expect(nextPreferenceMoment(cands, ctx({ holderClaim: 1, paused: true }))).toBeNull();
    expect(nextPreferenceMoment(cands, ctx({ holderClaim: 1 }))).toBe(105_000);
  });

  it("a drained holder finishes its run, then hands on; draining the last runner leaves no holder", () => {
    const cands = [c(1, 0, 0, true), c(2)];
    expect(electPreferred(cands, ctx({ holderClaim: 1, holderBusy: true })).winner?.claimSeq).toBe(1);
    expect(electPreferred(cands, ctx({ holderClaim: 1 }))).toEqual({ winner: cands[1], reason: "drained" });
    expect(electPreferred([c(1, 0, 0, true)], ctx({ holderClaim: 1 }))).toEqual({ winner: null, reason: "drained" });
  });

  it("after a restart the lease waits for its previous runner during the grace period, then anyone may take it", () => {
    const reserved = { runner: "r2", until: 101_000 };
    expect(electPreferred([c(1)], ctx({ reserved }))).toEqual({ winner: null, reason: null });
    expect(electPreferred([c(1), c(2)], ctx({ reserved }))).toEqual({ winner: c(2), reason: "restored" });
    expect(electPreferred([c(1)], ctx({ reserved, now: 101_000 })).winner?.claimSeq).toBe(1);
  });
});

describe("a stopping runner", () => {
  it("is elected holder only when no candidate that is not stopping is there, whatever its claim or priority", () => {
    expect(electPreferred([stopping(1, 9), c(2), c(3)], ctx())).toEqual({ winner: c(2), reason: null });
    expect(electPreferred([stopping(1), stopping(2)], ctx())).toEqual({ winner: stopping(1), reason: null });
    // A drained runner is no more electable for the others stopping.
    expect(electPreferred([stopping(1), c(2, 0, 0, true)], ctx())).toEqual({ winner: stopping(1), reason: null });
  });

  it("as holder finishes its run, then hands the lease at once to a candidate that is not stopping, reason stopping", () => {
    const cands = [stopping(1), stopping(2), c(3, 0, 99_999)];
    expect(electPreferred(cands, ctx({ holderClaim: 1, holderBusy: true }))).toEqual({ winner: cands[0], reason: null });
    // No hysteresis: the standby joined a moment ago, and is not of higher priority.
    expect(electPreferred(cands, ctx({ holderClaim: 1 }))).toEqual({ winner: cands[2], reason: "stopping" });
    // A paused agent's lease stays where it is.
    expect(electPreferred(cands, ctx({ holderClaim: 1, paused: true }))).toEqual({ winner: cands[0], reason: null });
  });

  it("as holder keeps the lease while every other candidate is stopping or drained", () => {
    const cands = [stopping(1), stopping(2), c(3, 0, 0, true)];
    expect(electPreferred(cands, ctx({ holderClaim: 1 }))).toEqual({ winner: cands[0], reason: null });
  });

  it("is never preferred: a stopping runner of higher priority neither takes the lease nor asks for an alarm", () => {
    const cands = [c(1), stopping(2, 5)];
    expect(electPreferred(cands, ctx({ holderClaim: 1, now: 1_000_000 }))).toEqual({ winner: cands[0], reason: null });
    expect(nextPreferenceMoment([c(1), { ...stopping(2, 5), readySince: 95_000 }], ctx({ holderClaim: 1 }))).toBeNull();
  });

  it("that the lease waits for after a restart is passed over when another runner is there, and restored when none is", () => {
    const reserved = { runner: "r1", until: 101_000 };
    expect(electPreferred([stopping(1), c(2)], ctx({ reserved }))).toEqual({ winner: c(2), reason: null });
    expect(electPreferred([stopping(1)], ctx({ reserved }))).toEqual({ winner: stopping(1), reason: "restored" });
  });

  it("stands in line after every standby that is not stopping, before drained runners", () => {
    const cands = [c(1), stopping(2, 9), c(3), stopping(4), c(5, 0, 0, true)];
    expect([1, 3, 2, 4, 5].map((s) => linePlace(cands, s, 1))).toEqual([0, 1, 2, 3, 4]);
    expect([1, 3, 2, 4].map((s) => linePlace(cands, s, null))).toEqual([1, 2, 3, 4]);
  });
});

describe("nextPreferenceMoment", () => {
  it("is when the earliest higher-priority candidate has waited out the hysteresis", () => {
    expect(nextPreferenceMoment([c(1), c(2, 5, 95_000), c(3, 9, 97_000)], ctx({ holderClaim: 1 }))).toBe(105_000);
    expect(nextPreferenceMoment([c(1), c(2)], ctx({ holderClaim: 1 }))).toBeNull();
  });
});

describe("linePlace", () => {
  it("is 0 for the holder, then the order the lease would take: priority, then claim sequence; drained runners last", () => {
    const cands = [c(1), c(2, 5), c(3, 5), c(4, 9, 0, true), c(5)];
    expect([2, 3, 1, 5, 4].map((s) => linePlace(cands, s, 2))).toEqual([0, 1, 2, 3, 4]);
    expect(linePlace(cands, 1, null)).toBe(3);
  });
});
