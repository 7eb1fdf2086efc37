// How often idle serve connections wake the agent's Durable Object. Reads the `wakes` counter of
// GET /agents/{agent}/presence before and after a window in which connections only heartbeat.
// A control group sends a ping that is not byte-exact, which the runtime cannot auto-answer, so
// every one of its heartbeats wakes the object: that proves the counter counts.
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { BatonCandidate } from "./candidates.ts";

export interface WakeGroup {
  label: string;
  connections: number;
  pingText: string;
}

export interface WakeResult extends WakeGroup {
  wakes: number;
  windowSeconds: number;
  perObjectHour: number;
  perConnectionHour: number;
}

async function wakesOf(url: string, agent: string): Promise<number | null> {
  const res = await fetch(`${url}/agents/${agent}/presence`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
  const body = (await res.json()) as { wakes?: unknown };
  return typeof body.wakes === "number" ? body.wakes : null;
}

/** Null when the coordinator does not report `wakes` yet. All groups share one window. */
export async function measureWakes(url: string, ttlSeconds: number, windowSeconds: number, groups: WakeGroup[]): Promise<WakeResult[] | null> {
  const agents = groups.map((_, i) => `bench-wakes-${process.pid}-${i}`);
  const conns: BatonCandidate[] = [];
  try {
    for (const [i, g] of groups.entries()) {
      const group: BatonCandidate[] = [];
      for (let k = 0; k < g.connections; k++) group.push(new BatonCandidate(url, agents[i]!, `idle-${k}`, ttlSeconds * 1000, g.pingText));
      conns.push(...group);
      await Promise.all(group.map((c) => c.registered)).catch((e: Error) => {
        throw new Error(`wakes group "${g.label}": ${e.message}`);
      });
    }
    // Let the claim burst settle so the window only holds steady-state traffic.
    await new Promise((r) => setTimeout(r, 1000));
    const before = await Promise.all(agents.map((a) => wakesOf(url, a)));
    if (before.some((w) => w === null)) return null;
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, windowSeconds * 1000));
    const after = await Promise.all(agents.map((a) => wakesOf(url, a)));
    const seconds = (performance.now() - t0) / 1000;
    const dropped = conns.filter((c) => c.closeCode !== null);
    if (dropped.length > 0) {
      throw new Error(`${dropped.length} idle connections were closed during the window (codes ${[...new Set(dropped.map((c) => c.closeCode))].join(", ")})`);
    }
    return groups.map((g, i) => {
      // The closing presence request wakes the object once itself.
      const wakes = after[i]! - before[i]! - 1;
      const perObjectHour = (wakes / seconds) * 3600;
      return { ...g, wakes, windowSeconds: seconds, perObjectHour, perConnectionHour: perObjectHour / g.connections };
    });
  } finally {
    for (const c of conns) c.close();
  }
}
