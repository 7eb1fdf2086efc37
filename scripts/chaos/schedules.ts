// `npm run chaos -- --mode schedules`: schedules through coordinator restarts and clock jumps. A
// wrangler dev of this tree (BATON_TEST_CLOCK) carries `--agents` agents with `--per-agent`
// schedules each (every 60 s). For `--rounds` rounds, random agents' clocks jump 1-5 minutes (so
// every slot is within the late grace and must be posted), and now and then the coordinator is
// killed (kill -9) while jumps and their fires are in flight, then started again on its state. At
// the end an audit: for each schedule, exactly one message per slot from its creation to its
// agent's time now, no slot twice. Exits non-zero on any violation; everything it starts is stopped.
import { parseArgs } from "node:util";
import { advanceClock, DEV_TOKEN, startWranglerDev, type DevServer } from "../../test/e2e/wrangler-dev.ts";
import type { ScheduleView } from "../../worker/wire/schedules.ts";
import { seeded } from "./seeded.ts";

const { values: opts } = parseArgs({
  options: {
    agents: { type: "string", default: "5" },
    "per-agent": { type: "string", default: "3" },
    rounds: { type: "string", default: "40" },
    "restart-every": { type: "string", default: "10" },
    seed: { type: "string" },
    mode: { type: "string" },
  },
});
const MIN = 60_000;
const seed = Number(opts.seed ?? Date.now() % 1_000_000);
const { random } = seeded(seed);
const headers = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };
let dev: DevServer;

async function json<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${dev.url}${path}`, { ...init, headers });
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function main(): Promise<number> {
  dev = await startWranglerDev();
  const agents = Array.from({ length: Number(opts.agents) }, (_, i) => `chaos-sched-${process.pid}-${i}`);
  const made = new Map<string, ScheduleView[]>();
  for (const agent of agents) {
    await advanceClock(dev.url, 0, { agent });
    const list: ScheduleView[] = [];
    for (let k = 0; k < Number(opts["per-agent"]); k++) {
      list.push(await json<ScheduleView>(`/agents/${agent}/schedules`, { method: "POST", body: JSON.stringify({ every_seconds: 60, text: `s${k}` }) }));
    }
    made.set(agent, list);
  }
  let restarts = 0;
  let jumps = 0;
  for (let round = 1; round <= Number(opts.rounds); round++) {
    const movers = agents.filter(() => random() < 0.5);
    const moving = movers.map((agent) => advanceClock(dev.url, (1 + Math.floor(random() * 5)) * MIN, { agent }).then(() => void jumps++).catch(() => undefined));
    if (round % Number(opts["restart-every"]) === 0) {
      // Killed while the jumps above and their fires are in flight.
      await new Promise((r) => setTimeout(r, Math.floor(random() * 30)));
      await dev.crash();
      await Promise.all(moving);
      dev = await startWranglerDev({ port: dev.port, persistDir: dev.persistDir });
      restarts++;
    } else await Promise.all(moving);
  }
  // Audit: every agent's alarm is run at its time now (advance of nothing), then every slot counted.
  const violations: string[] = [];
  let slots = 0;
  for (const agent of agents) {
    const { now } = await advanceClock(dev.url, 0, { agent });
    const texts = (await json<{ messages: { text: string }[] }>(`/agents/${agent}/messages?limit=1000`)).messages.map((m) => m.text);
    for (const [k, s] of made.get(agent)!.entries()) {
      const due = Math.floor((now - s.created_at) / MIN);
      const posted = texts.filter((t) => t === `s${k}`).length;
      slots += due;
      if (posted !== due) violations.push(`${agent} schedule ${s.id}: ${due} slots due by ${new Date(now).toISOString()}, ${posted} messages posted`);
      const view = await json<ScheduleView>(`/agents/${agent}/schedules/${s.id}`);
      const fired = view.fires.filter((f) => f.outcome === "posted").map((f) => f.slot);
      if (new Set(fired).size !== fired.length) violations.push(`${agent} schedule ${s.id}: a slot recorded posted twice`);
      if (view.fires.some((f) => f.outcome === "skipped")) violations.push(`${agent} schedule ${s.id}: a slot within the late grace was skipped`);
    }
  }
  console.log(`chaos schedules (seed ${seed}): ${agents.length} agents x ${opts["per-agent"]} schedules, ${jumps} clock jumps, ${restarts} coordinator restarts, ${slots} slots due`);
  for (const v of violations) console.log(`VIOLATION ${v}`);
  console.log(violations.length === 0 ? "every due slot posted exactly one message" : `${violations.length} violations`);
  return violations.length === 0 ? 0 : 1;
}

main()
  .catch((e: Error) => {
    console.error(e.stack ?? e.message);
    return 1;
  })
  .then(async (code) => {
    await dev?.stop();
    process.exit(code);
  });
