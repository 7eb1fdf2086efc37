// `npm run bench -- --only scale`: one account, 1,000 agents x 3 serve connections on one
// `wrangler dev` of its own (heartbeat TTL 30 s, so 3,000 heartbeating sockets are a realistic
// load rather than 4,500 pings a second). It measures how long every agent takes to elect, how
// long `GET /agents` and `baton who` take at that size against the 200 ms goal, whether reading
// the directory wakes agent objects, how long a burst of 1,000 simultaneous handoffs takes to
// settle, and workerd's memory. BATON_SCALE_AGENTS overrides the agent count for a quick look.
import { execFile } from "node:child_process";
import { loadavg } from "node:os";
import { promisify } from "node:util";
import { DEV_TOKEN, type DevServer } from "../../test/e2e/wrangler-dev.ts";
import { closeSummary, heartbeat, holders, openConn, pool, until, type Conn } from "./scale-conns.ts";
import { fmt, markdownTable, percentile } from "./stats.ts";
import { workerdMemoryMiB, type WorkerdMemory } from "./workerd-memory.ts";

const AGENTS = Number(process.env.BATON_SCALE_AGENTS ?? "1000");
const CONNECTIONS_PER_AGENT = 3;
const TTL_SECONDS = 30;
const OPEN_IN_FLIGHT = 32;
const READ_IN_FLIGHT = 32;
const SAMPLES = 20;
const GOAL_MS = 200;
const execFileAsync = promisify(execFile);

export interface ScaleEnv {
  /** Starts a wrangler dev of the tree under test; the caller stops it (also on Ctrl-C). */
  startDev(vars: Record<string, string>): Promise<DevServer>;
  /** The built CLI of that tree (dist/cli/main.js). */
  cli: string;
}

function say(text: string): void {
  console.log(`  scale: ${text}`);
}

async function timed<T>(run: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await run();
  return { ms: performance.now() - start, value };
}

async function listAgents(url: string): Promise<{ agent: string; holder: unknown }[]> {
  const res = await fetch(`${url}/agents`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
  if (res.status !== 200) throw new Error(`GET /agents answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { agents: { agent: string; holder: unknown }[] }).agents;
}

/** Every agent's invocation count (each read is one invocation of that agent itself). */
async function totalWakes(url: string, agents: readonly string[]): Promise<number> {
  const wakes = await pool(agents, READ_IN_FLIGHT, async (agent) => {
    const res = await fetch(`${url}/agents/${agent}/presence`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    return ((await res.json()) as { wakes: number }).wakes;
  });
  return wakes.reduce((a, b) => a + b, 0);
}

/** Asynchronous, so this process keeps heartbeating its connections meanwhile. */
async function runCli(cli: string, args: string[]): Promise<void> {
  try {
    await execFileAsync(process.execPath, [cli, ...args], { env: { ...process.env, BATON_TOKEN: DEV_TOKEN }, maxBuffer: 1 << 28 });
  } catch (e) {
    throw new Error(`baton ${args.join(" ")} failed: ${(e as { stderr?: string }).stderr ?? (e as Error).message}`);
  }
}

/** Every one of `agents` agents has exactly one open connection told it holds. */
function exactlyOneEach(conns: readonly Conn[], agents: number): boolean {
  const held = holders(conns);
  return held.length === agents && new Set(held.map((c) => c.agent)).size === agents;
}

function row(label: string, samples: number[]): string[] {
  return [label, `${fmt(percentile(samples, 50))} ms`, `${fmt(percentile(samples, 99))} ms`, String(samples.length)];
}

function goal(label: string, samples: number[]): string {
  const p50 = percentile(samples, 50);
  const p99 = percentile(samples, 99);
  const verdict = p99 < GOAL_MS ? "met" : p50 < GOAL_MS ? "met at p50, not at p99" : "not met";
  return `- ${label} under ${GOAL_MS} ms: ${verdict} (p50 ${fmt(p50)} ms, p99 ${fmt(p99)} ms)`;
}

function memoryLine(label: string, m: WorkerdMemory): string {
  return `${label}: Worker ${fmt(m.worker)} MiB, wrangler dev's proxy ${fmt(m.proxy)} MiB`;
}

/** Runs the scenario and returns its markdown section. */
export async function runScale(env: ScaleEnv): Promise<string> {
  const dev = await env.startDev({ BATON_HEARTBEAT_TTL_SECONDS: String(TTL_SECONDS), BATON_PRESENCE_SCAN_SECONDS: String(TTL_SECONDS) });
  const conns: Conn[] = [];
  const beats = heartbeat(conns, (TTL_SECONDS * 1000) / 3);
  try {
    return await Promise.race([measure(env, dev, conns), exitOf(dev)]);
  } catch (e) {
    throw new Error(`${(e as Error).message}\nconnections closed: ${closeSummary(conns)}\nwrangler dev said:\n${dev.output().slice(-3000)}`);
  } finally {
    beats.stop();
    for (const c of conns) c.ws.terminate();
  }
}

/** Rejects with wrangler's last output if the dev server exits while the scenario runs. */
function exitOf(dev: DevServer): Promise<never> {
  return new Promise((_, reject) => {
    dev.proc.once("exit", (code, signal) => reject(new Error(`wrangler dev exited (${code ?? signal}) during the scale run:\n${dev.output().slice(-4000)}`)));
  });
}

async function measure(env: ScaleEnv, dev: DevServer, conns: Conn[]): Promise<string> {
  const loadBefore = loadavg()[0]!;
  const memIdle = workerdMemoryMiB(dev);
  const agents = Array.from({ length: AGENTS }, (_, i) => `scale-${String(i).padStart(4, "0")}`);
  const slots = agents.flatMap((agent) => Array.from({ length: CONNECTIONS_PER_AGENT }, (_, k) => ({ agent, machine: `m${k}` })));
  say(`opening ${slots.length} connections for ${AGENTS} agents, ${OPEN_IN_FLIGHT} at a time...`);
  const electStart = performance.now();
  let opened = 0;
  const open = await timed(() => pool(slots, OPEN_IN_FLIGHT, async (s) => {
    const conn = await openConn(dev.url, s.agent, s.machine, conns);
    if (++opened % 500 === 0) say(`${opened} opened, ${holders(conns).length} holders, closed: ${closeSummary(conns)}, load ${loadavg()[0]!.toFixed(1)}`);
    return conn;
  }));
  await until(() => new Set(holders(conns).map((c) => c.agent)).size === AGENTS, 120_000, "every agent to elect");
  const electedMs = performance.now() - electStart;
  const exactlyOne = exactlyOneEach(conns, AGENTS);
  say(`every agent elected after ${fmt(electedMs)} ms (sockets opened in ${fmt(open.ms)} ms)`);

  // The directory hears of each agent shortly after its election: wait until it lists them all.
  const directoryLag = await timed(async () => {
    const deadline = Date.now() + 60_000;
    while ((await listAgents(dev.url)).filter((a) => a.holder !== null).length < AGENTS) {
      if (Date.now() > deadline) throw new Error("the directory did not list every agent with its holder within 60 s");
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  const memConnected = workerdMemoryMiB(dev);

  // Wakes: a listing that called agents would wake every agent once per call. Heartbeats and
  // alarms wake agents anyway, so the window with listings is compared with one as long without.
  say(`${SAMPLES} GET /agents calls, with agent wakes counted before and after...`);
  const w0 = await totalWakes(dev.url, agents);
  const list: number[] = [];
  let listedCount = 0;
  const listing = await timed(async () => {
    for (let i = 0; i < SAMPLES; i++) {
      const { ms, value } = await timed(async () => (await listAgents(dev.url)).length);
      list.push(ms);
      listedCount = value;
    }
  });
  const w1 = await totalWakes(dev.url, agents);
  await new Promise((r) => setTimeout(r, listing.ms));
  const w2 = await totalWakes(dev.url, agents);
  // Each pass of presence reads is itself one wake per agent.
  const wakesWithListing = w1 - w0 - AGENTS;
  const wakesWithout = w2 - w1 - AGENTS;
  const listingWoke = wakesWithListing - wakesWithout >= AGENTS;

  say(`${SAMPLES} runs of baton who...`);
  const nodeStart: number[] = [];
  const who: number[] = [];
  const whoJson: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    nodeStart.push((await timed(() => runCli(env.cli, ["--version"]))).ms);
    who.push((await timed(() => runCli(env.cli, ["who", "--url", dev.url]))).ms);
    whoJson.push((await timed(() => runCli(env.cli, ["who", "--url", dev.url, "--json"]))).ms);
  }

  say(`${AGENTS} simultaneous handoffs...`);
  const before = holders(conns);
  const fenceBefore = new Map(before.map((h) => [h.agent, h.fence]));
  const handoffs: number[] = [];
  const start = performance.now();
  const waits = before.map((holder) => {
    const standbys = conns.filter((c) => c.agent === holder.agent && c !== holder && !c.closed);
    return new Promise<void>((resolve) => {
      for (const s of standbys) {
        s.onHeld = () => {
          handoffs.push(performance.now() - start);
          for (const t of standbys) t.onHeld = null;
          resolve();
        };
      }
    });
  });
  for (const holder of before) holder.ws.send(JSON.stringify({ type: "serve_lease", op: "release" }));
  await Promise.race([
    Promise.all(waits),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`the handoff burst did not settle in 120 s (${handoffs.length} of ${before.length})`)), 120_000)),
  ]);
  const burstMs = performance.now() - start;
  const settled = new Set(holders(conns).filter((c) => c.fence > (fenceBefore.get(c.agent) ?? Infinity)).map((c) => c.agent)).size;
  // Frames to different sockets arrive in any order: a released holder's held:false may trail its successor's held:true.
  const oneAfter = await until(() => exactlyOneEach(conns, AGENTS), 10_000, "").then(() => true, () => false);
  const memAfter = workerdMemoryMiB(dev);
  const loadAfter = loadavg()[0]!;

  const table = markdownTable(["step", "p50", "p99", "samples"], [
    ["every agent elected (first socket opened to last holder told)", `${fmt(electedMs)} ms total`, "-", `${AGENTS} agents`],
    ["directory lists every agent with its holder, after the last election", `${fmt(directoryLag.ms)} ms`, "-", "1"],
    row(`GET /agents (${listedCount} agents listed)`, list),
    row("`baton who` (every agent's table, from `GET /agents?view=who`; a new Node process each time)", who),
    row("`baton who --json` (every agent in full)", whoJson),
    row("`baton --version` (the same Node process start, no request)", nodeStart),
    row(`handoff in a burst of ${before.length} releases, release to the standby's held:true`, handoffs),
    ["whole burst settled (every agent's standby told held:true with a higher fence)", `${fmt(burstMs)} ms total`, "-", `${settled} agents`],
  ]);
  return `### Scale: ${AGENTS} agents x ${CONNECTIONS_PER_AGENT} serve connections, one account, one wrangler dev

TTL ${TTL_SECONDS} s: every connection heartbeats every ${TTL_SECONDS / 3} s, a holder with its fence (the object answers), a standby
with a plain ping (the runtime answers). ${slots.length} sockets opened ${OPEN_IN_FLIGHT} at a time. One-minute load average
${loadBefore.toFixed(1)} at the start and ${loadAfter.toFixed(1)} at the end.

Every agent elected exactly one holder: ${exactlyOne ? "yes" : "NO"}; after the burst: ${oneAfter ? "yes" : "NO"}. Connections the
coordinator closed: ${closeSummary(conns)}.

${table}

Goals (issue 18):
${goal("`GET /agents`", list)}
${goal("`baton who` (whole account, Node start included)", who)}
- reading the directory wakes no agent object: ${listingWoke ? "NOT MET" : "met"}. Agent wakes summed over all ${AGENTS} agents
  while ${SAMPLES} \`GET /agents\` calls ran: ${wakesWithListing}; in an equally long window without calls: ${wakesWithout}
  (heartbeats and alarms); listings that called agents would add ${AGENTS * SAMPLES}.
- burst of ${AGENTS} simultaneous handoffs settles: ${settled === AGENTS && oneAfter ? "met" : "NOT MET"}, in ${fmt(burstMs)} ms.

workerd resident memory (MiB): ${memoryLine("before any connection", memIdle)}; ${memoryLine("every agent connected", memConnected)};
${memoryLine("after the burst", memAfter)}.`;
}
