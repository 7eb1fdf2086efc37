// What baton shows after a coordinator crash is true: an agent whose holder died with the
// coordinator and never came back is shown without a holder (or as unknown) by GET /agents,
// `baton who` and /metrics within three heartbeat TTLs of the restart. The crash is real: kill -9
// of wrangler dev, then a new wrangler dev on the same state.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentMetrics, sampleValue } from "./prometheus.ts";
import { getJson, runBaton, startServe, uniqueAgent, writeSinkCommand, type ServeProc } from "./serve-helpers.ts";
import { startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DirectoryEntry } from "../../worker/wire/protocol.ts";

const TTL_S = 2;
const VARS = { BATON_HEARTBEAT_TTL_SECONDS: String(TTL_S), BATON_PRESENCE_SCAN_SECONDS: "1", BATON_RESTART_GRACE_SECONDS: "1" };
let dev: DevServer;
const serves: ServeProc[] = [];

beforeAll(async () => {
  dev = await startWranglerDev({ vars: VARS });
});
afterAll(async () => {
  await Promise.all(serves.map((s) => s.stop()));
  await dev?.stop();
});

async function listed(agent: string): Promise<DirectoryEntry | undefined> {
  return (await getJson<{ agents: DirectoryEntry[] }>(`${dev.url}/agents`)).agents.find((a) => a.agent === agent);
}

/** What each view says of the agent's holder: a machine when it claims a live one. */
async function views(agent: string) {
  const entry = await listed(agent);
  const metrics = await (await fetch(`${dev.url}/metrics`, { headers: { authorization: "Bearer baton-dev-token" } })).text();
  const who = runBaton(["who"], { BATON_URL: dev.url });
  return {
    directory: entry && entry.confirmed && entry.holder ? entry.holder.machine : null,
    metricsHolders: sampleValue(agentMetrics(metrics, agent), "baton_agent_holders") ?? 0,
    who: who.stdout.split("\n").find((l) => l.startsWith(`${agent}: holder`)) ?? null,
  };
}

describe("after a coordinator crash", () => {
  it("no view shows the dead holder three TTLs after the restart", async () => {
    const agent = uniqueAgent("ghost");
    const { command, sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-ghost-")));
    const holder = startServe({ url: dev.url, agent, tag: "a", command, sink });
    serves.push(holder);
    await holder.waitFor(/holder/);
    await expect.poll(() => views(agent), { timeout: 10_000 }).toMatchObject({ directory: "machine-a", metricsHolders: 1 });
    expect((await views(agent)).who).toContain("machine-a");

    await dev.crash();
    await holder.stop();
    dev = await startWranglerDev({ vars: VARS, port: dev.port, persistDir: dev.persistDir });
    const restarted = Date.now();
    let truthAt: number | null = null;
    while (Date.now() - restarted < 3 * TTL_S * 1000 + 1500) {
      const seen = await views(agent);
      if (seen.directory === null && seen.metricsHolders === 0 && seen.who === null) {
        truthAt ??= Date.now() - restarted;
      } else {
        truthAt = null;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    // True by three TTLs after the restart, and it stays true.
    expect(truthAt).not.toBeNull();
    expect(truthAt!).toBeLessThanOrEqual(3 * TTL_S * 1000);
    console.log(`after the restart, every view was true ${truthAt} ms later`);
    // The agent object, woken by its alarm without its name, still knows who it is.
    const direct = await getJson<{ agent: string; holder: unknown }>(`${dev.url}/agents/${agent}/presence`);
    expect(direct).toMatchObject({ agent, holder: null });
  }, 90_000);
});
