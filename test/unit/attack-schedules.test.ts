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
  // Open finding (lead): croner repeats the minutes of a fixed hour in its second occurrence
  // (01:00, 01:20, 01:40 EST after the same wall times in EDT), so the schedule posts them twice.
  // it.fails until fixed: then make it `it`.
  it.fails("*/20 1 * * * in America/New_York fires 01:00, 01:20 and 01:40 once each on 1 Nov 2026 (the first, EDT)", () => {
    const c: Cadence = { kind: "cron", cron: "*/20 1 * * *", tz: "America/New_York" };
    expect(slots(c, "2026-11-01T04:00:00Z", "2026-11-01T12:00:00Z")).toEqual(["2026-11-01T05:00:00.000Z", "2026-11-01T05:20:00.000Z", "2026-11-01T05:40:00.000Z"]);
  });
});
