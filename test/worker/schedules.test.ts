// Schedules in the agent object, on the test clock: each slot posts one message whose idempotency
// key names the schedule and the slot, once, however often the alarm runs; a slot due while the
// object was not woken is posted late, not skipped; a paused schedule records its slots skipped and
// catch-up decides on resume; on_busy reject skips a slot and says why; bad bodies store nothing;
// and the DST table of the schedule rule holds under workerd's own Intl.
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AgentCoordinator } from "../../worker/objects/agent-object.ts";
import { checkSchedule, decideSchedule, type ScheduleState } from "../../worker/rules/schedules.ts";
import type { ScheduleView } from "../../worker/wire/schedules.ts";
import { auth, BASE, call, message, stubFor, uniqueAgent, waitFor } from "./helpers.ts";
import { advanceClock, freezeClock } from "./clock.ts";
import { directoryObjectName } from "../../worker/objects/names.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";

const MIN = 60_000;

async function scrape(): Promise<string> {
  return (await SELF.fetch(`${BASE}/metrics`, { headers: auth })).text();
}

async function addSchedule(agent: string, body: Record<string, unknown>): Promise<ScheduleView> {
  const res = await call("POST", `/agents/${agent}/schedules`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as unknown as ScheduleView;
}

async function show(agent: string, id: number): Promise<ScheduleView> {
  return (await call("GET", `/agents/${agent}/schedules/${id}`)).body as unknown as ScheduleView;
}

async function texts(agent: string): Promise<string[]> {
  const page = (await call("GET", `/agents/${agent}/messages`)).body as { messages: { text: string }[] };
  return page.messages.map((m) => m.text);
}

describe("schedules in the agent object", () => {
  it("each slot posts one message, on time, keyed by the schedule and the slot; an alarm run twice posts nothing more", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const s = await addSchedule(agent, { every_seconds: 600, text: "tick" });
    expect(s.next_slot).toBe(start + 10 * MIN);
    await advanceClock(10 * MIN - 1, { agent });
    expect(await texts(agent)).toEqual([]);
    await advanceClock(1, { agent });
    expect(await texts(agent)).toEqual(["tick"]);
    const fired = await show(agent, s.id);
    expect(fired.fires).toEqual([{ slot: start + 10 * MIN, outcome: "posted", at: start + 10 * MIN, message_id: 1, reason: null, count: 1, last_slot: start + 10 * MIN }]);
    expect(fired.next_slot).toBe(start + 20 * MIN);
    // /metrics counts the fire and its lateness (0 s here: the test clock stands still).
    await waitFor(async () => (await scrape()).includes(`baton_schedule_fires_total{agent="${agent}"} 1`), "the fire in /metrics");
    expect(await scrape()).toContain(`baton_schedule_lateness_seconds_count{agent="${agent}"} 1`);
    // The alarm handler runs again (a retried alarm), twice: the slot is already decided.
    await runInDurableObject(stubFor(agent), async (o: AgentCoordinator) => {
      await o.alarm();
      await o.alarm();
    });
    expect(await texts(agent)).toEqual(["tick"]);
    // The slot's message carries its key: a post with that key finds it.
    const key = `schedule:${s.id}:${new Date(start + 10 * MIN).toISOString()}`;
    const again = await call("POST", `/agents/${agent}/messages`, { text: "tick" });
    expect(again.status).toBe(201);
    const replay = await runInDurableObject(stubFor(agent), (o: AgentCoordinator) => o.post("tick", { key, by: { account: "dev", token: "t", via: "http" } }));
    expect(replay).toMatchObject({ status: 200, replayed: true, view: { id: 1 } });
  });

  it("a slot that fell due while nothing woke the object is posted late when it wakes, even with catch-up none", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const s = await addSchedule(agent, { every_seconds: 3600, text: "hourly", catch_up: "none" });
    // The object's clock runs 5 minutes past the slot with no alarm to wake it (a restart, a deploy).
    await runInDurableObject(stubFor(agent), async (_o, state) => {
      await state.storage.deleteAlarm();
    });
    await advanceClock(60 * MIN, { agent });
    await advanceClock(5 * MIN, { agent });
    expect(await texts(agent)).toEqual([]);
    await runInDurableObject(stubFor(agent), (o: AgentCoordinator) => o.alarm());
    expect(await texts(agent)).toEqual(["hourly"]);
    const view = await show(agent, s.id);
    expect(view.fires[0]).toMatchObject({ slot: start + 60 * MIN, outcome: "posted", at: start + 65 * MIN });
  });

  it("a paused schedule records each slot skipped; on resume catch-up one posts the latest of them, once", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const s = await addSchedule(agent, { every_seconds: 600, text: "tock", paused: true });
    for (let i = 0; i < 3; i++) await advanceClock(10 * MIN, { agent });
    expect(await texts(agent)).toEqual([]);
    const paused = await show(agent, s.id);
    expect(paused.fires.map((f) => [f.slot - start, f.outcome, f.reason])).toEqual([
      [30 * MIN, "skipped", "paused"], [20 * MIN, "skipped", "paused"], [10 * MIN, "skipped", "paused"],
    ]);
    await advanceClock(5 * MIN, { agent });
    expect((await call("POST", `/agents/${agent}/schedules/${s.id}/resume`)).status).toBe(200);
    expect(await texts(agent)).toEqual(["tock"]);
    const resumed = await show(agent, s.id);
    expect(resumed.fires[0]).toMatchObject({ slot: start + 30 * MIN, outcome: "posted", at: start + 35 * MIN });
    await runInDurableObject(stubFor(agent), (o: AgentCoordinator) => o.alarm());
    await advanceClock(4 * MIN, { agent });
    expect(await texts(agent)).toEqual(["tock"]);
    await advanceClock(1 * MIN, { agent });
    expect(await texts(agent)).toEqual(["tock", "tock"]);
  });

  it("an hour's outage of a per-minute cron is stored and shown as at least 20 slots skipped (count_at_least), not an exact 20", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const s = await addSchedule(agent, { cron: "* * * * *", text: "tick", catch_up: "none" });
    await advanceClock(60 * MIN, { agent });
    const skip = (await show(agent, s.id)).fires.find((f) => f.outcome === "skipped");
    expect(skip).toMatchObject({ reason: "missed", count: 20, count_at_least: true });
    expect(skip!.last_slot - skip!.slot).toBeGreaterThan(20 * MIN);
    expect(start).toBeLessThanOrEqual(skip!.slot);
  });

  it("a paused agent misses slots too; catch-up none posts nothing on unpause, then the next slot as usual", async () => {
    const agent = uniqueAgent();
    await freezeClock(agent);
    await addSchedule(agent, { every_seconds: 600, text: "beat", catch_up: "none" });
    expect((await call("POST", `/agents/${agent}/pause`)).status).toBe(200);
    await advanceClock(10 * MIN, { agent });
    await advanceClock(1 * MIN, { agent });
    expect((await call("POST", `/agents/${agent}/unpause`)).status).toBe(200);
    expect(await texts(agent)).toEqual([]);
    await advanceClock(9 * MIN, { agent });
    expect(await texts(agent)).toEqual(["beat"]);
  });

  it("with on_busy reject, a slot while the previous message is still open is skipped and recorded busy", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const s = await addSchedule(agent, { every_seconds: 600, text: "job", on_busy: "reject" });
    await advanceClock(10 * MIN, { agent });
    await advanceClock(10 * MIN, { agent });
    expect(await texts(agent)).toEqual(["job"]);
    expect((await message(agent, 1)).status).toBe("queued");
    expect((await show(agent, s.id)).fires[0]).toMatchObject({ slot: start + 20 * MIN, outcome: "skipped", reason: "busy", message_id: null });
    await waitFor(async () => (await scrape()).includes(`baton_schedule_skips_total{agent="${agent}",reason="busy"} 1`), "the busy skip in /metrics");
  });

  it("a posted slot queues schedule.fired with its lateness and message, a refused one schedule.skipped with why", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/webhook`, { url: "http://receiver.test/status/503", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" })).status).toBe(200);
    const start = await freezeClock(agent);
    const s = await addSchedule(agent, { every_seconds: 600, text: "hook", on_busy: "reject" });
    await advanceClock(10 * MIN, { agent });
    await advanceClock(10 * MIN, { agent });
    const events = await runInDurableObject(stubFor(agent), (_i, state) => state.storage.sql
      .exec<{ type: string; facts: string }>(`SELECT type, facts FROM webhook_outbox ORDER BY seq`).toArray());
    expect(events.map((e) => [e.type, JSON.parse(e.facts)])).toEqual([
      ["schedule.fired", { type: "schedule.fired", schedule: { id: s.id, slot: start + 10 * MIN, late_ms: 0 }, message_id: 1 }],
      ["schedule.skipped", { type: "schedule.skipped", schedule: { id: s.id, slot: start + 20 * MIN, last_slot: start + 20 * MIN, count: 1 }, reason: "busy" }],
    ]);
  });

  it("refuses a bad schedule with the field named, and stores nothing", async () => {
    const agent = uniqueAgent();
    const bad = await call("POST", `/agents/${agent}/schedules`, { cron: "0 9 * 13 *", tz: "Europe/Berlin", text: "x" });
    expect(bad).toMatchObject({ status: 400, body: { error: "bad_request" } });
    expect(bad.body.message).toContain('cron field 4 (month) "13"');
    expect((await call("POST", `/agents/${agent}/schedules`, { every_seconds: 30, text: "x" })).status).toBe(400);
    expect((await call("POST", `/agents/${agent}/schedules`, { every_seconds: 600, text: "x", extra: 1 })).status).toBe(400);
    expect((await call("GET", `/agents/${agent}/schedules`)).body).toEqual({ agent, schedules: [] });
    expect((await call("GET", `/agents/${agent}/schedules/1`)).status).toBe(404);
    expect((await call("DELETE", `/agents/${agent}/schedules/abc`)).status).toBe(404);
  });

  it("a one-off posts once at its time and is gone; remove takes a schedule away", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const once = await addSchedule(agent, { at: new Date(start + 5 * MIN).toISOString(), text: "once" });
    const daily = await addSchedule(agent, { cron: "0 9 * * *", tz: "Europe/Berlin", text: "daily" });
    await advanceClock(5 * MIN, { agent });
    expect(await texts(agent)).toEqual(["once"]);
    expect((await call("GET", `/agents/${agent}/schedules/${once.id}`)).status).toBe(404);
    expect(await call("DELETE", `/agents/${agent}/schedules/${daily.id}`)).toEqual({ status: 200, body: { id: daily.id, removed: true } });
    expect((await call("GET", `/agents/${agent}/schedules`)).body).toEqual({ agent, schedules: [] });
  });
});

describe("schedule limits", () => {
  it("an agent holds at most LIMITS.schedulesPerAgent; the account's count, kept by the directory, holds the account's limit", async () => {
    const agent = uniqueAgent();
    for (let i = 0; i < LIMITS.schedulesPerAgent; i++) await addSchedule(agent, { every_seconds: 3600, text: `s${i}` });
    const over = await call("POST", `/agents/${agent}/schedules`, { every_seconds: 3600, text: "one more" });
    expect(over).toMatchObject({ status: 409, body: { error: "too_many_schedules" } });
    expect(((await call("GET", `/agents/${agent}/schedules`)).body.schedules as unknown[]).length).toBe(LIMITS.schedulesPerAgent);
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName("dev")));
    await waitFor(async () => (await directory.schedulesBesides(uniqueAgent())) >= LIMITS.schedulesPerAgent, "the directory to count the agent's schedules");
    expect(await directory.schedulesBesides(agent)).toBeLessThan(await directory.schedulesBesides(uniqueAgent()));
    const other = uniqueAgent();
    const refused = await stubFor(other).addSchedule({ every_seconds: 3600, text: "x" }, LIMITS.schedulesPerAccount);
    expect(refused).toMatchObject({ ok: false, status: 409, code: "too_many_schedules" });
    expect((await call("GET", `/agents/${other}/schedules`)).body.schedules).toEqual([]);
  });
});

describe("the account's schedule limit under concurrent adds", () => {
  it("two adds in two agents at once, one place left: the directory reserves it for the first, the second sees the account full", async () => {
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(`acct-${crypto.randomUUID()}`)));
    await directory.setScheduleCount("filler", LIMITS.schedulesPerAccount - 1);
    const seen = await Promise.all([directory.reserveSchedule("a"), directory.reserveSchedule("b")]);
    expect([...seen].sort()).toEqual([LIMITS.schedulesPerAccount - 1, LIMITS.schedulesPerAccount]);
    // The first add lands and is counted: its reservation goes with it, and the account stays full.
    await directory.setScheduleCount(seen[0] === LIMITS.schedulesPerAccount - 1 ? "a" : "b", 1);
    expect(await directory.reserveSchedule("c")).toBeGreaterThanOrEqual(LIMITS.schedulesPerAccount);
  });
});

describe("the DST table under workerd's Intl", () => {
  const cases: [string, string, string[]][] = [
    ["Europe/Berlin", "2026-03-28T12:00:00Z", ["2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"]],
    ["America/New_York", "2026-03-07T12:00:00Z", ["2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"]],
    ["Europe/Berlin", "2026-10-24T12:00:00Z", ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]],
    ["America/New_York", "2026-10-31T12:00:00Z", ["2026-11-01T07:30:00.000Z", "2026-11-02T07:30:00.000Z"]],
  ];
  for (const [tz, from, expected] of cases) {
    it(`02:30 daily in ${tz} from ${from}: once per day`, () => {
      const createdAt = Date.parse(from);
      const checked = checkSchedule({ cron: "30 2 * * *", tz, text: "x" }, createdAt);
      if (!checked.ok) throw new Error(checked.message);
      let s: ScheduleState = { id: 1, cadence: checked.cadence, createdAt, lastSlot: null, missed: null, paused: false, catchUp: "one", jitterMs: 0 };
      const posted: string[] = [];
      for (let now = createdAt; now < createdAt + 2 * 86_400_000; now += 5 * MIN) {
        const d = decideSchedule(s, false, now);
        posted.push(...d.post.map((t) => new Date(t).toISOString()));
        s = { ...s, lastSlot: d.lastSlot, missed: d.missed };
      }
      expect(posted).toEqual(expected);
    });
  }
});
