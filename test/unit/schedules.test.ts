// The schedule rule (worker/rules/schedules.ts) over plain data and an injected now: which slots
// are posted and which skipped, on both DST changeover days in Europe/Berlin and America/New_York,
// on 29 February, with L and W, across outages, pauses and jitter; and which bodies are refused.
import { describe, expect, it } from "vitest";
import { checkSchedule, CRON_COUNT_STEPS, decideSchedule, jitterOf, LATE_GRACE_MS, slotKey, type ScheduleState, type SlotSkip } from "../../worker/rules/schedules.ts";
import type { ScheduleBody } from "../../worker/wire/schedules.ts";

const T = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();
const MIN = 60_000;

function made(body: Omit<ScheduleBody, "text">, createdAt: number, extra: Partial<ScheduleState> = {}): ScheduleState {
  const checked = checkSchedule({ text: "go", ...body }, createdAt);
  if (!checked.ok) throw new Error(checked.message);
  return { id: 7, cadence: checked.cadence, createdAt, lastSlot: null, missed: null, paused: false, catchUp: "one", jitterMs: 0, ...extra };
}

/** Runs the rule every `stepMs` from `from` to `to`, applying each decision, as the object's alarm would. */
function run(s: ScheduleState, from: number, to: number, stepMs: number, paused = (_now: number) => false) {
  const posts: { slot: string; at: string }[] = [];
  const skips: SlotSkip[] = [];
  let state = s;
  for (let now = from; now <= to; now += stepMs) {
    const d = decideSchedule(state, paused(now), now);
    posts.push(...d.post.map((slot) => ({ slot: iso(slot), at: iso(now) })));
    skips.push(...d.skips);
    state = { ...state, lastSlot: d.lastSlot, missed: d.missed };
  }
  return { posts, skips, state };
}

describe("a 02:30 daily schedule on the DST changeover days fires once, at the documented time", () => {
  const cases: [string, string, string, string[]][] = [
    // Spring forward: 02:30 does not exist; it fires once at 03:00 local.
    ["Europe/Berlin", "spring", "2026-03-28T12:00:00Z", ["2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"]],
    ["America/New_York", "spring", "2026-03-07T12:00:00Z", ["2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"]],
    // Fall back: Berlin's 02:30 happens twice; it fires once, at the first (summer time).
    ["Europe/Berlin", "fall", "2026-10-24T12:00:00Z", ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]],
    // New York repeats 01:00-02:00, so its 02:30 happens once (EST).
    ["America/New_York", "fall", "2026-10-31T12:00:00Z", ["2026-11-01T07:30:00.000Z", "2026-11-02T07:30:00.000Z"]],
  ];
  for (const [tz, day, from, expected] of cases) {
    it(`${tz}, ${day}: fired once per day, each on time`, () => {
      const s = made({ cron: "30 2 * * *", tz }, T(from));
      const { posts } = run(s, T(from), T(from) + 2 * 86_400_000 - 1, 5 * MIN);
      expect(posts.map((p) => p.slot)).toEqual(expected);
      for (const p of posts) expect(p.at).toBe(p.slot);
    });
  }

  it("America/New_York, fall: 01:30, inside the repeated hour, fires once at its first occurrence (EDT)", () => {
    const s = made({ cron: "30 1 * * *", tz: "America/New_York" }, T("2026-10-31T12:00:00Z"));
    const { posts } = run(s, T("2026-10-31T12:00:00Z"), T("2026-11-01T12:00:00Z"), MIN);
    expect(posts.map((p) => p.slot)).toEqual(["2026-11-01T05:30:00.000Z"]);
  });
});

describe("calendar edges", () => {
  it("29 February fires only in leap years", () => {
    const s = made({ cron: "0 9 29 2 *" }, T("2026-01-01T00:00:00Z"));
    expect(decideSchedule(s, false, T("2026-01-01T00:00:00Z")).next?.slot).toBe(T("2028-02-29T09:00:00Z"));
    const d = decideSchedule(s, false, T("2028-02-29T09:00:00Z"));
    expect(d.post.map(iso)).toEqual(["2028-02-29T09:00:00.000Z"]);
    expect(d.next?.slot).toBe(T("2032-02-29T09:00:00Z"));
  });

  it("L is the last day of the month, W the weekday nearest a date", () => {
    const last = made({ cron: "0 9 L * *", tz: "Europe/Berlin" }, T("2028-02-01T00:00:00Z"));
    expect(iso(decideSchedule(last, false, T("2028-02-01T00:00:00Z")).next!.slot)).toBe("2028-02-29T08:00:00.000Z");
    // 15 August 2026 is a Saturday: 15W is Friday the 14th.
    const weekday = made({ cron: "0 9 15W * *" }, T("2026-08-01T00:00:00Z"));
    expect(iso(decideSchedule(weekday, false, T("2026-08-01T00:00:00Z")).next!.slot)).toBe("2026-08-14T09:00:00.000Z");
  });
});

describe("bad schedules are refused with a message naming what is wrong", () => {
  const now = T("2026-06-01T00:00:00Z");
  const refused = (body: Omit<ScheduleBody, "text"> & { text?: string }) => {
    const c = checkSchedule({ text: "go", ...body }, now);
    return c.ok ? "accepted" : c.message;
  };
  it.each([
    ["61 9 * * *", 'cron field 1 (minute) "61"'],
    ["0 25 * * *", 'cron field 2 (hour) "25"'],
    ["0 9 32 * *", 'cron field 3 (day of month) "32"'],
    ["0 9 * 13 *", 'cron field 4 (month) "13"'],
    ["0 9 * * 8", 'cron field 5 (day of week) "8"'],
    ["0 9 1-5/0 * *", 'cron field 3 (day of month) "1-5/0"'],
    ["0 9 * *", "cron needs 5 fields"],
    ["0 0 9 * * *", "cron needs 5 fields"],
    ["0 9 31 2 *", "never falls due"],
  ])("cron %s", (cron, message) => {
    expect(refused({ cron })).toContain(message);
  });
  it("an unknown time zone, two cadences, none, a past or unreadable one-off, text over the budget", () => {
    expect(refused({ cron: "0 9 * * *", tz: "Mars/Base" })).toContain('tz "Mars/Base" is not an IANA time zone');
    expect(refused({ cron: "0 9 * * *", every_seconds: 600 })).toBe("a schedule needs exactly one of cron, every_seconds, at or in_seconds");
    expect(refused({})).toBe("a schedule needs exactly one of cron, every_seconds, at or in_seconds");
    expect(refused({ at: "2026-05-31T23:00:00Z" })).toContain("is in the past");
    expect(refused({ at: "tomorrow at 9" })).toContain("is not an ISO 8601 time");
    expect(refused({ every_seconds: 600, tz: "Europe/Berlin" })).toContain("tz applies to cron and at");
    expect(refused({ in_seconds: 600, at: "2026-06-01T10:00:00Z" })).toBe("a schedule needs exactly one of cron, every_seconds, at or in_seconds");
    expect(refused({ every_seconds: 600, text: "é".repeat(4097) })).toBe("text is 8194 bytes; a schedule's text is at most 8192");
  });
  it("a one-off in N seconds is at now + N by the coordinator's clock", () => {
    const c = checkSchedule({ text: "x", in_seconds: 600 }, now);
    expect(c.ok && c.cadence).toEqual({ kind: "at", at: now + 600_000 });
  });
  it("a one-off without an offset is a wall time in its tz", () => {
    const c = checkSchedule({ text: "x", at: "2026-12-24T09:00", tz: "Europe/Berlin" }, now);
    expect(c.ok && c.cadence).toEqual({ kind: "at", at: T("2026-12-24T08:00:00Z") });
  });
});

describe("once per slot", () => {
  it("deciding again at the same time, or after the clock moved back, posts nothing more", () => {
    const s = made({ every_seconds: 600 }, T("2026-06-01T00:00:00Z"));
    const first = decideSchedule(s, false, T("2026-06-01T00:10:00Z"));
    expect(first.post.map(iso)).toEqual(["2026-06-01T00:10:00.000Z"]);
    const after = { ...s, lastSlot: first.lastSlot, missed: first.missed };
    expect(decideSchedule(after, false, T("2026-06-01T00:10:00Z")).post).toEqual([]);
    expect(decideSchedule(after, false, T("2026-06-01T00:05:00Z")).post).toEqual([]);
  });

  it("slot keys name the schedule and the slot, not the jittered time", () => {
    expect(slotKey(7, T("2026-06-01T09:00:00Z"))).toBe("schedule:7:2026-06-01T09:00:00.000Z");
  });

  it("jitter delays each slot by the same amount every time, within its bound, and never posts early", () => {
    const s = made({ every_seconds: 3600 }, T("2026-06-01T00:00:00Z"), { jitterMs: 300_000 });
    const slot = T("2026-06-01T01:00:00Z");
    const j = jitterOf(7, slot, 300_000);
    expect(j).toBe(jitterOf(7, slot, 300_000));
    expect(j).toBeGreaterThanOrEqual(0);
    expect(j).toBeLessThanOrEqual(300_000);
    expect(decideSchedule(s, false, slot + j - 1).post).toEqual([]);
    const d = decideSchedule(s, false, slot + j);
    expect(d.post).toEqual([slot]);
    expect(decideSchedule(s, false, slot).next).toEqual({ slot, fire: slot + j });
  });
});

describe("late and missed slots", () => {
  it("a slot late within the grace (a restart, a deploy) is posted even with catch-up none", () => {
    const s = made({ cron: "0 9 * * *" }, T("2026-06-01T00:00:00Z"), { catchUp: "none" });
    const d = decideSchedule(s, false, T("2026-06-01T09:00:00Z") + LATE_GRACE_MS - 1);
    expect(d.post.map(iso)).toEqual(["2026-06-01T09:00:00.000Z"]);
    expect(d.skips).toEqual([]);
  });

  it("an outage past the grace: catch-up none skips every missed slot, one posts the latest", () => {
    const from = T("2026-06-01T00:00:00Z");
    const now = T("2026-06-03T12:00:00Z");
    const none = decideSchedule(made({ cron: "0 9 * * *" }, from, { catchUp: "none" }), false, now);
    expect(none.post).toEqual([]);
    expect(none.skips).toEqual([{ slot: T("2026-06-01T09:00:00Z"), last: T("2026-06-03T09:00:00Z"), count: 3, reason: "missed" }]);
    const one = decideSchedule(made({ cron: "0 9 * * *" }, from, { catchUp: "one" }), false, now);
    expect(one.post.map(iso)).toEqual(["2026-06-03T09:00:00.000Z"]);
    expect(one.skips).toEqual([{ slot: T("2026-06-01T09:00:00Z"), last: T("2026-06-02T09:00:00Z"), count: 2, reason: "missed" }]);
    expect(one.lastSlot).toBe(T("2026-06-03T09:00:00Z"));
  });

  it("an hour-long outage of a 1-minute schedule posts the slots within the grace and skips the rest", () => {
    const s = made({ every_seconds: 60 }, T("2026-06-01T00:00:00Z"), { catchUp: "one" });
    const d = decideSchedule(s, false, T("2026-06-01T01:00:00Z"));
    expect(d.post.length).toBe(LATE_GRACE_MS / MIN + 1);
    expect(d.skips).toEqual([{ slot: T("2026-06-01T00:01:00Z"), last: T("2026-06-01T00:44:00Z"), count: 44, reason: "missed" }]);
  });

  it("a four-year outage of a per-minute cron is decided in a bounded walk: its skip counts at most CRON_COUNT_STEPS (at least), its span exact", () => {
    const s = made({ cron: "* * * * *", tz: "Europe/Berlin" }, T("2026-01-01T00:00:00Z"), { catchUp: "none" });
    const now = T("2030-01-01T00:00:00Z");
    const d = decideSchedule(s, false, now);
    expect(d.skips).toEqual([{ slot: T("2026-01-01T00:00:00Z"), last: now - LATE_GRACE_MS - MIN, count: CRON_COUNT_STEPS, countAtLeast: true, reason: "missed" }]);
    // An every-N schedule counts by arithmetic, exactly, however long the outage.
    const every = decideSchedule(made({ every_seconds: 60 }, T("2026-01-01T00:00:00Z"), { catchUp: "none" }), false, now);
    expect(every.skips[0]!.count).toBe((now - LATE_GRACE_MS - T("2026-01-01T00:01:00Z")) / MIN);
  });

  it("a day's outage of a per-minute cron records its skip as at least CRON_COUNT_STEPS, not an exact count", () => {
    const from = T("2026-06-01T00:00:00Z");
    const now = from + 24 * 60 * MIN;
    for (const catchUp of ["one", "none"] as const) {
      const d = decideSchedule(made({ cron: "* * * * *" }, from, { catchUp }), false, now);
      expect(d.skips.map((k) => [k.reason, k.count, k.countAtLeast])).toEqual([["missed", CRON_COUNT_STEPS, true]]);
    }
  });

  it("the same day paused records at least CRON_COUNT_STEPS, never the capped count plus the recent slots", () => {
    const from = T("2026-06-01T00:00:00Z");
    const d = decideSchedule(made({ cron: "* * * * *" }, from, { paused: true }), false, from + 24 * 60 * MIN);
    expect(d.skips.map((k) => [k.reason, k.count, k.countAtLeast])).toEqual([["paused", CRON_COUNT_STEPS, true]]);
  });

  it("30 days of an hourly cron with catch-up one records at least CRON_COUNT_STEPS skipped, never the capped count less the one posted", () => {
    const from = T("2026-06-01T00:00:00Z");
    const d = decideSchedule(made({ cron: "0 * * * *" }, from, { catchUp: "one" }), false, from + 30 * 24 * 60 * MIN + 30 * MIN);
    expect(d.post.length).toBe(1);
    expect(d.skips.map((k) => [k.reason, k.count, k.countAtLeast])).toEqual([["missed", CRON_COUNT_STEPS, true]]);
  });

  it("a cron outage of no more slots than the cap counts them exactly", () => {
    const from = T("2026-06-01T00:00:00Z");
    const d = decideSchedule(made({ cron: "0 * * * *" }, from, { catchUp: "none" }), false, from + (CRON_COUNT_STEPS - 1) * 60 * MIN + LATE_GRACE_MS + MIN);
    expect(d.skips.map((k) => [k.reason, k.count, k.countAtLeast])).toEqual([["missed", CRON_COUNT_STEPS, undefined]]);
  });

  it("slots while paused are skipped as they pass; on resume catch-up one posts the latest, none nothing", () => {
    const from = T("2026-06-01T00:00:00Z");
    const paused = (now: number) => now < T("2026-06-01T00:35:00Z");
    for (const catchUp of ["one", "none"] as const) {
      const { posts, skips } = run(made({ every_seconds: 600 }, from, { catchUp }), from, T("2026-06-01T00:39:00Z"), MIN, paused);
      expect(skips.map((k) => [iso(k.slot), k.reason])).toEqual([
        ["2026-06-01T00:10:00.000Z", "paused"], ["2026-06-01T00:20:00.000Z", "paused"], ["2026-06-01T00:30:00.000Z", "paused"],
      ]);
      expect(posts).toEqual(catchUp === "one" ? [{ slot: "2026-06-01T00:30:00.000Z", at: "2026-06-01T00:35:00.000Z" }] : []);
    }
  });

  it("a paused schedule still wakes at its next slot, to record it, and no sooner", () => {
    const s = made({ every_seconds: 600 }, T("2026-06-01T00:00:00Z"), { paused: true });
    expect(decideSchedule(s, false, T("2026-06-01T00:01:00Z")).next?.fire).toBe(T("2026-06-01T00:10:00Z"));
  });

  it("a one-off is decided once, then has no next slot", () => {
    const s = made({ at: "2026-06-01T00:10:00Z" }, T("2026-06-01T00:00:00Z"));
    const d = decideSchedule(s, false, T("2026-06-01T00:10:00Z"));
    expect(d.post.map(iso)).toEqual(["2026-06-01T00:10:00.000Z"]);
    expect(d.next).toBeNull();
  });
});
