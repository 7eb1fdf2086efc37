// `npm run bench -- --only scale`: one account, 1,000 agents x 3 serve connections on one
// `wrangler dev` of its own (heartbeat TTL 30 s, so 3,000 heartbeating sockets are a realistic
// load rather than 4,500 pings a second). It measures how long every agent takes to elect, how
// long `GET /agents` and `baton who` take at that size, that reading the directory wakes no
// agent object, how long a burst of 1,000 simultaneous handoffs takes to settle, and workerd's
// memory. BATON_SCALE_AGENTS overrides the agent count for a quick look.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "../../test/e2e/wrangler-dev.ts";
import { fmt, markdownTable, percentile } from "./stats.ts";

const AGENTS = Number(process.env.BATON_SCALE_AGENTS ?? "1000");
const CONNECTIONS_PER_AGENT = 3;
const TTL_SECONDS = 30;
const OPEN_IN_FLIGHT = 64;
const SAMPLES = 10;
const PING = '{"type":"ping"}';

interface Conn {
  agent: string;
  ws: WebSocket;
  held: boolean;
  closed: boolean;
  fence: number;
  /** Resolves the next time this connection is told it holds. */
  onHeld: (() => void) | null;
}

function openConn(url: string, agent: string, machine: string): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/agents/${agent}/serve?machine=${machine}`, {
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
    });
    const conn: Conn = { agent, ws, held: false, closed: false, fence: 0, onHeld: null };
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { type: string; held?: boolean; fence?: number };
      if (frame.type === "welcome") {
        ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
        resolve(conn);
      }
      if (frame.type === "serve_lease") {
        conn.held = frame.held === true;
        conn.fence = frame.fence ?? conn.fence;
        if (conn.held) conn.onHeld?.();
      }
    });
    ws.on("error", reject);
    ws.on("close", () => {
      conn.closed = true;
      conn.held = false;
    });
  });
}

/** Runs `task` over `items` with at most `limit` in flight. */
async function pool<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await task(items[i]!);
    }
  }));
  return out;
}

async function until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resident memory (MiB) of every workerd process below the dev server's process. */
function workerdMemoryMiB(dev: DevServer): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited meanwhile
    }
  }
  let kib = 0;
  const walk = (pid: number): void => {
    for (const child of children.get(pid) ?? []) {
      try {
        if (readFileSync(`/proc/${child}/comm`, "utf8").trim() === "workerd") {
          kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child}/status`, "utf8"))?.[1] ?? 0);
        }
      } catch {
        // exited meanwhile
      }
      walk(child);
    }
  };
  walk(dev.proc.pid!);
  return kib / 1024;
}

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await run();
  return { ms: performance.now() - start, value };
}

async function listAgents(url: string): Promise<{ agent: string; holder: unknown }[]> {
  const res = await fetch(`${url}/agents`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
  return ((await res.json()) as { agents: { agent: string; holder: unknown }[] }).agents;
}

async function wakesOf(url: string, agents: readonly string[]): Promise<number> {
  let sum = 0;
  for (const agent of agents) {
    const res = await fetch(`${url}/agents/${agent}/presence`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    sum += ((await res.json()) as { wakes: number }).wakes;
  }
  return sum;
}

function row(label: string, samples: number[], unit = "ms"): string[] {
  return [label, `${fmt(percentile(samples, 50))} ${unit}`, `${fmt(percentile(samples, 99))} ${unit}`, String(samples.length)];
}

/** Runs the scenario and returns its markdown section. */
export async function runScale(): Promise<string> {
  const cli = join(ROOT, "dist/cli/main.js");
  if (!existsSync(cli)) spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs")], { cwd: ROOT, stdio: "inherit" });
  const dev = await startWranglerDev({ vars: { BATON_HEARTBEAT_TTL_SECONDS: String(TTL_SECONDS), BATON_PRESENCE_SCAN_SECONDS: String(TTL_SECONDS) } });
  const conns: Conn[] = [];
  const heartbeat = setInterval(() => {
    for (const c of conns) if (c.ws.readyState === WebSocket.OPEN) c.ws.send(PING);
  }, (TTL_SECONDS * 1000) / 3);
  try {
    const memIdle = workerdMemoryMiB(dev);
    const agents = Array.from({ length: AGENTS }, (_, i) => `scale-${String(i).padStart(4, "0")}`);
    const slots = agents.flatMap((agent) => Array.from({ length: CONNECTIONS_PER_AGENT }, (_, k) => ({ agent, machine: `m${k}` })));
    console.log(`  scale: opening ${slots.length} connections for ${AGENTS} agents...`);
    const open = await timed(() => pool(slots, OPEN_IN_FLIGHT, (s) => openConn(dev.url, s.agent, s.machine)));
    conns.push(...open.value);
    // A connection closed by the coordinator (say, for a missed heartbeat on a loaded machine) holds nothing.
    const holders = () => conns.filter((c) => c.held && !c.closed);
    const elected = await timed(() => until(() => new Set(holders().map((c) => c.agent)).size === AGENTS, 120_000, "every agent to elect"));
    const holdersPerAgent = new Map<string, number>();
    for (const c of holders()) holdersPerAgent.set(c.agent, (holdersPerAgent.get(c.agent) ?? 0) + 1);
    const exactlyOne = [...holdersPerAgent.values()].every((n) => n === 1) && holdersPerAgent.size === AGENTS;
    // The directory hears of each agent shortly after its election: wait until it lists them all.
    const listingDeadline = Date.now() + 60_000;
    while ((await listAgents(dev.url)).filter((a) => a.holder !== null).length < AGENTS) {
      if (Date.now() > listingDeadline) throw new Error("the directory did not list every agent with its holder within 60 s");
      await new Promise((r) => setTimeout(r, 500));
    }
    const memConnected = workerdMemoryMiB(dev);

    const sample = agents.slice(0, 10);
    const wakesBefore = await wakesOf(dev.url, sample);
    const list: number[] = [];
    let listed = 0;
    for (let i = 0; i < SAMPLES; i++) {
      const { ms, value } = await timed(async () => (await listAgents(dev.url)).length);
      list.push(ms);
      listed = value;
    }
    // The presence reads themselves count one wake each; the listings must add none.
    const wakesFromListing = (await wakesOf(dev.url, sample)) - wakesBefore - sample.length;
    const who: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { ms } = await timed(async () => {
        const r = spawnSync(process.execPath, [cli, "who", "--url", dev.url, "--json"], { env: { ...process.env, BATON_TOKEN: DEV_TOKEN }, encoding: "utf8", maxBuffer: 1 << 28 });
        if (r.status !== 0) throw new Error(`baton who failed: ${r.stderr}`);
      });
      who.push(ms);
    }

    console.log(`  scale: ${AGENTS} simultaneous handoffs...`);
    const handoffs: number[] = [];
    const waits = holders().map((holder) => {
      const standbys = conns.filter((c) => c.agent === holder.agent && c !== holder);
      return new Promise<void>((resolve) => {
        const start = performance.now();
        for (const s of standbys) {
          s.onHeld = () => {
            handoffs.push(performance.now() - start);
            for (const t of standbys) t.onHeld = null;
            resolve();
          };
        }
        holder.ws.send(JSON.stringify({ type: "serve_lease", op: "release" }));
      });
    });
    const burst = await timed(() => Promise.race([
      Promise.all(waits),
      new Promise((_, reject) => setTimeout(() => reject(new Error("handoff burst did not settle in 120 s")), 120_000)),
    ]));
    const settledAgents = new Set(holders().filter((c) => c.fence === 2).map((c) => c.agent)).size;
    const memAfter = workerdMemoryMiB(dev);

    const table = markdownTable(["step", "p50", "p99", "samples"], [
      ["every agent elected (all connections opened and claimed)", `${fmt(open.ms + elected.ms)} ms total`, "-", "1"],
      row(`GET /agents (${listed} agents listed)`, list),
      row("`baton who --json` (every agent, a new Node process each time)", who),
      row(`handoff in a burst of ${AGENTS} releases, release to the standby's held:true`, handoffs),
      ["whole burst settled (every standby holds, fence 2)", `${fmt(burst.ms)} ms total`, "-", `${settledAgents} agents`],
    ]);
    return `### Scale: ${AGENTS} agents x ${CONNECTIONS_PER_AGENT} serve connections, one account, one wrangler dev

TTL ${TTL_SECONDS} s (heartbeats every ${TTL_SECONDS / 3} s, answered by the runtime). ${conns.length} sockets opened ${OPEN_IN_FLIGHT} at a time.
Every agent elected exactly one holder: ${exactlyOne ? "yes" : "NO"}; connections the coordinator closed: ${conns.filter((c) => c.closed).length}. Agent wakes caused by ${SAMPLES} \`GET /agents\` calls
(summed over 10 sampled agents): ${wakesFromListing}.

${table}

workerd resident memory: ${fmt(memIdle)} MiB before any connection, ${fmt(memConnected)} MiB with every agent connected,
${fmt(memAfter)} MiB after the burst.`;
  } finally {
    clearInterval(heartbeat);
    for (const c of conns) c.ws.terminate();
    await dev.stop();
  }
}
