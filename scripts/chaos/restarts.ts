// `npm run chaos -- --scenario restarts`: does a coordinator restart reshuffle agents across
// machines? One wrangler dev; --agents agents, each served by one in-process runner per machine
// label (the client library's serve(), reconnecting with its own backoff and jitter). Once every
// agent has elected, the coordinator is restarted --restarts times with its state kept on disk;
// after each restart, once every runner is back and every agent has a holder again, it counts the
// agents whose holder's machine changed. It runs twice in one invocation: with the restart grace
// off (BATON_RESTART_GRACE_SECONDS=0, "before") and with the coordinator's default ("after").
// Invariants: every agent ends each round with exactly one holder (by the coordinator and by the
// runners, who agree on machine and fence), and fences only grow across restarts. Exits non-zero
// on any violation.
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import type { DevServer } from "../../test/e2e/wrangler-dev.ts";
import { markdownTable } from "../bench/stats.ts";
import { snapshotOfHead, workingTree, wranglerDevOf } from "../bench/snapshot.ts";
import { RestartFleet } from "./restart-fleet.ts";

const { values: opts } = parseArgs({
  options: {
    agents: { type: "string", default: "30" },
    machines: { type: "string", default: "3" },
    restarts: { type: "string", default: "5" },
    /** The "after" grace in seconds; empty: the coordinator's default. */
    grace: { type: "string", default: "" },
    /** Extra seconds the coordinator stays down at each restart (a crash, a slow deploy): runners' backoff grows meanwhile. */
    down: { type: "string", default: "0" },
    "settle-timeout": { type: "string", default: "60" },
    "working-tree": { type: "boolean", default: false },
  },
});
const agentCount = Number(opts.agents);
const machines = Array.from({ length: Number(opts.machines) }, (_, i) => `machine-${i + 1}`);
const restarts = Number(opts.restarts);
const settleTimeoutMs = Number(opts["settle-timeout"]) * 1000;
const downMs = Number(opts.down) * 1000;
const TOKEN = "baton-dev-token";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Holding {
  machine: string;
  fence: number;
  reason: string | null;
}

interface Round {
  moved: number;
  restored: number;
  /** From the coordinator answering again to every agent having a holder. */
  heldMs: number;
  /** ... and to every runner back (standbys may still be in backoff after the holders are). */
  settleMs: number;
}

/** Invariant violations by invariant: holders (exactly one per agent, agreed on) and fences (only grow). */
interface Violations {
  holders: string[];
  fences: string[];
}

interface PhaseResult {
  label: string;
  rounds: Round[];
  violations: Violations;
}

interface Presence {
  fence: number;
  holder: { machine: string } | null;
  connections: { held: boolean }[];
  transitions: { reason: string }[];
}

const tree = opts["working-tree"] ? workingTree() : snapshotOfHead();
let dev: DevServer | null = null;
let fleet: RestartFleet | null = null;

async function presence(agent: string): Promise<Presence> {
  const res = await fetch(`${dev!.url}/agents/${agent}/presence`, { headers: { authorization: `Bearer ${TOKEN}` } });
  if (res.status !== 200) throw new Error(`presence of ${agent}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Presence;
}

/**
 * Waits until every runner is back and every agent has one holder above its old fence; returns
 * when every agent first had a holder, or null on timeout.
 */
async function settle(above: ReadonlyMap<string, number>): Promise<number | null> {
  const deadline = Date.now() + settleTimeoutMs;
  let heldAt: number | null = null;
  while (!fleet!.settled(above)) {
    if (heldAt === null && fleet!.allHeld(above)) heldAt = Date.now();
    if (Date.now() > deadline) return null;
    await sleep(50);
  }
  return heldAt ?? Date.now();
}

/**
 * Who holds each agent, by the coordinator, checked against the runners: exactly one holding
 * connection, on the machine of the one runner that believes it holds, with the same fence.
 */
async function holdings(agents: readonly string[], violations: string[]): Promise<Map<string, Holding>> {
  const out = new Map<string, Holding>();
  for (const agent of agents) {
    const p = await presence(agent);
    const held = p.connections.filter((c) => c.held).length;
    const runners = fleet!.holders(agent);
    const runner = runners.length === 1 && runners[0]!.status.kind === "holder" ? { machine: runners[0]!.machine, fence: runners[0]!.status.fence } : null;
    if (p.holder === null || held !== 1) violations.push(`${agent}: the coordinator shows ${held} holding connections (holder ${p.holder?.machine ?? "none"})`);
    else if (runner === null) violations.push(`${agent}: ${runners.length} runners believe they hold the lease`);
    else if (runner.machine !== p.holder.machine || runner.fence !== p.fence) {
      violations.push(`${agent}: the coordinator says ${p.holder.machine} holds fence ${p.fence}, the runners say ${runner.machine} holds fence ${runner.fence}`);
    }
    out.set(agent, { machine: p.holder?.machine ?? "none", fence: p.fence, reason: p.transitions[0]?.reason ?? null });
  }
  return out;
}

async function phase(label: string, vars: Record<string, string>): Promise<PhaseResult> {
  const { startWranglerDev } = await wranglerDevOf(tree);
  const violations: Violations = { holders: [], fences: [] };
  const rounds: Round[] = [];
  const agents = Array.from({ length: agentCount }, (_, i) => `restarts-${process.pid}-${label.replace(/\W+/g, "")}-${i}`);
  dev = await startWranglerDev({ vars });
  fleet = await RestartFleet.start({ treeRoot: tree.root, url: dev.url, token: TOKEN, agents, machines });
  if ((await settle(new Map())) === null) violations.holders.push(`not every agent elected within ${settleTimeoutMs / 1000} s of the start`);
  let before = await holdings(agents, violations.holders);
  for (let k = 1; k <= restarts && violations.holders.length + violations.fences.length === 0; k++) {
    const { port, persistDir } = dev;
    await dev.stop();
    await sleep(downMs);
    dev = await startWranglerDev({ port, persistDir, vars });
    const upAt = Date.now();
    const fences = new Map([...before].map(([a, h]) => [a, h.fence]));
    const heldAt = await settle(fences);
    if (heldAt === null) {
      violations.holders.push(`restart ${k}: not every agent had one holder with a new fence within ${settleTimeoutMs / 1000} s`);
      break;
    }
    const settleMs = Date.now() - upAt;
    const after = await holdings(agents, violations.holders);
    for (const a of agents) {
      if (after.get(a)!.fence <= before.get(a)!.fence) violations.fences.push(`restart ${k}: ${a}'s fence went from ${before.get(a)!.fence} to ${after.get(a)!.fence}`);
    }
    const moved = agents.filter((a) => after.get(a)!.machine !== before.get(a)!.machine).length;
    const restored = agents.filter((a) => after.get(a)!.reason === "restored").length;
    const heldMs = heldAt - upAt;
    rounds.push({ moved, restored, heldMs, settleMs });
    console.log(`restarts: ${label}, restart ${k}: ${moved} of ${agentCount} agents moved machine, ${restored} restored, all held after ${(heldMs / 1000).toFixed(1)} s, all runners back after ${(settleMs / 1000).toFixed(1)} s`);
    before = after;
  }
  violations.fences.push(...fleet.fenceRegressions);
  await fleet.stop();
  fleet = null;
  await dev.stop();
  dev = null;
  return { label, rounds, violations };
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

function table(phases: PhaseResult[]): string {
  const header = ["restart", ...phases.flatMap((p) => [`moved, ${p.label}`, `restored, ${p.label}`, `all held (s), ${p.label}`])];
  const rows = Array.from({ length: restarts }, (_, i) => [String(i + 1), ...phases.flatMap((p) => {
    const r = p.rounds[i];
    return r ? [String(r.moved), String(r.restored), (r.heldMs / 1000).toFixed(1)] : ["-", "-", "-"];
  })]);
  rows.push(["mean", ...phases.flatMap((p) => [
    mean(p.rounds.map((r) => r.moved)).toFixed(1), mean(p.rounds.map((r) => r.restored)).toFixed(1), (mean(p.rounds.map((r) => r.heldMs)) / 1000).toFixed(1),
  ])]);
  return markdownTable(header, rows);
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  const load = loadavg()[0]!;
  console.log(`restarts: ${agentCount} agents x ${machines.length} machines, ${restarts} coordinator restarts per phase, baton ${tree.revision}`);
  const afterLabel = opts.grace === "" ? "grace default" : `grace ${opts.grace} s`;
  const phases = [
    await phase("grace off", { BATON_RESTART_GRACE_SECONDS: "0" }),
    await phase(afterLabel, opts.grace === "" ? {} : { BATON_RESTART_GRACE_SECONDS: opts.grace }),
  ];
  const holders = phases.flatMap((p) => p.violations.holders.map((v) => `${p.label}: ${v}`));
  const fences = phases.flatMap((p) => p.violations.fences.map((v) => `${p.label}: ${v}`));
  const seconds = Math.round((Date.now() - startedAt) / 1000);
  console.log(`\n--- markdown ---`);
  console.log(`${new Date().toISOString()}, baton ${tree.revision}, ${agentCount} agents x ${machines.length} machines, ${restarts} restarts per phase${downMs ? ` (down ${downMs / 1000} s each)` : ""}, ${seconds} s, load average ${load.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end.\n`);
  console.log(table(phases));
  console.log(`\n- ${holders.length === 0 ? "ok" : "FAIL"}: every agent ended each round with exactly one holder, on the machine and fence its runners agree on`);
  console.log(`- ${fences.length === 0 ? "ok" : "FAIL"}: fences only grew across restarts`);
  console.log(`--- end ---`);
  for (const v of [...holders, ...fences].slice(0, 20)) console.log(`  violation: ${v}`);
  return holders.length + fences.length === 0 ? 0 : 1;
}

async function stopAll(): Promise<void> {
  await fleet?.stop();
  await dev?.stop();
  tree.dispose();
}

for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => void stopAll().then(() => process.exit(130)));

main()
  .catch((e: Error) => {
    console.error(e.stack ?? e.message);
    return 1;
  })
  .then(async (code) => {
    await stopAll();
    process.exit(code);
  });
