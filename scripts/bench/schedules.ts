// Schedules: how late a slot's message is posted, and what many schedules cost.
//
// - injected clock: one `every 60 s` schedule, its agent's clock moved a minute at a time through
//   `slots` slots (POST /test/clock runs the alarm that falls due); the lateness each fire records
//   (coordinator time, slot to post: 0 when the alarm runs at its slot) and the wall time of one
//   move with its fire;
// - real clock: `realSlots` one-offs a second apart on an agent whose clock is the runtime's; the
//   lateness is the message's created_at minus its slot (workerd's alarm timing included);
// - scale: `schedules` schedules spread over `agents` agents, every agent's clock moved one minute:
//   fires per second of wall time, and alarms run per schedule-hour over an hour of one agent.
import { advanceClock, DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import type { ScheduleView } from "../../worker/wire/schedules.ts";
import { fmt, markdownTable, summarize } from "./stats.ts";

const MIN = 60_000;

function headers(): Record<string, string> {
  return { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };
}

async function add(url: string, agent: string, body: Record<string, unknown>): Promise<ScheduleView> {
  const res = await fetch(`${url}/agents/${agent}/schedules`, { method: "POST", headers: headers(), body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`adding a schedule failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as ScheduleView;
}

async function messages(url: string, agent: string, after = 0): Promise<{ id: number; created_at: number; text: string }[]> {
  const res = await fetch(`${url}/agents/${agent}/messages?after=${after}&limit=1000`, { headers: headers() });
  return ((await res.json()) as { messages: { id: number; created_at: number; text: string }[] }).messages;
}

async function show(url: string, agent: string, id: number): Promise<ScheduleView> {
  return (await (await fetch(`${url}/agents/${agent}/schedules/${id}`, { headers: headers() })).json()) as ScheduleView;
}

export interface ScheduleBenchOptions {
  slots: number;
  realSlots: number;
  schedules: number;
  agents: number;
}

export async function runSchedules(url: string, o: ScheduleBenchOptions): Promise<string> {
  const tag = `${process.pid}-${Date.now().toString(36)}`;
  // Injected clock.
  const agent = `bench-sched-${tag}`;
  await advanceClock(url, 0, { agent });
  const s = await add(url, agent, { every_seconds: 60, text: "tick" });
  const moves: number[] = [];
  const lateness: number[] = [];
  for (let i = 0; i < o.slots; i++) {
    const t0 = performance.now();
    await advanceClock(url, MIN, { agent });
    moves.push(performance.now() - t0);
    if ((i + 1) % 20 === 0 || i === o.slots - 1) lateness.push(...(await show(url, agent, s.id)).fires.slice(0, Math.min(20, (i % 20) + 1)).map((f) => f.at - f.slot));
  }
  // History keeps the newest messages only: the last id is how many were posted.
  const posted = (await messages(url, agent, o.slots - 10)).at(-1)?.id ?? 0;
  if (posted !== o.slots) throw new Error(`injected clock: ${o.slots} slots posted ${posted} messages`);

  // Real clock: one-offs a second apart.
  const real = `bench-sched-real-${tag}`;
  const made: number[] = [];
  for (let i = 1; i <= o.realSlots; i++) made.push((await add(url, real, { in_seconds: i, text: `r${i}` })).at!);
  const deadline = Date.now() + (o.realSlots + 30) * 1000;
  let got = await messages(url, real);
  while (got.length < o.realSlots && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    got = await messages(url, real);
  }
  const realLate = got.map((m) => m.created_at - made[Number(m.text.slice(1)) - 1]!);

  // Scale: schedules over agents, every clock moved one minute.
  const per = Math.ceil(o.schedules / o.agents);
  const names = Array.from({ length: o.agents }, (_, i) => `bench-sched-${tag}-a${i}`);
  for (const name of names) {
    await advanceClock(url, 0, { agent: name });
    for (let k = 0; k < per; k++) await add(url, name, { every_seconds: 60, text: `s${k}` });
  }
  const t0 = performance.now();
  await Promise.all(names.map((name) => advanceClock(url, MIN, { agent: name })));
  const elapsed = (performance.now() - t0) / 1000;
  let fired = 0;
  for (const name of names) fired += (await messages(url, name)).length;
  let alarms = 0;
  for (let m = 0; m < 60; m++) alarms += (await advanceClock(url, MIN, { agent: names[0]! })).alarmsRun;

  const inj = summarize(lateness);
  const mv = summarize(moves);
  const rl = summarize(realLate);
  return [
    "## Schedules",
    "",
    markdownTable(["measure", "n", "p50", "p99"], [
      ["lateness, injected clock (slot to post, coordinator ms)", String(inj.count), fmt(inj.p50), fmt(inj.p99)],
      ["one clock move with its fire (wall ms)", String(mv.count), fmt(mv.p50), fmt(mv.p99)],
      ["lateness, real clock (slot to message created_at, ms)", String(rl.count), fmt(rl.p50), fmt(rl.p99)],
    ]),
    "",
    `${fired} of ${per * o.agents} schedules over ${o.agents} agents fired in ${fmt(elapsed)} s: ${fmt(fired / elapsed)} fires/s; ` +
      `one agent's ${per} schedules over an hour: ${alarms} alarms, ${fmt(alarms / per)} per schedule-hour (60 slots each: at most one alarm per minute for all of them).`,
    "",
  ].join("\n");
}
