// `npm run bench`: baton (wrangler dev), the floor probe (its own wrangler dev) and etcd side by
// side on loopback with the same TTL. Trials of the systems are interleaved so all see the same
// machine load; the report gives p50/p99 per system and the ratios. `--only a,b` picks scenarios
// (names in SCENARIOS). Everything started here is stopped at the end.
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { DevServer } from "../../test/e2e/wrangler-dev.ts";
import { DEFAULT } from "../../worker/config.ts";
import { ensureEtcdInstalled, startEtcd, type EtcdServer } from "./etcd.ts";
import { startFloor, type FloorServer } from "./floor.ts";
import { renderReport, writeReport, type LeaseResult, type ScenarioResult } from "./report.ts";
import {
  batonLeases, batonSystem, etcdLeases, etcdSystem, floorLeases, floorSystem, freshKeysRound, gracefulTrial, hotKeyRound, signalTrial,
  type AcquireRound, type LeaseSystem, type System, type SystemName,
} from "./scenarios.ts";
import { REPO_ROOT, snapshotOfHead, workingTree, wranglerDevOf } from "./snapshot.ts";
import { runPreference } from "./preference.ts";
import { runCancel } from "./cancel.ts";
import { runHook } from "./hook.ts";
import { runOutput } from "./output.ts";
import { runTracing } from "./tracing.ts";
import { runMcp } from "./mcp.ts";
import { runScale } from "./scale.ts";
import { runSteady } from "./steady.ts";
import { runSteps } from "./steps.ts";
import { runUpload } from "./upload.ts";
import { permitIntents } from "./permits.ts";
import { measureWakes, type WakeResult } from "./wakes.ts";
import { runSchedules } from "./schedules.ts";
import { runA2A } from "./a2a.ts";

const { values: opts } = parseArgs({
  options: {
    trials: { type: "string", default: "20" },
    ttl: { type: "string", default: "2" },
    keys: { type: "string", default: "600" },
    concurrency: { type: "string", default: "16" },
    "wake-seconds": { type: "string", default: "60" },
    hysteresis: { type: "string", default: "2" },
    only: { type: "string" },
    "output-frames": { type: "string", default: "200" },
    write: { type: "boolean", default: false },
    "working-tree": { type: "boolean", default: false },
    "schedule-slots": { type: "string", default: "1000" },
    "schedule-count": { type: "string", default: "1000" },
    "schedule-agents": { type: "string", default: "100" },
    /** Measure another commit's baton (e.g. the one before a change) with this tree's bench and floor. */
    revision: { type: "string" },
  },
});
const trials = Number(opts.trials);
const ttlSeconds = Number(opts.ttl);
const keys = Number(opts.keys);
const concurrency = Number(opts.concurrency);
const wakeSeconds = Number(opts["wake-seconds"]);
const hysteresisSeconds = Number(opts.hysteresis);
const scanSeconds = Math.max(1, Math.floor(ttlSeconds / 2));
const ROUNDS = 3;
/** Baton's session-lease shard count under this bench (it sets no BATON_LEASE_SHARDS). */
const LEASE_SHARDS = DEFAULT.leaseShards;

/** What a scenario may use and where it leaves its figures. */
interface Bench {
  dev: DevServer;
  /** Starts another wrangler dev of the same tree (stopped with everything else, also on Ctrl-C). */
  startDev(vars: Record<string, string>): Promise<DevServer>;
  /** The tree's built CLI. */
  cli: string;
  handoff: System[];
  /** Lease systems for fresh keys (etcd: a lease per key) and for a hot key (etcd: a session lease per client). */
  leases: { fresh: LeaseSystem[]; hot: LeaseSystem[]; freshSharded: LeaseSystem[] };
  results: ScenarioResult[];
  leaseResults: LeaseResult[];
  wakes: WakeResult[] | null;
  /** Extra markdown sections for the report, in order. */
  sections: string[];
}

interface Scenario {
  /** Which side servers it needs besides baton's wrangler dev. */
  needs: ("etcd" | "floor")[];
  run(b: Bench): Promise<void>;
}

const SCENARIOS: Record<string, Scenario> = {
  graceful: { needs: ["etcd", "floor"], run: (b) => interleaved(b, "graceful handoff: release to held", b.handoff, gracefulTrial) },
  crash: {
    needs: ["etcd", "floor"],
    run: (b) => interleaved(b, "clean-close failover: holder SIGKILLed", b.handoff, (s) => signalTrial(s, "SIGKILL")),
  },
  stop: {
    needs: ["etcd"],
    run: (b) => interleaved(b, "silent holder: SIGSTOPped", b.handoff.filter((s) => s.name !== "floor"), (s) => signalTrial(s, "SIGSTOP")),
  },
  steady: {
    needs: ["floor"],
    run: async (b) => void b.results.push(await runSteady(b.dev.url, b.handoff.find((s) => s.name === "floor")!.url, ttlSeconds, trials)),
  },
  fresh: { needs: ["etcd", "floor"], run: (b) => leaseRounds(b, "fresh keys", b.leases.fresh, freshKeysRound) },
  "fresh-sharded": {
    needs: ["floor"],
    run: (b) => leaseRounds(b, `fresh keys, the floor in ${LEASE_SHARDS} objects as baton's shards`, b.leases.freshSharded, freshKeysRound),
  },
  hot: { needs: ["etcd", "floor"], run: (b) => leaseRounds(b, "one hot key", b.leases.hot, hotKeyRound) },
  wakes: {
    needs: [],
    run: async (b) => {
      b.wakes = await measureWakes(b.dev.url, ttlSeconds, wakeSeconds, [
        { label: "idle, 1 connection", connections: 1, pingText: '{"type":"ping"}' },
        { label: "idle, 20 connections", connections: 20, pingText: '{"type":"ping"}' },
        { label: "control: 20 connections, non-exact ping", connections: 20, pingText: '{"type": "ping"}' },
      ]);
    },
  },
  /** Durable steps: a step record vs the floor's one-row write, a 100-step takeover. */
  steps: {
    needs: ["floor"],
    run: async (b) => {
      const { result, section } = await runSteps(b.dev.url, b.handoff.find((s) => s.name === "floor")!.url, ttlSeconds, trials);
      b.results.push(result);
      b.sections.push(section);
    },
  },
  /** A 10 MiB step result's upload against the floor's PUT of the same body into the same local R2 (goal <= 1.3x). */
  upload: {
    needs: ["floor"],
    run: async (b) => void b.sections.push(await runUpload(b.dev.url, b.handoff.find((s) => s.name === "floor")!.url, ttlSeconds, Math.min(trials, 10))),
  },
  /**
   * An effect's intent with a person's permit checked and spent, beside a plain effect's intent (goal <= 1.1x); three
   * pairs per trial, as a 10% goal on a ~4 ms intent is within the p50 noise of 20 pairs.
   */
  permits: { needs: [], run: async (b) => void b.sections.push((await permitIntents(b.dev.url, ttlSeconds * 1000, trials * 3, `${process.pid}-${Date.now()}`)).section) },
  /** A preferred runner's wait for the lease: about the hysteresis plus one alarm. */
  preference: { needs: [], run: async (b) => void b.sections.push(await runPreference(b.dev.url, hysteresisSeconds, trials)) },
  /** Live output: a chunk from the runner to a follower against the floor's relay, a chatty runner with 0 and 20 followers, memory. */
  output: {
    needs: ["floor"],
    run: async (b) => void b.sections.push(await runOutput(b.dev, b.handoff.find((s) => s.name === "floor")!.url, ttlSeconds, trials, Number(opts["output-frames"]))),
  },
  /** From `baton cancel` to a served command's whole process tree gone (a grandchild included). */
  cancel: { needs: [], run: async (b) => void b.sections.push(await runCancel(b.dev.url, b.cli, trials)) },
  /** Claude Code's hook: from a person's approve to the allow JSON on the hook's stdout. */
  hook: { needs: [], run: async (b) => void b.sections.push(await runHook(b.dev.url, b.cli, trials)) },
  /** OpenTelemetry: a 100-step run traced against untraced. */
  tracing: { needs: [], run: async (b) => void b.sections.push(await runTracing(b.dev.url, trials)) },
  /** Remote MCP: the who tool over POST /mcp beside the presence route it wraps. */
  mcp: { needs: [], run: async (b) => void b.sections.push(await runMcp(b.dev.url, trials)) },
  /** Schedules: lateness over 1,000 slots on the injected clock and 20 on the real one; 1,000 schedules over 100 agents. */
  schedules: {
    needs: [],
    run: async (b) => void b.sections.push(await runSchedules(b.dev.url, {
      slots: Number(opts["schedule-slots"]), realSlots: 20, schedules: Number(opts["schedule-count"]), agents: Number(opts["schedule-agents"]),
    })),
  },
  /** A2A's GetTask over HTTP beside the plain read it wraps (goal: p50 within 1.3x). */
  a2a: { needs: [], run: async (b) => void b.sections.push(await runA2A(b.dev.url, trials)) },
  /** 1,000 agents x 3 connections on a wrangler dev of its own; not in the default run (several minutes). */
  scale: { needs: [], run: async (b) => void b.sections.push(await runScale({ startDev: b.startDev, cli: b.cli })) },
};
const DEFAULT_SCENARIOS = ["graceful", "steady", "steps", "upload", "permits", "crash", "stop", "fresh", "fresh-sharded", "hot", "wakes", "preference", "cancel", "hook", "tracing", "mcp", "schedules", "a2a"];
const ALIASES: Record<string, string[]> = { acquire: ["fresh", "fresh-sharded", "hot"] };

function selected(): string[] {
  const names = (opts.only?.split(",") ?? DEFAULT_SCENARIOS).flatMap((n) => ALIASES[n.trim()] ?? [n.trim()]);
  const unknown = names.filter((n) => !(n in SCENARIOS));
  if (unknown.length > 0) {
    throw new Error(`unknown scenario ${unknown.join(", ")}; --only takes a comma-separated list of ${[...Object.keys(SCENARIOS), ...Object.keys(ALIASES)].join(", ")}`);
  }
  return names;
}

/** Runs `trial` on every system `trials` times, rotating which goes first. */
async function interleaved(b: Bench, label: string, systems: System[], trial: (s: System) => Promise<number>): Promise<void> {
  const samples: Partial<Record<SystemName, number[]>> = {};
  const failures: Partial<Record<SystemName, number>> = {};
  for (let i = 0; i < trials; i++) {
    for (const sys of rotate(systems, i)) {
      try {
        (samples[sys.name] ??= []).push(await trial(sys));
      } catch (e) {
        failures[sys.name] = (failures[sys.name] ?? 0) + 1;
        console.error(`  ${label} ${sys.name} trial ${i}: ${(e as Error).message}`);
      }
    }
  }
  console.log(`  ${label}: done`);
  b.results.push({ label, samples, failures });
}

/** ROUNDS rounds of `keys` attempts per lease system, alternating which goes first. */
async function leaseRounds(
  b: Bench, label: string, systems: LeaseSystem[], round: (s: LeaseSystem, attempts: number, concurrency: number) => Promise<AcquireRound>,
): Promise<void> {
  const result: LeaseResult = { label, rounds: {} };
  for (let i = 0; i < ROUNDS; i++) {
    for (const sys of rotate(systems, i)) (result.rounds[sys.name] ??= []).push(await round(sys, Math.ceil(keys / ROUNDS), concurrency));
  }
  console.log(`  ${label}: done`);
  b.leaseResults.push(result);
}

function rotate<T>(items: readonly T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

async function main(): Promise<number> {
  const names = selected();
  const needs = new Set(names.flatMap((n) => SCENARIOS[n]!.needs));
  const tree = opts["working-tree"] ? workingTree() : snapshotOfHead(opts.revision ?? "HEAD");
  let dev: DevServer | null = null;
  let etcd: EtcdServer | null = null;
  let floor: FloorServer | null = null;
  const extraDevs: DevServer[] = [];
  const stopAll = async () => {
    await Promise.allSettled([dev?.stop(), etcd?.stop(), floor?.stop(), ...extraDevs.map((d) => d.stop())]);
    tree.dispose();
  };
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => void stopAll().then(() => process.exit(130)));
  try {
    if (needs.has("etcd")) ensureEtcdInstalled();
    console.log(`starting wrangler dev of ${tree.revision} (TTL ${ttlSeconds} s, scan ${scanSeconds} s, hysteresis ${hysteresisSeconds} s)${needs.has("floor") ? ", the floor probe" : ""}${needs.has("etcd") ? " and etcd" : ""} on loopback...`);
    const { startWranglerDev } = await wranglerDevOf(tree);
    [dev, etcd, floor] = await Promise.all([
      startWranglerDev({
        vars: {
          BATON_HEARTBEAT_TTL_SECONDS: String(ttlSeconds),
          BATON_PRESENCE_SCAN_SECONDS: String(scanSeconds),
          BATON_PREFERENCE_HYSTERESIS_SECONDS: String(hysteresisSeconds),
        },
      }),
      needs.has("etcd") ? startEtcd() : null,
      needs.has("floor") ? startFloor(REPO_ROOT) : null,
    ]);
    const handoff = [batonSystem(dev.url, ttlSeconds), floor && floorSystem(floor.url, ttlSeconds), etcd && etcdSystem(etcd.url, ttlSeconds)]
      .filter((s): s is System => s !== null);
    const baton = batonLeases(dev.url, ttlSeconds);
    const floorLease = floor ? [floorLeases(floor.url)] : [];
    const leases = {
      fresh: [baton, ...floorLease, ...(etcd ? [etcdLeases(etcd.url, ttlSeconds, "per-key")] : [])],
      hot: [baton, ...floorLease, ...(etcd ? [etcdLeases(etcd.url, ttlSeconds, "session")] : [])],
      freshSharded: [baton, ...(floor ? [floorLeases(floor.url, LEASE_SHARDS)] : [])],
    };
    // Warm-up, not recorded: the first requests compile the Worker, open connections and create
    // the session-lease shards (a one-time cost per deployment).
    for (const s of handoff) await gracefulTrial(s);
    if (names.some((n) => n.startsWith("fresh") || n === "hot")) for (const s of [...leases.fresh, ...leases.freshSharded]) await freshKeysRound(s, 256, concurrency);

    const startDev = async (vars: Record<string, string>) => {
      const extra = await startWranglerDev({ vars });
      extraDevs.push(extra);
      return extra;
    };
    const cli = join(tree.root, "dist/cli/main.js");
    const bench: Bench = { dev, startDev, cli, handoff, leases, results: [], leaseResults: [], wakes: null, sections: [] };
    const loadBefore = loadavg()[0]!;
    for (const name of names) await SCENARIOS[name]!.run(bench);
    const report = renderReport({
      date: new Date().toISOString(),
      command: `npm run bench -- ${process.argv.slice(2).join(" ")}`.trim(),
      revision: tree.revision,
      machine: `${cpus().length} x ${cpus()[0]?.model ?? "?"}, Node ${process.version}`,
      load: [loadBefore, loadavg()[0]!],
      etcdVersion: etcd?.version ?? null,
      ttlSeconds, scanSeconds, trials, keys, rounds: ROUNDS, concurrency,
      results: bench.results, leaseResults: bench.leaseResults, wakes: bench.wakes, sections: bench.sections,
    });
    console.log(`\n${report}`);
    if (opts.write) console.log(writeReport(report));
    return 0;
  } finally {
    await stopAll();
  }
}

main()
  .catch((e: Error) => {
    console.error(e.stack ?? e.message);
    return 1;
  })
  .then((code) => process.exit(code));
