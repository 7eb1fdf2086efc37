// `npm run bench -- --only preference`: how long a preferred runner waits for the lease. Each trial
// serves a fresh agent with the client library in this process: a holder of priority 0, then a
// runner of priority 10. Measured from the preferred runner's first serve_lease frame (it is a
// standby, its connection ready) to its held:true. The coordinator moves the lease when that
// connection has been open for the hysteresis, by an alarm, so the figure should be about the
// hysteresis plus one alarm; the coordinator's own view (its transition time minus the
// connection's join) is shown beside it.
import { serve, type ServeHandle, type ServeStatus } from "../../client/node.ts";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import type { Presence } from "../../worker/wire/server-frames.ts";
import { fmt, markdownTable, percentile } from "./stats.ts";

const TRIAL_TIMEOUT_MS = 30_000;
const PREFERRED_PRIORITY = 10;
let counter = 0;

interface Runner {
  handle: ServeHandle;
  /** performance.now() of the first status of each kind. */
  firstAt: Partial<Record<ServeStatus["kind"], number>>;
  reached(kind: ServeStatus["kind"]): Promise<number>;
}

function runner(url: string, agent: string, machine: string, priority: number): Runner {
  const firstAt: Runner["firstAt"] = {};
  const waiting = new Map<ServeStatus["kind"], () => void>();
  const handle = serve(agent, async () => "", {
    url, token: DEV_TOKEN, machine, priority,
    onStatus: (s) => {
      firstAt[s.kind] ??= performance.now();
      waiting.get(s.kind)?.();
    },
  });
  return {
    handle, firstAt,
    reached: (kind) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${machine}: no ${kind} within ${TRIAL_TIMEOUT_MS} ms`)), TRIAL_TIMEOUT_MS);
      const done = () => {
        clearTimeout(timer);
        waiting.delete(kind);
        resolve(firstAt[kind]!);
      };
      if (firstAt[kind] !== undefined) done();
      else waiting.set(kind, done);
    }),
  };
}

interface Sample {
  /** Client side: the preferred runner's first standby frame to its held:true (ms). */
  readyToHeld: number;
  /** Coordinator side: the connection's join to the `preferred` transition (ms, the object's clock). */
  joinToMove: number;
}

async function trial(url: string): Promise<Sample> {
  const agent = `bench-preference-${process.pid}-${++counter}`;
  const low = runner(url, agent, "low", 0);
  let high: Runner | null = null;
  try {
    await low.reached("holder");
    high = runner(url, agent, "preferred", PREFERRED_PRIORITY);
    const ready = await high.reached("standby");
    const held = await high.reached("holder");
    const res = await fetch(`${url}/agents/${agent}/presence`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    const presence = (await res.json()) as Presence;
    const move = presence.transitions.find((t) => t.reason === "preferred" && t.to_machine === "preferred");
    const joined = presence.connections.find((c) => c.machine === "preferred")?.joined_at;
    if (!move || joined === undefined) throw new Error(`no preferred move in ${JSON.stringify(presence.transitions)}`);
    return { readyToHeld: held - ready, joinToMove: move.at - joined };
  } finally {
    await Promise.allSettled([low.handle.stop(), high?.handle.stop()]);
  }
}

/** Runs the trials against a wrangler dev started with BATON_PREFERENCE_HYSTERESIS_SECONDS=hysteresisSeconds. */
export async function runPreference(url: string, hysteresisSeconds: number, trials: number): Promise<string> {
  const samples: Sample[] = [];
  let failures = 0;
  for (let i = 0; i < trials; i++) {
    try {
      samples.push(await trial(url));
    } catch (e) {
      failures += 1;
      console.error(`  preference trial ${i}: ${(e as Error).message}`);
    }
  }
  console.log("  preference: done");
  const hysteresisMs = hysteresisSeconds * 1000;
  const row = (label: string, values: number[]) => {
    const p50 = percentile(values, 50);
    return [label, fmt(p50), fmt(percentile(values, 99)), fmt(Math.min(...values)), fmt(Math.max(...values)), fmt(p50 - hysteresisMs)];
  };
  const table = markdownTable(["preferred runner (ms)", "p50", "p99", "min", "max", "p50 minus hysteresis"], [
    row("ready (first serve_lease, standby) to held:true, client clock", samples.map((s) => s.readyToHeld)),
    row("join to the `preferred` transition, coordinator clock", samples.map((s) => s.joinToMove)),
  ]);
  return `### Preferred runner: ready to holding

\`BATON_PREFERENCE_HYSTERESIS_SECONDS=${hysteresisSeconds}\` (${fmt(hysteresisMs)} ms). ${samples.length} trials${failures ? ` (${failures} failed)` : ""}, each a fresh agent:
an idle holder of priority 0, then a runner of priority ${PREFERRED_PRIORITY}, both on the client library in the bench's process.

${table}`;
}
