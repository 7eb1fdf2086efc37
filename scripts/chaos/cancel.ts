// `npm run chaos -- --mode cancel`: cancels and interrupts at random while runners are killed and
// the coordinator restarts. Several `baton serve` processes of one agent (pool mode, on_busy
// interrupt) against wrangler dev on loopback serve the shell agent of scripts/chaos/cancel-agent.ts:
// durable steps and effects, the effects posted to a fenced sink. Messages are posted into groups
// (most alone in theirs, some into a few shared ones, where a new message interrupts the running
// one); meanwhile the driver cancels messages running, queued, parked, finished and cancelled
// already, and races the reply of runs that just traced their last step and runs inside an effect;
// machines die (kill -9 of
// serve and its commands) and come back; the coordinator restarts (state kept on disk); a person
// answers messages parked on an unknown outcome. At the end scripts/chaos/cancel-invariants.ts
// checks the coordinator's views, the answers, the runners' logs, the calls, ledger and sink, and
// the steps run's checks hold for every message not cancelled. Exits non-zero on any violation.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { DevServer } from "../../test/e2e/wrangler-dev.ts";
import { snapshotOfHead, workingTree, wranglerDevOf } from "../bench/snapshot.ts";
import { accountTag } from "../../worker/wire/step-keys.ts";
import { writeCancelAgent } from "./cancel-agent.ts";
import { cancelAtRandom, look, raceReplies, readText, track, type CancelDriver } from "./cancel-driver.ts";
import { checkCancel, parseCalls, parseServeLog, type CancelCall, type ResumeCall } from "./cancel-invariants.ts";
import { agentCounter, finalViews, listMessages, tallyTable, type Listed } from "./cancel-reads.ts";
import { invariantLines } from "./report.ts";
import { ServeSlot } from "./serve-fleet.ts";
import { EffectSink, startSink } from "./sink.ts";
import { seeded } from "./seeded.ts";
import { checkSteps, parseLedger, PLAN as STEPS_PLAN, type Answer } from "./steps-invariants.ts";
import { runMode } from "./run-mode.ts";

const { values: opts } = parseArgs({
  options: {
    seconds: { type: "string", default: "50" },
    messages: { type: "string", default: "40" },
    servers: { type: "string", default: "3" },
    concurrency: { type: "string", default: "2" },
    "shared-groups": { type: "string", default: "3" },
    "nap-ms": { type: "string", default: "200" },
    "effect-nap-ms": { type: "string", default: "400" },
    ttl: { type: "string", default: "2" },
    "coordinator-restarts": { type: "string", default: "1" },
    seed: { type: "string" },
    sabotage: { type: "boolean", default: false },
    "working-tree": { type: "boolean", default: false },
    "keep-logs": { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
    mode: { type: "string" },
  },
});
const seconds = Number(opts.seconds);
const messageCount = Number(opts.messages);
const servers = Number(opts.servers);
const sharedGroups = Number(opts["shared-groups"]);
const ttl = Number(opts.ttl);
const maxRestarts = Number(opts["coordinator-restarts"]);
const seed = Number(opts.seed ?? Math.floor(Math.random() * 2 ** 31));
const TOKEN = "baton-dev-token";
const DRAIN_STALL_MS = 30_000;
const DRAIN_MAX_MS = 90_000;
/** Share of posts into a shared group, where a new message interrupts the running one. */
const SHARED_SHARE = 0.35;

const { random, pick, between } = seeded(seed);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
const say = (line: string) => opts.verbose && console.log(`cancel: ${elapsed()} ${line}`);

const tree = opts["working-tree"] ? workingTree() : snapshotOfHead();
const workDir = mkdtempSync(join(tmpdir(), "baton-chaos-cancel-"));
const paths = { ledger: join(workDir, "ledger"), calls: join(workDir, "calls") };
const agent = `chaos-cancel-${process.pid}`;
const sink = new EffectSink();
const cancels: CancelCall[] = [];
const resumes: ResumeCall[] = [];
const answers: Answer[] = [];
const kills: { machine: string; at: number }[] = [];
const restarts: { from: number; to: number }[] = [];
/** The steps run's plan without its approval: this mode's agent asks none and its driver approves nothing. */
const PLAN = STEPS_PLAN.map(({ approve: _approve, ...item }) => item);
let dev: DevServer | null = null;
let coordinatorDown = false;
let slots: ServeSlot[] = [];
let closeSink: (() => Promise<void>) | null = null;
let keepLogs = false;

const allMessages = () => listMessages(coordinator, agent);
const driver: CancelDriver = { coordinator, agent, paths, plan: PLAN, rng: { random, pick, between }, say, cancels, resumes, answers, answering: new Set(), raced: new Set() };

async function coordinator(path: string, init?: RequestInit): Promise<Response> {
  return fetch(`${dev!.url}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "x-baton-via": "http", ...(init?.headers as Record<string, string> | undefined) } });
}

async function postMessages(sentIds: number[], until: number): Promise<void> {
  const gap = (until - Date.now()) / messageCount;
  for (let n = 0; n < messageCount; ) {
    await sleep(between(0.3 * gap, 1.7 * gap));
    if (coordinatorDown) continue;
    const group = random() < SHARED_SHARE ? `talk-${Math.floor(random() * sharedGroups)}` : `solo-${n}`;
    // Under one key per message: a post stored whose answer was lost (a restart, a timeout) is
    // answered again with the same message when posted again, so no message runs unaccounted.
    try {
      const res = await coordinator(`/agents/${agent}/messages`, { method: "POST", body: JSON.stringify({ text: `cancel message ${n}`, group }), headers: { "idempotency-key": `${agent}-${n}` } });
      if (res.status !== 201 && res.status !== 200) {
        console.error(`cancel: post ${n} answered ${res.status}: ${(await res.text()).slice(0, 200)}; posted again in a moment`);
        continue;
      }
      sentIds.push(((await res.json()) as { id: number }).id);
      say(`posted message ${sentIds.at(-1)} (group ${group})${res.status === 200 ? ", its first answer lost" : ""}`);
      n += 1;
    } catch (e) {
      console.error(`cancel: post ${n} failed (${(e as Error).message}); posted again in a moment`);
    }
  }
}

/** A machine dies (kill -9 of serve and its commands) and comes back a moment later. */
async function killOne(busy: ReadonlySet<string>): Promise<void> {
  const running = slots.filter((s) => !s.busy && s.state === "running");
  if (running.length === 0) return;
  const busySlots = running.filter((s) => busy.has(s.machine));
  const slot = busySlots.length > 0 && random() < 0.8 ? pick(busySlots) : pick(running);
  slot.busy = true;
  try {
    kills.push({ machine: slot.machine, at: Date.now() });
    await slot.killMachine();
    say(`kill -9 ${slot.machine}`);
    await sleep(between(300, 1500));
    slot.start();
  } finally {
    slot.busy = false;
  }
}

async function restartCoordinator(startWranglerDev: typeof import("../../test/e2e/wrangler-dev.ts").startWranglerDev): Promise<void> {
  const { port, persistDir } = dev!;
  const from = Date.now();
  coordinatorDown = true;
  say("coordinator restarting");
  await dev!.stop();
  await sleep(between(200, 1500));
  dev = await startWranglerDev({ port, persistDir, vars: vars() });
  coordinatorDown = false;
  restarts.push({ from, to: Date.now() });
  say("coordinator back");
}

function vars(): Record<string, string> {
  return { BATON_HEARTBEAT_TTL_SECONDS: String(ttl), BATON_PRESENCE_SCAN_SECONDS: String(Math.max(1, Math.floor(ttl / 2))) };
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  const load0 = loadavg()[0]!;
  const { startWranglerDev } = await wranglerDevOf(tree);
  const server = await startSink(sink);
  closeSink = server.close;
  const files = writeCancelAgent(workDir, { cli: join(tree.root, "dist/cli/main.js"), plan: PLAN, sabotage: opts.sabotage });
  writeFileSync(paths.ledger, "");
  writeFileSync(paths.calls, "");
  console.log(`cancel: seed ${seed}, ${servers} serve processes of ${agent} (pool, --concurrency ${opts.concurrency}, on_busy interrupt), ${messageCount} messages, ${seconds} s of chaos, baton ${tree.revision}${opts.sabotage ? ", SABOTAGED script" : ""}`);
  dev = await startWranglerDev({ vars: vars() });
  const policy = await coordinator(`/agents/${agent}/policy`, {
    method: "PUT", body: JSON.stringify({ mode: "pool", max_attempts: 100, run_timeout_seconds: 60, on_busy: "interrupt" }),
  });
  if (policy.status !== 200) throw new Error(`could not set the policy: ${policy.status} ${await policy.text()}`);
  slots = Array.from({ length: servers }, (_, i) => new ServeSlot(i, {
    treeRoot: tree.root, workDir, url: dev!.url, token: TOKEN, agent, pool: { concurrency: Number(opts.concurrency), stallMs: 0 },
    command: ["/bin/sh", files.script],
    env: {
      PATH: `${files.bin}:${process.env.PATH}`, CHAOS_LEDGER: paths.ledger, CHAOS_CALLS: paths.calls, CHAOS_SINK_URL: server.url,
      CHAOS_NAP: String(Number(opts["nap-ms"]) / 1000), CHAOS_EFFECT_NAP: String(Number(opts["effect-nap-ms"]) / 1000),
    },
  }));
  for (const s of slots) s.start();

  const deadline = Date.now() + seconds * 1000;
  const restartAt = Array.from({ length: maxRestarts }, (_, i) => Date.now() + ((i + between(0.3, 0.8)) / maxRestarts) * 0.8 * seconds * 1000);
  const sentIds: number[] = [];
  const posting = postMessages(sentIds, Date.now() + 0.7 * seconds * 1000);
  const inFlight = new Set<Promise<void>>();
  const seen = { calls: { n: 0 }, ledger: { n: 0 } };
  let listed: Listed[] = [];
  let nextOp = Date.now() + between(1000, 2500);
  let listedAt = 0;
  while (Date.now() < deadline) {
    if (!coordinatorDown && Date.now() - listedAt >= 400) {
      listed = await allMessages().catch(() => listed);
      listedAt = Date.now();
      look(driver, inFlight, listed);
    }
    if (!coordinatorDown) raceReplies(driver, seen, inFlight);
    if (restartAt.length > 0 && Date.now() >= restartAt[0]! && !coordinatorDown) {
      restartAt.shift();
      track(inFlight, restartCoordinator(startWranglerDev).catch((e: Error) => console.error(`cancel: restart failed: ${e.message}`)));
    } else if (Date.now() >= nextOp && !coordinatorDown) {
      if (random() < 0.35) {
        const busy = new Set(listed.filter((m) => m.status === "running" && m.machine !== null).map((m) => m.machine!));
        track(inFlight, killOne(busy).catch((e: Error) => console.error(`cancel: kill failed: ${e.message}`)));
      } else {
        cancelAtRandom(driver, listed, inFlight);
      }
      nextOp = Date.now() + between(1000, 2500);
    }
    await sleep(100);
  }
  await posting;
  while (inFlight.size > 0) await Promise.all(inFlight);
  for (const s of slots) if (s.state === "stopped") s.start();

  console.log(`cancel: ${kills.length} kills, ${restarts.length} coordinator restarts, ${cancels.length} cancels, ${sentIds.length} messages sent; draining...`);
  const sent = new Set(sentIds);
  const open = (m: Listed) => sent.has(m.id) && (m.status === "queued" || m.status === "running" || m.status === "parked");
  const drainUntil = Date.now() + DRAIN_MAX_MS;
  let lastProgress = Date.now();
  for (let left = Infinity; Date.now() < drainUntil && Date.now() - lastProgress < DRAIN_STALL_MS; ) {
    listed = await allMessages();
    look(driver, inFlight, listed);
    raceReplies(driver, seen, inFlight);
    const n = listed.filter(open).length;
    if (n === 0 && inFlight.size === 0) break;
    if (n < left) (left = n), (lastProgress = Date.now());
    await sleep(400);
  }
  while (inFlight.size > 0) await Promise.all(inFlight);
  // Let stopped runs finish dying, so any late effect is in the sink's log too.
  await sleep(2000);

  const views = await finalViews(coordinator, agent, sentIds);
  const cancelledCount = views.filter((m) => m.status === "cancelled").length;
  let metricsCancelled = await agentCounter(coordinator, agent, "baton_messages_cancelled_total");
  // /metrics is the directory's copy, reported a moment after each change.
  for (let i = 0; i < 20 && metricsCancelled !== null && metricsCancelled !== cancelledCount; i++) {
    await sleep(500);
    metricsCancelled = await agentCounter(coordinator, agent, "baton_messages_cancelled_total");
  }
  const refusedMetric = await agentCounter(coordinator, agent, "baton_fence_rejections_total", `code="cancelled"`);
  const ledger = parseLedger(readText(paths.ledger));
  const calls = parseCalls(readText(paths.calls));
  const runners = slots.flatMap((s) => parseServeLog(readText(s.logPath)));
  const sinkLog = sink.log.map((e) => ({ id: e.message_id, name: e.key.split(":").at(-1)!, outcome: e.outcome, at: e.at }));
  const figures = { kills: kills.length, restarts: restarts.length, refusedMetric };
  const { tally, invariants } = checkCancel({
    messages: views, cancels, resumes, runners, calls, ledger, sink: sinkLog, kills, restarts, metricsCancelled,
  });
  // Every message not cancelled keeps the steps run's promises.
  const kept = views.filter((m) => m.status !== "cancelled");
  const keptIds = new Set(kept.map((m) => m.id));
  const steps = checkSteps({
    plan: PLAN, agent, accountTag: await accountTag("dev"), sentIds: kept.map((m) => m.id), messages: kept,
    ledger: ledger.filter((l) => keptIds.has(l.id)),
    trace: calls.filter((c) => c.rc === 0 && keptIds.has(c.id)).map((c) => ({ id: c.id, name: c.name, attempt: c.attempt, ms: c.end })),
    answers: answers.filter((a) => keptIds.has(a.id)),
  });
  const all = [...invariants, ...steps.invariants.map((v) => ({ ...v, name: `not cancelled: ${v.name}` }))];
  const ok = all.every((i) => i.ok) && tally.messages > 0 && tally.cancelled > 0;

  const took = Math.round((Date.now() - startedAt) / 1000);
  const command = ["npm run chaos -- --mode cancel", ...process.argv.slice(2).filter((a, i, argv) => a !== "--mode" && argv[i - 1] !== "--mode")].join(" ");
  console.log(`\n${tallyTable(tally, figures)}\n`);
  console.log("invariants:");
  for (const line of invariantLines(all)) console.log(`  ${line}`);
  if (tally.cancelled === 0) console.log("  FAIL no message was cancelled");
  console.log(`\n--- markdown ---\n#### ${command}\n`);
  console.log(`${new Date().toISOString()}, baton ${tree.revision}, seed ${seed}, ${servers} serve processes (pool, concurrency ${opts.concurrency}, on_busy interrupt), ${took} s in all, load average ${load0.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end.\n`);
  console.log(tallyTable(tally, figures));
  console.log(`\nSteps of messages not cancelled: ${steps.tally.stepsRun} step runs, ${steps.tally.effectsRun} effect runs, ${steps.tally.askedDone + steps.tally.askedRedo} unknown outcomes answered (${steps.tally.askedDone} --done, ${steps.tally.askedRedo} --redo).\n`);
  for (const inv of all) console.log(`- ${inv.ok ? "ok" : "**FAIL**"}: ${inv.name}${inv.ok ? "" : ` (${inv.detail})`}`);
  console.log("--- end ---");
  const keep = !ok || opts["keep-logs"];
  if (keep) writeFileSync(join(workDir, "run.json"), JSON.stringify({ views, cancels, resumes, answers, kills, restarts, sink: sinkLog }, null, 1));
  if (!ok) console.log(`\ncancel: FAILED (seed ${seed}); calls, ledger, serve logs and run.json kept in ${workDir}`);
  else console.log(`\ncancel: all invariants held (seed ${seed})${keep ? `; logs kept in ${workDir}` : ""}`);
  keepLogs = keep;
  return ok ? 0 : 1;
}

async function stopAll(keep: boolean): Promise<void> {
  await Promise.allSettled(slots.map((s) => s.killMachine()));
  await Promise.allSettled([dev?.stop(), closeSink?.()]);
  tree.dispose();
  if (!keep) rmSync(workDir, { recursive: true, force: true });
}

runMode(main, stopAll, () => keepLogs);
