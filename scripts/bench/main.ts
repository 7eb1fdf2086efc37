// `npm run bench`: baton (wrangler dev) and etcd side by side on loopback with the same TTL.
// Trials of the two systems are interleaved so both see the same machine load; the table gives
// p50/p99 per system and the baton/etcd ratio. Everything started here is stopped at the end.
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { DevServer } from "../../test/e2e/wrangler-dev.ts";
import { ensureEtcdInstalled, startEtcd, type EtcdServer } from "./etcd.ts";
import { renderReport, type ScenarioResult } from "./report.ts";
import {
  acquisitionRound, batonSystem, etcdSystem, gracefulTrial, hasSessionLeases, signalTrial, type System, type SystemName,
} from "./scenarios.ts";
import { REPO_ROOT, snapshotOfHead, workingTree, wranglerDevOf } from "./snapshot.ts";
import { measureWakes } from "./wakes.ts";

const { values: opts } = parseArgs({
  options: {
    trials: { type: "string", default: "20" },
    ttl: { type: "string", default: "2" },
    keys: { type: "string", default: "200" },
    concurrency: { type: "string", default: "16" },
    "wake-seconds": { type: "string", default: "60" },
    only: { type: "string", default: "graceful,crash,stop,acquire,wakes" },
    write: { type: "boolean", default: false },
    "working-tree": { type: "boolean", default: false },
  },
});
const trials = Number(opts.trials);
const ttlSeconds = Number(opts.ttl);
const keys = Number(opts.keys);
const concurrency = Number(opts.concurrency);
const wakeSeconds = Number(opts["wake-seconds"]);
const only = new Set(opts.only.split(","));
const scanSeconds = Math.max(1, Math.floor(ttlSeconds / 2));

const tree = opts["working-tree"] ? workingTree() : snapshotOfHead();
let dev: DevServer | null = null;
let etcd: EtcdServer | null = null;
async function stopAll(): Promise<void> {
  await Promise.allSettled([dev?.stop(), etcd?.stop()]);
  tree.dispose();
}
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => void stopAll().then(() => process.exit(130)));
}

/** Runs `trial` for both systems `count` times, alternating which goes first. */
async function interleaved(label: string, systems: [System, System], count: number, trial: (s: System) => Promise<number>): Promise<ScenarioResult> {
  const samples: Record<SystemName, number[]> = { baton: [], etcd: [] };
  const failures: Record<SystemName, number> = { baton: 0, etcd: 0 };
  for (let i = 0; i < count; i++) {
    for (const sys of i % 2 === 0 ? systems : [systems[1], systems[0]]) {
      try {
        samples[sys.name].push(await trial(sys));
      } catch (e) {
        failures[sys.name] += 1;
        console.error(`  ${label} ${sys.name} trial ${i}: ${(e as Error).message}`);
      }
    }
  }
  process.stdout.write(`  ${label}: done\n`);
  return { label, baton: samples.baton, etcd: samples.etcd, failures };
}

async function main(): Promise<number> {
  ensureEtcdInstalled();
  console.log(`starting wrangler dev of ${tree.revision} (TTL ${ttlSeconds} s, scan ${scanSeconds} s) and etcd on loopback...`);
  const { startWranglerDev } = await wranglerDevOf(tree);
  [dev, etcd] = await Promise.all([
    startWranglerDev({
      vars: { BATON_HEARTBEAT_TTL_SECONDS: String(ttlSeconds), BATON_PRESENCE_SCAN_SECONDS: String(scanSeconds) },
    }),
    startEtcd(),
  ]);
  const sessionLeases = await hasSessionLeases(dev.url);
  const systems: [System, System] = [batonSystem(dev.url, ttlSeconds, sessionLeases), etcdSystem(etcd.url, ttlSeconds)];
  // Warm-up: first requests compile the Worker and open connections; not recorded.
  for (const s of systems) await gracefulTrial(s);

  const results: ScenarioResult[] = [];
  if (only.has("graceful")) results.push(await interleaved("graceful handoff (ms)", systems, trials, gracefulTrial));
  if (only.has("crash")) results.push(await interleaved("crash, SIGKILL holder (ms)", systems, trials, (s) => signalTrial(s, "SIGKILL")));
  if (only.has("stop")) results.push(await interleaved("silent holder, SIGSTOP (ms)", systems, trials, (s) => signalTrial(s, "SIGSTOP")));

  const rounds = 3;
  const acquire: ScenarioResult = { label: `acquire a fresh key, ${concurrency} at a time (ms)`, baton: [], etcd: [], failures: { baton: 0, etcd: 0 } };
  const rates: Record<string, number[]> = { baton: [], etcd: [] };
  for (let i = 0; i < (only.has("acquire") ? rounds : 0); i++) {
    for (const sys of i % 2 === 0 ? systems : [systems[1], systems[0]]) {
      const r = await acquisitionRound(sys, Math.ceil(keys / rounds), concurrency);
      acquire[sys.name].push(...r.latencies);
      rates[sys.name]!.push(r.perSecond);
    }
  }
  if (only.has("acquire")) {
    results.push(acquire);
    console.log("  acquisitions: done");
  }

  const wakes = !only.has("wakes") ? null : await measureWakes(dev.url, ttlSeconds, wakeSeconds, [
    { label: "idle, 1 connection", connections: 1, pingText: '{"type":"ping"}' },
    { label: "idle, 20 connections", connections: 20, pingText: '{"type":"ping"}' },
    { label: "control: 20 connections, non-exact ping", connections: 20, pingText: '{"type": "ping"}' },
  ]);

  const report = renderReport({
    date: new Date().toISOString(),
    command: `npm run bench -- ${process.argv.slice(2).join(" ")}`.trim(),
    revision: tree.revision,
    machine: `${cpus().length} x ${cpus()[0]?.model ?? "?"}, Node ${process.version}`,
    etcdVersion: etcd.version,
    ttlSeconds, scanSeconds, trials, keys, concurrency,
    acquireMode: sessionLeases ? "POST /leases/{session}/acquire" : "serve-lease claim on a fresh agent (WebSocket connect + claim)",
    results, rates, wakes,
  });
  console.log(`\n${report}`);
  if (opts.write) {
    writeFileSync(join(REPO_ROOT, "docs/benchmarks.md"), report);
    console.log("wrote docs/benchmarks.md");
  }
  return 0;
}

main()
  .catch((e: Error) => {
    console.error(e.stack ?? e.message);
    return 1;
  })
  .then(async (code) => {
    await stopAll();
    process.exit(code);
  });
