// `npm run chaos -- --mode steps`: durable steps under kill -9. Several `baton serve` processes of
// one agent (the built CLI) against wrangler dev on loopback, each serving a shell script that runs
// 5 `baton step`s and 2 `baton effect`s per message (one --on-unknown retry, one ask), every
// step's and effect's command appending a line to a ledger. Messages are posted while whole
// machines die at random (SIGKILL of the serve and of its commands' process groups) and come back.
// A message parked because an effect's outcome is unknown is answered as a person would, with
// `baton resume AGENT ID TEXT --done` or `baton resume AGENT ID --redo`, at random. At the end each
// message's journal (GET /agents/A/messages/ID and its steps) is checked against the ledger:
// no recorded step ran again, no effect applied twice beyond what retry or a --redo allowed (and
// then under the same idempotency key), no message lost, every reply the recorded values. One
// effect needs a person's approval (`baton effect --approve`): the driver approves each question
// with `baton approve`, and every run of it must have spent a permit of its own. Exits
// non-zero on any violation. Bounded in time; everything it starts is stopped.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parseArgs } from "node:util";
import type { DevServer } from "../../test/e2e/wrangler-dev.ts";
import { snapshotOfHead, workingTree, wranglerDevOf } from "../bench/snapshot.ts";
import { ServeSlot } from "./serve-fleet.ts";
import { writeAgent } from "./steps-agent.ts";
import { finalMessages, printStepsReport } from "./steps-report.ts";
import { checkSteps, parseLedger, parseTrace, PLAN, type Answer, type Approval } from "./steps-invariants.ts";
import { seeded } from "./seeded.ts";
import { accountTag } from "../../worker/wire/step-keys.ts";
import { runMode } from "./run-mode.ts";

const { values: opts } = parseArgs({
  options: {
    seconds: { type: "string", default: "60" },
    messages: { type: "string", default: "30" },
    servers: { type: "string", default: "3" },
    concurrency: { type: "string", default: "3" },
    policy: { type: "string", default: "pool" },
    "nap-ms": { type: "string", default: "200" },
    "effect-nap-ms": { type: "string", default: "600" },
    ttl: { type: "string", default: "2" },
    seed: { type: "string" },
    sabotage: { type: "boolean", default: false },
    "working-tree": { type: "boolean", default: false },
    "keep-logs": { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
    mode: { type: "string" },
  },
});
if (opts.policy !== "pool" && opts.policy !== "single") throw new Error(`--policy is pool or single, got ${opts.policy}`);
const pool = opts.policy === "pool";
const seconds = Number(opts.seconds);
const messageCount = Number(opts.messages);
const servers = Number(opts.servers);
const ttl = Number(opts.ttl);
const seed = Number(opts.seed ?? Math.floor(Math.random() * 2 ** 31));
const TOKEN = "baton-dev-token";
/** The drain after the chaos stops when every message is settled, or nothing moved for this long. */
const DRAIN_STALL_MS = 30_000;
const DRAIN_MAX_MS = 90_000;
/** Share of kills aimed at a machine that is running a message now. */
const BUSY_BIAS = 0.85;

/** Seeded, so a run's choices can be replayed with --seed (timings still vary). */
const { random, pick, between } = seeded(seed);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const run = promisify(execFile);
const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

const tree = opts["working-tree"] ? workingTree() : snapshotOfHead();
const cli = join(tree.root, "dist/cli/main.js");
const workDir = mkdtempSync(join(tmpdir(), "baton-chaos-steps-"));
const ledgerPath = join(workDir, "ledger");
const tracePath = join(workDir, "trace");
const agent = `chaos-steps-${process.pid}`;
const counts = { kills: 0, killedBusy: 0, answerFailures: 0 };
const answers: (Answer & { at: number })[] = [];
const approvals: Approval[] = [];
const answering = new Set<number>();
let dev: DevServer | null = null;
let slots: ServeSlot[] = [];
let keepLogs = false;

async function coordinator(path: string, init?: RequestInit): Promise<Response> {
  return fetch(`${dev!.url}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } });
}

async function json<T>(path: string): Promise<T> {
  const res = await coordinator(path);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

interface ListedMessage {
  id: number;
  status: string;
  attempts: number;
  machine: string | null;
  waiting_on: string | null;
  question: { approve?: { effect: string } | null } | null;
}

async function allMessages(): Promise<ListedMessage[]> {
  const out: ListedMessage[] = [];
  for (let after = 0; ; ) {
    const body = await json<{ messages: ListedMessage[] }>(`/agents/${agent}/messages?after=${after}&limit=100`);
    if (body.messages.length === 0) return out;
    out.push(...body.messages);
    after = body.messages.at(-1)!.id;
  }
}

async function postMessages(sentIds: number[], until: number): Promise<void> {
  const gap = (until - Date.now()) / messageCount;
  for (let n = 0; n < messageCount; n++) {
    const res = await coordinator(`/agents/${agent}/messages`, { method: "POST", body: JSON.stringify({ text: `steps message ${n}` }) });
    if (res.status !== 201) throw new Error(`POST message: ${res.status} ${await res.text()}`);
    sentIds.push(((await res.json()) as { id: number }).id);
    if (opts.verbose) console.log(`steps: ${elapsed()} posted message ${sentIds.at(-1)}`);
    await sleep(between(0.3 * gap, 1.7 * gap));
  }
}

/**
 * A person answers a message parked on an unknown outcome, after a moment's thought: it happened
 * (--done, with the outcome they saw) or it did not (--redo), at random, through the real CLI.
 */
async function answer(m: ListedMessage): Promise<void> {
  answering.add(m.id);
  try {
    await sleep(between(300, 1500));
    const outcome = random() < 0.5 ? "done" : "redo";
    const text = outcome === "done" ? `by-hand:${m.id}:${answers.filter((a) => a.id === m.id).length + 1}` : null;
    const args = ["resume", agent, String(m.id), ...(text === null ? [] : [text]), `--${outcome}`];
    try {
      await run(process.execPath, [cli, ...args], {
        env: { ...process.env, BATON_URL: dev!.url, BATON_TOKEN: TOKEN, XDG_CONFIG_HOME: join(workDir, "person-config") },
        timeout: 20_000,
      });
      answers.push({ id: m.id, name: m.waiting_on!, outcome, text, at: Date.now() });
      console.log(`steps: message ${m.id} parked on ${m.waiting_on} (outcome unknown): baton resume ${args.slice(1).join(" ")}`);
    } catch (e) {
      counts.answerFailures += 1;
      console.error(`steps: baton resume ${args.slice(1).join(" ")} failed: ${(e as { stderr?: string }).stderr?.trim() ?? (e as Error).message}`);
    }
  } finally {
    answering.delete(m.id);
  }
}

/** A person approves an effect's question (its arguments, shown with their digest) after a moment, through the real CLI. */
async function approve(m: ListedMessage): Promise<void> {
  answering.add(m.id);
  try {
    await sleep(between(200, 1000));
    const at = Date.now();
    try {
      await run(process.execPath, [cli, "approve", agent, String(m.id)], {
        env: { ...process.env, BATON_URL: dev!.url, BATON_TOKEN: TOKEN, XDG_CONFIG_HOME: join(workDir, "person-config") },
        timeout: 20_000,
      });
      approvals.push({ id: m.id, at });
      if (opts.verbose) console.log(`steps: ${elapsed()} approved ${m.question?.approve?.effect} of message ${m.id} (attempt ${m.attempts})`);
    } catch (e) {
      counts.answerFailures += 1;
      console.error(`steps: baton approve ${agent} ${m.id} failed: ${(e as { stderr?: string }).stderr?.trim() ?? (e as Error).message}`);
    }
  } finally {
    answering.delete(m.id);
  }
}

/** Polls the messages: answers new unknown outcomes and approval questions; returns the list it saw. */
async function look(inFlight: Set<Promise<void>>): Promise<ListedMessage[]> {
  const messages = await allMessages();
  for (const m of messages) {
    if (m.status !== "parked" || answering.has(m.id)) continue;
    if (m.waiting_on === null && !m.question?.approve) continue;
    const p = m.waiting_on === null ? approve(m) : answer(m);
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }
  return messages;
}

/** A machine dies (kill -9 of serve and its commands) and comes back a moment later. */
async function killOne(busy: ReadonlySet<string>): Promise<void> {
  const running = slots.filter((s) => !s.busy && s.state === "running");
  if (running.length === 0) return;
  const busySlots = running.filter((s) => busy.has(s.machine));
  const slot = busySlots.length > 0 && random() < BUSY_BIAS ? pick(busySlots) : pick(running);
  slot.busy = true;
  try {
    counts.kills += 1;
    if (busy.has(slot.machine)) counts.killedBusy += 1;
    await slot.killMachine();
    if (opts.verbose) console.log(`steps: ${elapsed()} kill -9 ${slot.machine}${busy.has(slot.machine) ? " (running a message)" : ""}`);
    await sleep(between(300, 1500));
    slot.start();
  } finally {
    slot.busy = false;
  }
}

function readLines(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  const load0 = loadavg()[0]!;
  const { startWranglerDev } = await wranglerDevOf(tree);
  const files = writeAgent(workDir, { cli, plan: PLAN, sabotage: opts.sabotage });
  writeFileSync(ledgerPath, "");
  writeFileSync(tracePath, "");
  console.log(`steps: seed ${seed}, ${servers} serve processes of ${agent} (${opts.policy}${pool ? `, --concurrency ${opts.concurrency}` : ""}), ${messageCount} messages, ${seconds} s of kills, baton ${tree.revision}${opts.sabotage ? ", SABOTAGED script" : ""}`);
  dev = await startWranglerDev({ vars: { BATON_HEARTBEAT_TTL_SECONDS: String(ttl), BATON_PRESENCE_SCAN_SECONDS: String(Math.max(1, Math.floor(ttl / 2))) } });
  const policy = await coordinator(`/agents/${agent}/policy`, {
    method: "PUT", body: JSON.stringify({ mode: opts.policy, max_attempts: 100, run_timeout_seconds: 60 }),
  });
  if (policy.status !== 200) throw new Error(`could not set the policy: ${policy.status} ${await policy.text()}`);
  slots = Array.from({ length: servers }, (_, i) => new ServeSlot(i, {
    treeRoot: tree.root, workDir, url: dev!.url, token: TOKEN, agent,
    pool: pool ? { concurrency: Number(opts.concurrency), stallMs: 0 } : undefined,
    command: ["/bin/sh", files.script],
    env: { PATH: `${files.bin}:${process.env.PATH}`, CHAOS_LEDGER: ledgerPath, CHAOS_TRACE: tracePath, CHAOS_NAP: String(Number(opts["nap-ms"]) / 1000),
      CHAOS_EFFECT_NAP: String(Number(opts["effect-nap-ms"]) / 1000),
    },
  }));
  for (const s of slots) s.start();

  const deadline = Date.now() + seconds * 1000;
  const sentIds: number[] = [];
  const posting = postMessages(sentIds, Date.now() + 0.6 * seconds * 1000);
  const inFlight = new Set<Promise<void>>();
  const kills = new Set<Promise<void>>();
  let listed: ListedMessage[] = [];
  let nextKill = Date.now() + between(1500, 4000);
  while (Date.now() < deadline) {
    listed = await look(inFlight).catch(() => listed);
    if (Date.now() >= nextKill) {
      const busy = new Set(listed.filter((m) => m.status === "running" && m.machine !== null).map((m) => m.machine!));
      const p = killOne(busy).catch((e: Error) => console.error(`steps: kill failed: ${e.message}`));
      kills.add(p);
      void p.finally(() => kills.delete(p));
      nextKill = Date.now() + between(1500, 4000);
    }
    await sleep(250);
  }
  await posting;
  await Promise.all(kills);
  for (const s of slots) if (s.state === "stopped") s.start();

  console.log(`steps: ${counts.kills} kills done, ${sentIds.length} messages sent; draining...`);
  const sent = new Set(sentIds);
  const unsettled = () => listed.filter((m) => sent.has(m.id) && m.status !== "acknowledged").length;
  const drainUntil = Date.now() + DRAIN_MAX_MS;
  let lastProgress = Date.now();
  for (let left = Infinity; Date.now() < drainUntil && Date.now() - lastProgress < DRAIN_STALL_MS; ) {
    listed = await look(inFlight);
    if (unsettled() === 0 && inFlight.size === 0) break;
    if (unsettled() < left) (left = unsettled()), (lastProgress = Date.now());
    await sleep(400);
  }
  await Promise.all(inFlight);
  const messages = await finalMessages(json, agent, sentIds);
  const ledger = parseLedger(readLines(ledgerPath));
  const trace = parseTrace(readLines(tracePath));
  const { tally, invariants } = checkSteps({ agent, accountTag: await accountTag("dev"), sentIds, messages, ledger, trace, answers, approvals });
  const ok = invariants.every((i) => i.ok) && tally.sent > 0;

  printStepsReport(tally, invariants, counts, {
    revision: tree.revision, seed, servers, policy: opts.policy, pool, concurrency: opts.concurrency, startedAt, load0,
  });
  const keep = !ok || opts["keep-logs"];
  if (keep) writeFileSync(join(workDir, "messages.json"), JSON.stringify({ messages, answers }, null, 1));
  if (!ok) console.log(`\nsteps: FAILED (seed ${seed}); ledger, trace, serve logs and messages kept in ${workDir}`);
  else console.log(`\nsteps: all invariants held (seed ${seed})${keep ? `; logs kept in ${workDir}` : ""}`);
  keepLogs = keep;
  return ok ? 0 : 1;
}

async function stopAll(keep: boolean): Promise<void> {
  await Promise.allSettled(slots.map((s) => s.killMachine()));
  await dev?.stop();
  tree.dispose();
  if (!keep) rmSync(workDir, { recursive: true, force: true });
}

runMode(main, stopAll, () => keepLogs);
