// `npm run chaos -- --mode lifeline`: `baton serve` itself dies by SIGKILL at random points while
// its command writes to a sink outside baton (scripts/chaos/lifeline-writer.mjs: the command, a
// child that ignores SIGTERM, a process that escaped with setsid). Two serve processes of one agent
// (single mode) against wrangler dev on loopback; a random 0-1.5 s after a serve's commands are
// seen writing, the driver SIGKILLs that serve and starts it again a moment later. Invariant: no write of an instance arrives later
// than 100 ms after that instance's serve was SIGKILLed; the largest gap is reported. With
// --commit REV the serve processes run another commit's CLI (main, to see the invariant fail).
import { closeSync, fstatSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { DevServer } from "../../test/e2e/wrangler-dev.ts";
import { snapshotOfHead, workingTree, wranglerDevOf } from "../bench/snapshot.ts";
import { ServeSlot } from "./serve-fleet.ts";
import { seeded } from "./seeded.ts";
import { runMode } from "./run-mode.ts";

const { values: opts } = parseArgs({
  options: {
    seconds: { type: "string", default: "45" },
    servers: { type: "string", default: "2" },
    ttl: { type: "string", default: "2" },
    "work-ms": { type: "string", default: "1500" },
    "budget-ms": { type: "string", default: "100" },
    seed: { type: "string" },
    commit: { type: "string" },
    "working-tree": { type: "boolean", default: false },
    "keep-logs": { type: "boolean", default: false },
    mode: { type: "string" },
  },
});
const seconds = Number(opts.seconds);
const budgetMs = Number(opts["budget-ms"]);
const seed = Number(opts.seed ?? Math.floor(Math.random() * 2 ** 31));
const TOKEN = "baton-dev-token";
const WRITER = join(import.meta.dirname, "lifeline-writer.mjs");
/** After the last kill, how long the sink is watched for late writes. */
const SETTLE_MS = 2000;

const { pick, between } = seeded(seed);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tree = opts.commit ? snapshotOfHead(opts.commit) : opts["working-tree"] ? workingTree() : snapshotOfHead();
const workDir = mkdtempSync(join(tmpdir(), "baton-chaos-lifeline-"));
const agent = `chaos-lifeline-${process.pid}`;
/** Per serve instance: when its serve was SIGKILLed, and its writes' arrival times. */
const killedAt = new Map<string, number>();
const writes = new Map<string, number[]>();
let dev: DevServer | null = null;
let slots: ServeSlot[] = [];
let keepLogs = false;
const sinkPath = join(workDir, "sink");
let sinkRead = 0;
/** Per "instance role": the stamp of its last write. */
const lastByRole = new Map<string, number>();

/** Reads the sink file's new lines into `writes` (each line: stamp, instance, role, message, pid). */
function readSink(): void {
  const fd = openSync(sinkPath, "r");
  const size = fstatSync(fd).size;
  const buf = Buffer.alloc(size - sinkRead);
  readSync(fd, buf, 0, buf.length, sinkRead);
  closeSync(fd);
  const text = buf.toString("utf8");
  const fresh = text.slice(0, text.lastIndexOf("\n") + 1);
  sinkRead += Buffer.byteLength(fresh);
  for (const line of fresh.split("\n").filter(Boolean)) {
    const [at, instance, role] = line.split(" ");
    const list = writes.get(instance!) ?? [];
    list.push(Number(at));
    writes.set(instance!, list);
    const last = lastByRole.get(`${instance} ${role}`) ?? 0;
    lastByRole.set(`${instance} ${role}`, Math.max(last, Number(at)));
  }
}

async function coordinator(path: string, init?: RequestInit): Promise<Response> {
  return fetch(`${dev!.url}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" } });
}

/** Keeps a few messages queued, so the holder always has a run writing. */
async function postMessages(until: number): Promise<number> {
  let sent = 0;
  while (Date.now() < until) {
    const open = await coordinator(`/agents/${agent}/presence`).then((r) => r.json() as Promise<{ queued?: number }>).catch(() => ({ queued: 0 }));
    if ((open.queued ?? 0) < 3) {
      const res = await coordinator(`/agents/${agent}/messages`, { method: "POST", body: JSON.stringify({ text: `lifeline ${sent}` }) }).catch(() => null);
      if (res?.status === 201) sent += 1;
    }
    await sleep(300);
  }
  return sent;
}

/** The serve processes whose commands wrote within the last 200 ms. */
function writing(): ServeSlot[] {
  const latest = (s: ServeSlot) => Math.max(0, ...(writes.get(s.instance)?.slice(-20) ?? []));
  return slots.filter((s) => s.state === "running" && !s.busy && Date.now() - latest(s) < 200);
}

/** SIGKILL of a serve process whose commands write, started again 0.3-1 s later. */
async function killOne(slot: ServeSlot): Promise<void> {
  slot.busy = true;
  try {
    killedAt.set(slot.instance, Date.now());
    await slot.kill();
    await sleep(between(300, 1000));
    slot.start();
  } finally {
    slot.busy = false;
  }
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  const load0 = loadavg()[0]!;
  const { startWranglerDev } = await wranglerDevOf(tree);
  writeFileSync(sinkPath, "");
  const servers = Number(opts.servers);
  console.log(`lifeline: seed ${seed}, ${servers} serve processes of ${agent}, ${seconds} s of SIGKILLs of serve, budget ${budgetMs} ms, baton ${tree.revision}`);
  dev = await startWranglerDev({ vars: { BATON_HEARTBEAT_TTL_SECONDS: opts.ttl!, BATON_PRESENCE_SCAN_SECONDS: "1" } });
  slots = Array.from({ length: servers }, (_, i) => new ServeSlot(i, {
    treeRoot: tree.root, workDir, url: dev!.url, token: TOKEN, agent,
    command: [process.execPath, WRITER], env: { CHAOS_WORK_MS: opts["work-ms"]!, CHAOS_SINK_FILE: sinkPath },
  }));
  for (const s of slots) s.start();
  const deadline = Date.now() + seconds * 1000;
  const posting = postMessages(deadline);
  const kills: Promise<void>[] = [];
  // A kill lands a random 0-1.5 s after a serve's commands are seen writing.
  let killAt: number | null = null;
  while (Date.now() < deadline) {
    readSink();
    const candidates = writing();
    if (candidates.length === 0) killAt = null;
    else if (killAt === null) killAt = Date.now() + between(0, 1500);
    else if (Date.now() >= killAt) {
      kills.push(killOne(pick(candidates)).catch((e: Error) => console.error(`lifeline: kill failed: ${e.message}`)));
      killAt = null;
    }
    await sleep(20);
  }
  const sent = await posting;
  await Promise.all(kills);
  // The end: every serve process SIGKILLed at once, then the sink is watched for late writes.
  for (const s of slots) if (s.state === "running") killedAt.set(s.instance, Date.now());
  await Promise.all(slots.map((s) => s.kill()));
  await sleep(SETTLE_MS);
  readSink();

  const gaps = [...killedAt].map(([instance, at]) => ({ instance, gap: Math.max(...(writes.get(instance) ?? [-Infinity])) - at }));
  const wrote = gaps.filter((g) => Number.isFinite(g.gap));
  const late = wrote.filter((g) => g.gap > budgetMs);
  const largest = wrote.reduce((m, g) => Math.max(m, g.gap), -Infinity);
  const total = [...writes.values()].reduce((n, w) => n + w.length, 0);
  const ok = late.length === 0 && wrote.length > 0;
  console.log(`\n${killedAt.size} serve processes SIGKILLed (${wrote.length} of them with a run that had written), ${sent} messages posted, ${total} writes at the sink`);
  console.log(`largest gap between a serve's SIGKILL and the last write of its commands: ${largest} ms (budget ${budgetMs} ms; negative: the last write came before the kill)`);
  const sorted = wrote.map((g) => g.gap).sort((a, b) => a - b);
  if (sorted.length > 0) console.log(`gaps: median ${sorted[Math.floor(sorted.length / 2)]} ms, ${sorted.filter((g) => g > 0).length} after the kill`);
  for (const role of ["command", "stubborn", "escaped"]) {
    const byRole = [...killedAt].map(([instance, at]) => (lastByRole.get(`${instance} ${role}`) ?? -Infinity) - at).filter(Number.isFinite);
    if (byRole.length > 0) console.log(`  ${role}: largest gap ${Math.max(...byRole)} ms over ${byRole.length} kills`);
  }
  for (const g of late.slice(0, 10)) console.log(`  LATE ${g.instance}: a write ${g.gap} ms after its serve died`);
  console.log(`\n--- markdown ---\n${new Date().toISOString()}, baton ${tree.revision}, seed ${seed}, ${Math.round((Date.now() - startedAt) / 1000)} s, load average ${load0.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end: ` +
    `${killedAt.size} SIGKILLs of serve (${wrote.length} while its commands wrote), ${total} writes, largest gap ${largest} ms, ${late.length} over ${budgetMs} ms.\n--- end ---`);
  keepLogs = !ok || opts["keep-logs"]!;
  console.log(ok ? `\nlifeline: held (seed ${seed})` : `\nlifeline: FAILED (seed ${seed}); serve logs kept in ${workDir}`);
  return ok ? 0 : 1;
}

async function stopAll(keep: boolean): Promise<void> {
  await Promise.allSettled(slots.map((s) => s.killMachine()));
  await dev?.stop().catch(() => {});
  tree.dispose();
  if (!keep) rmSync(workDir, { recursive: true, force: true });
}

runMode(main, stopAll, () => keepLogs);
