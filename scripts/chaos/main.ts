// `npm run chaos`: several `baton serve` processes of one agent against wrangler dev on loopback,
// randomly killed, paused, resumed and restarted, with the coordinator itself restarted (state
// kept on disk), while messages flow. Every side effect goes to a fenced, idempotent sink; at the
// end the run prints its counts and invariants and exits non-zero on any violation. Bounded in time
// and in operations; everything it starts is stopped. With --mode pool the agent runs in pool mode
// (every serve process takes messages, --concurrency at a time), effects are fenced by each
// message's own lease token, some messages park (exit 75) and are resumed at random, and some
// stall past their run timeout so the coordinator takes them back from a live runner.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { DevServer } from "../../test/e2e/wrangler-dev.ts";
import { snapshotOfHead, workingTree, wranglerDevOf } from "../bench/snapshot.ts";
import { checkRun, firstRuns, type CoordinatorMessage } from "./invariants.ts";
import { fenceTimeline, leaseChanges, unaccountedFailure, type Fault } from "./lease-changes.ts";
import { attemptsSummary, faultRateLine, invariantLines, markdownReport, operationsLine, reExecutions, tallyTable } from "./report.ts";
import { ServeSlot } from "./serve-fleet.ts";
import { EffectSink, startSink } from "./sink.ts";
import { seeded } from "./seeded.ts";
import { runMode } from "./run-mode.ts";

const { values: opts } = parseArgs({
  options: {
    seconds: { type: "string", default: "90" },
    "max-ops": { type: "string", default: "40" },
    "max-messages": { type: "string", default: "100" },
    "message-ms": { type: "string", default: "1000" },
    "work-ms": { type: "string", default: "600" },
    servers: { type: "string", default: "3" },
    ttl: { type: "string", default: "2" },
    seed: { type: "string" },
    "coordinator-restarts": { type: "string", default: "2" },
    "working-tree": { type: "boolean", default: false },
    "keep-logs": { type: "boolean", default: false },
    mode: { type: "string", default: "single" },
    concurrency: { type: "string", default: "2" },
    "run-timeout": { type: "string", default: "10" },
    "park-every": { type: "string", default: "5" },
    "stall-every": { type: "string", default: "7" },
  },
});
if (opts.mode !== "single" && opts.mode !== "pool") throw new Error(`--mode is single or pool, got ${opts.mode}`);
const pool = opts.mode === "pool";
const runTimeoutS = Number(opts["run-timeout"]);
const seconds = Number(opts.seconds);
const maxOps = Number(opts["max-ops"]);
const maxMessages = Number(opts["max-messages"]);
const servers = Number(opts.servers);
const messageMs = Number(opts["message-ms"]);
const ttl = Number(opts.ttl);
const maxCoordinatorRestarts = Number(opts["coordinator-restarts"]);
const seed = Number(opts.seed ?? Math.floor(Math.random() * 2 ** 31));
const TOKEN = "baton-dev-token";
/** The drain after the chaos ends stops when everything is acknowledged, or nothing moved for this long. */
const DRAIN_STALL_MS = 30_000;
const DRAIN_MAX_MS = 180_000;
/** Share of operations aimed at the holder: only its interruption moves the lease and leaves stale writers. */
const HOLDER_BIAS = 0.6;

/** Seeded, so a run's choices can be replayed with --seed (timings still vary). */
const { random, pick, between } = seeded(seed);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const tree = opts["working-tree"] ? workingTree() : snapshotOfHead();
const workDir = mkdtempSync(join(tmpdir(), "baton-chaos-"));
const agent = `chaos-${process.pid}`;
const sink = new EffectSink();
/** The coordinator's fence read just before each message was posted. */
const postFences = new Map<number, number>();
const counts = { kill: 0, pause: 0, restart: 0, coordinator: 0, resume: 0 };
/** Every fault injected, from when it began until its target ran again: what a failed message's attempts are checked against. */
const faults: Fault[] = [];
/** The agent's max_attempts: single mode keeps the default, so a run shows what 5 attempts survive. */
const DEFAULT_MAX_ATTEMPTS = 5;
let dev: DevServer | null = null;
let coordinatorDown = false;
let slots: ServeSlot[] = [];
let closeSink: (() => Promise<void>) | null = null;
let keepLogs = false;

async function coordinator(path: string, init?: RequestInit): Promise<Response> {
  return fetch(`${dev!.url}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } });
}

async function postMessages(deadline: number, sentIds: number[]): Promise<void> {
  for (let n = 0; n < maxMessages && Date.now() < deadline; n++) {
    await sleep(between(0.2 * messageMs, 1.8 * messageMs));
    if (coordinatorDown) continue;
    try {
      const presence = await coordinator(`/agents/${agent}/presence`);
      const fence = presence.status === 200 ? ((await presence.json()) as { fence: number }).fence : null;
      const res = await coordinator(`/agents/${agent}/messages`, { method: "POST", body: JSON.stringify({ text: `chaos message ${n}${poolTag(n)}` }) });
      if (res.status !== 201) continue;
      const id = ((await res.json()) as { id: number }).id;
      sentIds.push(id);
      // Attempts follow lease changes only in single mode; in pool mode parks and run timeouts add attempts too.
      if (fence !== null && !pool) postFences.set(id, fence);
    } catch {
      // coordinator restarting: this one is not sent
    }
  }
}

/** In pool mode some messages park on their first run and some stall past their run timeout. */
function poolTag(n: number): string {
  if (!pool) return "";
  if (n % Number(opts["park-every"]) === 1) return " park";
  if (n % Number(opts["stall-every"]) === 2) return " stall";
  return "";
}

/** Resumes every parked message (a person approving); returns how many. */
async function resumeParked(): Promise<number> {
  if (!pool || coordinatorDown) return 0;
  let resumed = 0;
  try {
    for (const m of await allMessages()) {
      if (m.status !== "parked") continue;
      const res = await coordinator(`/agents/${agent}/messages/${m.id}/resume`, { method: "POST", body: JSON.stringify({ input: "approved" }) });
      if (res.status === 200) resumed += 1;
    }
  } catch {
    // coordinator restarting: try again later
  }
  counts.resume += resumed;
  return resumed;
}

async function restartCoordinator(startWranglerDev: typeof import("../../test/e2e/wrangler-dev.ts").startWranglerDev): Promise<void> {
  const { port, persistDir } = dev!;
  const at = Date.now();
  coordinatorDown = true;
  await dev!.stop();
  await sleep(between(200, 1500));
  dev = await startWranglerDev({ port, persistDir, vars: vars() });
  coordinatorDown = false;
  faults.push({ kind: "coordinator", slot: null, at, until: Date.now() });
}

function vars(): Record<string, string> {
  return { BATON_HEARTBEAT_TTL_SECONDS: String(ttl), BATON_PRESENCE_SCAN_SECONDS: String(Math.max(1, Math.floor(ttl / 2))) };
}

/** The slot whose machine holds the lease now; null when nobody does or the coordinator is unreachable. */
async function holderSlot(): Promise<ServeSlot | null> {
  try {
    const res = await coordinator(`/agents/${agent}/presence`);
    const machine = ((await res.json()) as { holder: { machine: string } | null }).holder?.machine;
    return slots.find((s) => s.machine === machine) ?? null;
  } catch {
    return null;
  }
}

async function chaosAction(restart: () => Promise<void>): Promise<void> {
  if (random() < 0.12 && counts.coordinator < maxCoordinatorRestarts && !coordinatorDown) {
    counts.coordinator += 1;
    return restart();
  }
  const holder = random() < HOLDER_BIAS && !coordinatorDown ? await holderSlot() : null;
  const idle = slots.filter((s) => !s.busy && s.state === "running");
  if (idle.length === 0) return;
  const slot = holder && idle.includes(holder) ? holder : pick(idle);
  slot.busy = true;
  const at = Date.now();
  const action = pick(["kill", "pause", "restart"] as const);
  try {
    counts[action] += 1;
    if (action === "kill") {
      await slot.kill();
      await sleep(between(200, 3000));
      slot.start();
    } else if (action === "pause") {
      slot.pause();
      await sleep(between(500, 3 * ttl * 1000));
      slot.resume();
    } else {
      await slot.stop();
      await sleep(between(100, 1000));
      slot.start();
    }
  } finally {
    slot.busy = false;
    faults.push({ kind: action, slot: slot.slot, at, until: Date.now() });
  }
}

async function allMessages(): Promise<CoordinatorMessage[]> {
  const out: CoordinatorMessage[] = [];
  for (let after = 0; ; ) {
    const res = await coordinator(`/agents/${agent}/messages?after=${after}&limit=100`);
    const body = (await res.json()) as { messages: CoordinatorMessage[] };
    if (body.messages.length === 0) return out;
    out.push(...body.messages);
    after = body.messages.at(-1)!.id;
  }
}

async function main(): Promise<number> {
  const { startWranglerDev } = await wranglerDevOf(tree);
  const server = await startSink(sink);
  closeSink = server.close;
  console.log(`chaos: seed ${seed}, ${servers} serve processes of ${agent}, ${seconds} s, at most ${maxOps} operations, baton ${tree.revision}`);
  dev = await startWranglerDev({ vars: vars() });
  if (pool) {
    const res = await coordinator(`/agents/${agent}/policy`, {
      method: "PUT", body: JSON.stringify({ mode: "pool", run_timeout_seconds: runTimeoutS, max_attempts: 100 }),
    });
    if (res.status !== 200) throw new Error(`could not set pool mode: ${res.status} ${await res.text()}`);
    console.log(`chaos: pool mode, --concurrency ${opts.concurrency}, run timeout ${runTimeoutS} s, parks and stalls`);
  }
  const poolOpts = pool ? { concurrency: Number(opts.concurrency), stallMs: (runTimeoutS + 2) * 1000 } : undefined;
  slots = Array.from({ length: servers }, (_, i) => new ServeSlot(i, {
    treeRoot: tree.root, workDir, url: dev!.url, token: TOKEN, agent, sinkUrl: server.url, workMs: Number(opts["work-ms"]), pool: poolOpts,
  }));
  for (const s of slots) s.start();

  const deadline = Date.now() + seconds * 1000;
  const sentIds: number[] = [];
  const posting = postMessages(deadline, sentIds);
  const inFlight = new Set<Promise<void>>();
  for (let ops = 0; ops < maxOps && Date.now() < deadline; ops++) {
    await sleep(between(500, 2500));
    const action = pool && random() < 0.25 ? resumeParked().then(() => {}) : chaosAction(() => restartCoordinator(startWranglerDev));
    const p = action.catch((e: Error) => console.error(`chaos action failed: ${e.message}`));
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }
  await posting;
  await Promise.all(inFlight);
  for (const s of slots) if (s.state === "paused") s.resume();
  for (const s of slots) if (s.state === "stopped") s.start();

  console.log(`chaos: ${sentIds.length} messages sent; draining...`);
  const drainUntil = Date.now() + DRAIN_MAX_MS;
  let messages = await allMessages();
  const sent = new Set(sentIds);
  const pending = () => messages.filter((m) => sent.has(m.id) && m.status !== "acknowledged").length;
  let lastProgress = Date.now();
  for (let left = pending(); left > 0 && Date.now() < drainUntil && Date.now() - lastProgress < DRAIN_STALL_MS; ) {
    await sleep(500);
    await resumeParked();
    messages = await allMessages();
    if (pending() < left) (left = pending()), (lastProgress = Date.now());
  }
  // Let orphaned runs of killed processes finish, so their effects are in the log too.
  await sleep(2000);
  messages = await allMessages();

  const timeline = fenceTimeline(slots.map((s) => readFileSync(s.logPath, "utf8").split("\n")));
  const maxAttempts = pool ? 100 : DEFAULT_MAX_ATTEMPTS;
  const accountFailure = (m: CoordinatorMessage) =>
    pool ? `${m.id} failed in pool mode` : unaccountedFailure({ id: m.id, attempts: m.attempts, declined: m.declined ?? 0, retried_after: m.retried_after ?? 0, token: m.token ?? 0, error: m.error ?? null }, postFences.get(m.id), timeline, faults, maxAttempts);
  const { tally, invariants } = checkRun({ sentIds, messages, effects: sink.log, postFences, accountFailure });
  const changes = leaseChanges(timeline, faults);
  const report = {
    command: ["npm run chaos", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" "),
    date: new Date().toISOString(),
    revision: tree.revision,
    seed,
    operations: counts,
    tally,
    invariants,
    firstRuns: firstRuns(sink.log, postFences),
    faultRate: { faults: faults.length, seconds, leaseChanges: changes.total, unexplained: changes.unexplained, holderUnknown: changes.holderUnknown, maxAttempts },
  };
  console.log(`\nchaos operations: ${operationsLine(counts)}`);
  console.log(tallyTable(tally));
  for (const line of reExecutions(sink.log)) console.log(line);
  console.log(`\nfirst runs: ${attemptsSummary(report.firstRuns)}`);
  console.log(`faults: ${faultRateLine(report.faultRate)}`);
  console.log("\ninvariants:");
  for (const line of invariantLines(invariants)) console.log(`  ${line}`);
  const ok = invariants.every((i) => i.ok) && tally.sent > 0;
  if (tally.sent === 0) console.log("  FAIL no message was sent");
  console.log(`\n--- markdown ---\n${markdownReport(report)}\n--- end ---`);
  const keep = !ok || opts["keep-logs"];
  if (keep) {
    writeFileSync(join(workDir, "sink-log.json"), JSON.stringify(sink.log, null, 1));
    writeFileSync(join(workDir, "faults.json"), JSON.stringify(faults, null, 1));
    writeFileSync(join(workDir, "messages.json"), JSON.stringify(messages.map((m) => ({ ...m, post_fence: postFences.get(m.id) ?? null })), null, 1));
  }
  if (!ok) console.log(`\nchaos: FAILED (seed ${seed}); serve logs, sink log and message list kept in ${workDir}`);
  else console.log(`\nchaos: all invariants held (seed ${seed})${keep ? `; logs kept in ${workDir}` : ""}`);
  keepLogs = keep;
  return ok ? 0 : 1;
}

async function stopAll(keepLogs: boolean): Promise<void> {
  await Promise.allSettled(slots.map((s) => s.stop()));
  await Promise.allSettled([dev?.stop(), closeSink?.()]);
  tree.dispose();
  if (!keepLogs) rmSync(workDir, { recursive: true, force: true });
}

runMode(main, stopAll, () => keepLogs);
