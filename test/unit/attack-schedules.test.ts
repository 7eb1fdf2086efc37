// Probes (review of the schedules merge) of cron slots on a fall-back day. docs/guides/schedules.md:
// "On the day they move back, a slot inside the repeated hour fires once, at its first occurrence".
import { describe, expect, it } from "vitest";
import { slotAfter, type Cadence } from "../../worker/rules/cron-slots.ts";

function slots(c: Cadence, from: string, until: string): string[] {
  const out: string[] = [];
  for (let t = slotAfter(c, Date.parse(from)); t !== null && t < Date.parse(until); t = slotAfter(c, t)) out.push(new Date(t).toISOString());
  return out;
}

describe("cron slots on a fall-back day", () => {
  // croner repeats the minutes of a fixed hour in its second occurrence (01:00, 01:20, 01:40 EST
  // after the same wall times in EDT); a slot is its first occurrence only.
  it("*/20 1 * * * in America/New_York fires 01:00, 01:20 and 01:40 once each on 1 Nov 2026 (the first, EDT)", () => {
    const c: Cadence = { kind: "cron", cron: "*/20 1 * * *", tz: "America/New_York" };
    expect(slots(c, "2026-11-01T04:00:00Z", "2026-11-01T12:00:00Z")).toEqual(["2026-11-01T05:00:00.000Z", "2026-11-01T05:20:00.000Z", "2026-11-01T05:40:00.000Z"]);
  });

  it("*/30 * * * * keeps counting real time through the repeated hour (every hour: both occurrences)", () => {
    const c: Cadence = { kind: "cron", cron: "*/30 * * * *", tz: "America/New_York" };
    expect(slots(c, "2026-11-01T04:50:00Z", "2026-11-01T07:10:00Z")).toEqual([
      "2026-11-01T05:00:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-01T06:00:00.000Z", "2026-11-01T06:30:00.000Z", "2026-11-01T07:00:00.000Z",
    ]);
  });
});
