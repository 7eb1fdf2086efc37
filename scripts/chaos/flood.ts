// The flood phase (`npm run chaos -- --flood`): against a fresh `wrangler dev` (TTL 3 s), or a
// server the caller has (test/e2e/flood.test.ts: the shared one, TTL 2 s), one agent with 100
// stored messages of 32 KiB, a holder that pings with its fence and a standby that pings with the
// auto-answered text (each every third of a TTL, as the client library does), while three more
// connections of the same account send `sync after:0` at 20/s each and another account renews a
// session lease every 300 ms. Then the holder goes silent mid-flood. Prints the stall, takeover
// time, renewal failures and (on its own server) workerd's memory before, during and after; exits
// non-zero when an invariant breaks.
import { execSync } from "node:child_process";
import WebSocket from "ws";
import { startWranglerDev } from "../../test/e2e/wrangler-dev.ts";

const TOKENS = "dev:8eb1988b5d11e51b42a73fbede6ec8602a22164ed1eecb7d67e729042623a371,other:c3a4c58fd94addae9223ecc52d7b031c6691fdddf53e745e321d8e8bee37d896";

/** Where a flood runs: the server, its heartbeat TTL, a token of the flooded account and one of another account. */
export interface FloodServer {
  url: string;
  ttlS: number;
  token: string;
  otherToken: string;
  /** workerd's resident memory (MB), when the server is this process's own. */
  rssMb?: () => number;
}

export interface FloodResult {
  ttlS: number;
  pages: number;
  refused: number;
  stallMs: number;
  standbyClosed: number | null;
  takeoverLateMs: number | null;
  renewals: number;
  renewFailures: number;
  answerAfterFloodMs: number;
  memory: { before: number; during: number; after: number } | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resident memory (MB) of the workerd processes under our own `wrangler dev`. */
function workerdRssMb(root: number): number {
  const rows = execSync("ps -eo pid,ppid,rss,comm").toString().trim().split("\n").slice(1).map((l) => l.trim().split(/\s+/));
  const mine = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of rows) if (!mine.has(Number(pid)) && mine.has(Number(ppid))) mine.add(Number(pid)), (grew = true);
  }
  const kb = rows.filter(([pid, , , comm]) => mine.has(Number(pid)) && comm === "workerd").reduce((sum, r) => sum + Number(r[2]), 0);
  return Math.round(kb / 1024);
}

function open(url: string, agent: string, machine: string, token: string): Promise<WebSocket> {
  const ws = new WebSocket(`${url.replace("http", "ws")}/agents/${agent}/serve?machine=${machine}`, { headers: { authorization: `Bearer ${token}` } });
  ws.on("error", () => {});
  return new Promise((resolve) => ws.once("open", () => resolve(ws)));
}

/** Runs one flood of `floodMs` (the holder goes silent halfway) on a fresh `wrangler dev` of its own (TTL 3 s). */
export async function runFloodOnOwnServer(floodMs = 10_000): Promise<FloodResult> {
  const dev = await startWranglerDev({ vars: { BATON_HEARTBEAT_TTL_SECONDS: "3", BATON_TOKENS: TOKENS } });
  try {
    return await runFlood(floodMs, {
      url: dev.url, ttlS: 3, token: "baton-dev-token", otherToken: "other-account-token", rssMb: () => workerdRssMb(dev.proc.pid!),
    });
  } finally {
    await dev.stop();
  }
}

/** Runs one flood of `floodMs` (the holder goes silent halfway) on `server`, on an agent of its own, and returns what it measured. */
export async function runFlood(floodMs: number, server: FloodServer): Promise<FloodResult> {
  const FLOOD_MS = floodMs;
  const TTL_S = server.ttlS;
  const PING_MS = Math.floor((TTL_S * 1000) / 3);
  const rss = server.rssMb ?? (() => 0);
  const agent = `flood-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const auth = { authorization: `Bearer ${server.token}`, "content-type": "application/json" };
  // Ten at a time: the stored messages are the flood's scene, not what it measures.
  for (let i = 0; i < 100; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, j) => fetch(`${server.url}/agents/${agent}/messages`, {
      method: "POST", headers: auth, body: JSON.stringify({ text: `${i + j}`.padEnd(32 * 1024, "x") }),
    }).then((r) => r.text())));
  }
  const memBefore = rss();
  const holder = await open(server.url, agent, "holder", server.token);
  let fence = 0;
  let lastPong = Date.now();
  let maxPongGap = 0;
  let holderSilent = false;
  holder.on("message", (d) => {
    const f = JSON.parse(String(d));
    if (f.type === "serve_lease" && f.held) fence = f.fence;
    if (f.type === "pong") {
      maxPongGap = Math.max(maxPongGap, Date.now() - lastPong);
      lastPong = Date.now();
    }
  });
  holder.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
  await sleep(300);
  let lastHolderPing = Date.now();
  const holderPing = setInterval(() => {
    if (holderSilent) return;
    lastHolderPing = Date.now();
    holder.send(JSON.stringify({ type: "ping", fence }));
  }, PING_MS);
  const standby = await open(server.url, agent, "standby", server.token);
  let standbyClosed: number | null = null;
  let takeoverAt: number | null = null;
  standby.on("message", (d) => {
    const f = JSON.parse(String(d));
    if (f.type === "serve_lease" && f.held) takeoverAt = Date.now();
  });
  standby.on("close", (code) => (standbyClosed = code));
  standby.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
  const standbyPing = setInterval(() => standby.readyState === WebSocket.OPEN && standby.send('{"type":"ping"}'), PING_MS);

  let renewFailures = 0;
  let renewals = 0;
  let renewMax = 0;
  const runId = crypto.randomUUID();
  const lease = (op: string) => fetch(`${server.url}/leases/${agent}-other/${op}`, {
    method: "POST", headers: { authorization: `Bearer ${server.otherToken}`, "content-type": "application/json" }, body: JSON.stringify({ run_id: runId, ttl_seconds: 3 }),
  });
  await (await lease("acquire")).text();
  let renewing = true;
  const renewLoop = (async () => {
    while (renewing) {
      const t0 = Date.now();
      const res = await lease("renew").then(async (r) => (await r.text(), r)).catch(() => null);
      renewMax = Math.max(renewMax, Date.now() - t0);
      renewals++;
      if (!res || res.status !== 200) renewFailures++;
      await sleep(300);
    }
  })();

  const flooders = await Promise.all([0, 1, 2].map((i) => open(server.url, agent, `flooder-${i}`, server.token)));
  let refused = 0;
  let pages = 0;
  for (const f of flooders) f.on("message", (d) => {
    const fr = JSON.parse(String(d));
    if (fr.type === "error" && fr.code === "rate_limited") refused++;
    if (fr.type === "result" && fr.op === "sync") pages++;
  });
  const floodStart = Date.now();
  const floods = flooders.map((f) => setInterval(() => f.readyState === WebSocket.OPEN && f.send('{"type":"sync","after":0}'), 50));
  let memDuring = 0;
  const silentAt = floodStart + FLOOD_MS / 2;
  while (Date.now() - floodStart < FLOOD_MS) {
    await sleep(500);
    memDuring = Math.max(memDuring, rss());
    if (!holderSilent && Date.now() >= silentAt) holderSilent = true;
  }
  const stallBeforeSilent = maxPongGap;
  for (const t of floods) clearInterval(t);
  const floodEnd = Date.now();
  const t0 = Date.now();
  const res = await fetch(`${server.url}/agents/${agent}/presence`, { headers: auth });
  const answerAfterFloodMs = Date.now() - t0;
  await res.text();
  // The silent holder's deadline passes within a TTL of the flood's end: wait for the takeover (or a TTL and a second more, and call it late).
  const waitUntil = Date.now() + TTL_S * 1000 + 1000;
  while (takeoverAt === null && Date.now() < waitUntil) await sleep(50);
  renewing = false;
  await renewLoop;
  clearInterval(holderPing);
  clearInterval(standbyPing);
  const memAfter = rss();
  // The holder's deadline runs from its last ping (sent on loopback, so it arrived within a few ms).
  const deadline = lastHolderPing + TTL_S * 1000;
  const takeoverLate = takeoverAt === null ? null : (takeoverAt as number) - deadline;
  for (const ws of [holder, standby, ...flooders]) ws.close();
  return {
    ttlS: TTL_S, pages, refused, stallMs: stallBeforeSilent, standbyClosed, takeoverLateMs: takeoverLate, renewals, renewFailures, answerAfterFloodMs,
    memory: server.rssMb ? { before: memBefore, during: memDuring, after: memAfter } : null,
  };
}

/** The phase's invariants, each with whether it held. */
export function floodInvariants(r: FloodResult): { name: string; ok: boolean }[] {
  return [
    { name: "the standby stayed connected through the flood", ok: r.standbyClosed === null },
    { name: "the standby took over within 1 s of the silent holder's deadline", ok: r.takeoverLateMs !== null && r.takeoverLateMs <= 1000 },
    { name: "the holder's pongs never stopped for a TTL while it pinged", ok: r.stallMs < r.ttlS * 1000 },
    { name: "another account's session-lease renewals all succeeded", ok: r.renewFailures === 0 },
    { name: "the object answered within 1 s of the flood's end", ok: r.answerAfterFloodMs < 1000 },
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runFloodOnOwnServer().then((r) => {
    console.log(`flood: ${r.pages} sync pages answered, ${r.refused} refused (rate_limited)`);
    console.log(`holder: longest gap between pongs while it pinged ${r.stallMs} ms`);
    console.log(`standby: ${r.standbyClosed === null ? "stayed connected" : `closed ${r.standbyClosed}`}; took over ${r.takeoverLateMs === null ? "never" : `${r.takeoverLateMs} ms after the silent holder's deadline`}`);
    console.log(`other account: ${r.renewals} renewals, ${r.renewFailures} failed`);
    console.log(`presence answered ${r.answerAfterFloodMs} ms after the flood ended`);
    if (r.memory) console.log(`workerd RSS: before ${r.memory.before} MB, peak during ${r.memory.during} MB, after ${r.memory.after} MB`);
    const invariants = floodInvariants(r);
    for (const i of invariants) console.log(`  ${i.ok ? "ok  " : "FAIL"} ${i.name}`);
    process.exit(invariants.every((i) => i.ok) ? 0 : 1);
  }, (e: Error) => {
    console.error(e);
    process.exit(1);
  });
}
