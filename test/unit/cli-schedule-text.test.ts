// What `baton schedule show` prints of a skip: an exact count as it is, a count that stopped at the
// rule's cap (count_at_least) as "N+", never as a figure that looks exact.
import { describe, expect, it } from "vitest";
import { describe as scheduleLines } from "../../cli/commands/schedule.ts";
import type { ScheduleView } from "../../worker/wire/schedules.ts";

const T0 = Date.parse("2026-06-01T00:00:00Z");
const view = (fires: ScheduleView["fires"]): ScheduleView => ({
  id: 3, cron: "* * * * *", tz: "UTC", every_seconds: null, at: null, text: "go", group: null, run_timeout_seconds: null, on_busy: null,
  catch_up: "one", jitter_seconds: 0, paused: false, created_at: T0, next_slot: null, next_fire: null, last_slot: null, fires,
});
const skip = { slot: T0, outcome: "skipped" as const, at: T0 + 86_400_000, message_id: null, reason: "missed" as const, last_slot: T0 + 85_440_000 };

describe("schedule show's skip line", () => {
  it("shows a capped count as at least (20+), an exact one as it is", () => {
    const lines = scheduleLines(view([{ ...skip, count: 20, count_at_least: true }, { ...skip, count: 20 }]));
    expect(lines.filter((l) => l.includes("skipped"))).toEqual([
      "    2026-06-01T00:00:00.000Z  skipped 20+ slots to 2026-06-01T23:44:00.000Z: missed",
      "    2026-06-01T00:00:00.000Z  skipped 20 slots to 2026-06-01T23:44:00.000Z: missed",
    ]);
  });
});
