// Schedules for real: made with the CLI against `wrangler dev`, slots fall due on the test clock
// (BATON_TEST_CLOCK), and the coordinator is killed (kill -9) and started again on the same state
// between slots and around a fire. Each slot posts exactly one message; catch-up after a pause
// posts the latest missed slot (one) or nothing (none); `baton send --in` posts once, later.
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, getJson, uniqueAgent } from "./serve-helpers.ts";
import { advanceClock, DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import type { ScheduleView } from "../../worker/wire/schedules.ts";

const MIN = 60_000;
let dev: DevServer;

beforeAll(async () => {
  dev = await startWranglerDev();
});
afterAll(async () => {
  await dev?.stop();
});

async function restart(): Promise<void> {
  await dev.crash();
  dev = await startWranglerDev({ port: dev.port, persistDir: dev.persistDir });
}

function baton(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args, "--url", dev.url, "--token", DEV_TOKEN], { cwd: ROOT, encoding: "utf8", timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function batonJson<T>(args: string[]): T {
  const r = baton([...args, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

async function texts(agent: string): Promise<string[]> {
  return (await getJson<{ messages: { text: string }[] }>(`${dev.url}/agents/${agent}/messages`)).messages.map((m) => m.text);
}

describe("schedules on wrangler dev", () => {
  it("a schedule made with the CLI posts each slot once, across a restart between slots and one around a fire", async () => {
    const agent = uniqueAgent("sched");
    const start = (await advanceClock(dev.url, 0, { agent })).now;
    const made = batonJson<ScheduleView>(["schedule", "add", agent, "--every", "1m", "tick"]);
    expect(made).toMatchObject({ every_seconds: 60, next_slot: start + MIN });
    await advanceClock(dev.url, MIN, { agent });
    expect(await texts(agent)).toEqual(["tick"]);

    await restart();
    await advanceClock(dev.url, MIN, { agent });
    expect(await texts(agent)).toEqual(["tick", "tick"]);

    // The third slot falls due and the coordinator dies at once, before or during the fire.
    const firing = advanceClock(dev.url, MIN, { agent }).catch(() => null);
    await dev.crash();
    await firing;
    dev = await startWranglerDev({ port: dev.port, persistDir: dev.persistDir });
    // The kill may have come before the clock's move was stored: then it is moved again.
    const { now } = await advanceClock(dev.url, 0, { agent });
    if (now < start + 3 * MIN) await advanceClock(dev.url, start + 3 * MIN - now, { agent });
    expect(await texts(agent)).toEqual(["tick", "tick", "tick"]);

    const shown = batonJson<ScheduleView>(["schedule", "show", agent, String(made.id)]);
    const posted = shown.fires.filter((f) => f.outcome === "posted");
    expect(posted.map((f) => f.slot).sort()).toEqual([start + MIN, start + 2 * MIN, start + 3 * MIN]);
    expect(new Set(posted.map((f) => f.message_id)).size).toBe(3);
    const listed = baton(["schedule", "list", agent]);
    expect(listed.stdout).toContain(`${made.id}  every 60 s`);
  });

  it("catch-up after a pause: one posts the latest missed slot on resume, none posts nothing", async () => {
    for (const catchUp of ["one", "none"] as const) {
      const agent = uniqueAgent(`catch-${catchUp}`);
      await advanceClock(dev.url, 0, { agent });
      const made = batonJson<ScheduleView>(["schedule", "add", agent, "--every", "1m", "--catch-up", catchUp, "beat"]);
      expect(baton(["schedule", "pause", agent, String(made.id)]).code).toBe(0);
      await advanceClock(dev.url, MIN, { agent });
      await advanceClock(dev.url, MIN + 30_000, { agent });
      expect(baton(["schedule", "resume", agent, String(made.id)]).code).toBe(0);
      expect(await texts(agent)).toEqual(catchUp === "one" ? ["beat"] : []);
      const shown = batonJson<ScheduleView>(["schedule", "show", agent, String(made.id)]);
      expect(shown.fires.filter((f) => f.outcome === "skipped").map((f) => f.reason)).toEqual(["paused", "paused"]);
    }
  });

  it("baton send --in posts once, later; a bad cron is refused naming its field and nothing is stored", async () => {
    const agent = uniqueAgent("later");
    await advanceClock(dev.url, 0, { agent });
    const sent = baton(["send", agent, "later on", "--in", "10m"]);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/^scheduled for .* as schedule 1 of /);
    await advanceClock(dev.url, 10 * MIN - 1, { agent });
    expect(await texts(agent)).toEqual([]);
    await advanceClock(dev.url, 1, { agent });
    expect(await texts(agent)).toEqual(["later on"]);
    const bad = baton(["schedule", "add", agent, "--cron", "0 9 * 13 *", "--tz", "Europe/Berlin", "x"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('cron field 4 (month) "13"');
    expect(batonJson<{ schedules: unknown[] }>(["schedule", "list", agent]).schedules).toEqual([]);
  });
});
