// A coordinator restart, for real: kill -9 of wrangler dev, then a new one on the same state (as a
// deploy or a crash restarts every object). Every socket drops; the lease, fences, claim counter,
// checkpoints and open questions survive; the previous holder's runner gets its lease back within
// the restart grace; one that does not return, or whose machine is drained, does not hold the
// others up; and what baton shows is true: a holder that died with the coordinator and never came
// back is gone from GET /agents, `baton who` and /metrics within three heartbeat TTLs of the
// restart (the one real-time bound here, which puts the file in e2e-timed). One restart serves every
// case: each sets its scene up on an agent of its own before it, and looks after it. Each agent's
// clock but the dead holder's stands still from its scene's start (the test clock, kept in the
// object's storage across the restart), so a grace ends when a test moves it there, however long
// the cases before took.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentMetrics, sampleValue } from "./prometheus.ts";
import { authHeaders, getJson, postMessage, runBaton, startServe, uniqueAgent, writeSinkCommand, type ServeProc } from "./serve-helpers.ts";
import { rawRunner, type RawServe } from "./raw-serve.ts";
import { advanceClock, startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import type { DirectoryEntry } from "../../worker/wire/protocol.ts";
import type { Presence } from "../../worker/wire/server-frames.ts";

const TTL_S = 2;
const GRACE_MS = 1000;
const VARS = { BATON_HEARTBEAT_TTL_SECONDS: String(TTL_S), BATON_PRESENCE_SCAN_SECONDS: "1", BATON_RESTART_GRACE_SECONDS: String(GRACE_MS / 1000) };
let dev: DevServer;
let restartedAt = 0;
const open: RawServe[] = [];
/** Real `baton serve` processes: stopped while the coordinator is down, so they never come back. */
const serves: ServeProc[] = [];

type Runner = Awaited<ReturnType<typeof runner>>;

async function runner(agent: string, machine: string) {
  const r = await rawRunner(dev.url, agent, machine, `run-${machine}`);
  open.push(r.sock);
  return r;
}

const presence = (agent: string) => getJson<Presence>(`${dev.url}/agents/${agent}/presence`);

async function drain(agent: string, machine: string) {
  const res = await fetch(`${dev.url}/agents/${agent}/drain`, { method: "POST", headers: authHeaders(), body: JSON.stringify({ machine }) });
  return (await res.json()) as Record<string, unknown>;
}

/** An agent of its own whose clock stands still from now on (it moves only when a test moves it). */
async function frozenAgent(prefix: string): Promise<string> {
  const agent = uniqueAgent(prefix);
  await advanceClock(dev.url, 0, { agent });
  return agent;
}

/** A case: its scene before the restart, and what is true after it. */
interface Case<S> {
  before(): Promise<S>;
  after(scene: S): Promise<void>;
}
const cases = new Map<string, { case: Case<unknown>; scene?: unknown }>();
function restartCase<S>(name: string, c: Case<S>): void {
  cases.set(name, { case: c as Case<unknown> });
  it(name, async () => {
    const entry = cases.get(name)!;
    await entry.case.after(entry.scene);
  });
}

/** What each view says of the agent's holder: a machine when it claims a live one. */
async function views(agent: string) {
  const entry = (await getJson<{ agents: DirectoryEntry[] }>(`${dev.url}/agents`)).agents.find((a) => a.agent === agent);
  const metrics = await (await fetch(`${dev.url}/metrics`, { headers: authHeaders() })).text();
  const who = runBaton(["who"], { BATON_URL: dev.url });
  return {
    directory: entry && entry.confirmed && entry.holder ? entry.holder.machine : null,
    metricsHolders: sampleValue(agentMetrics(metrics, agent), "baton_agent_holders") ?? 0,
    who: who.stdout.split("\n").find((l) => l.startsWith(`${agent}: holder`)) ?? null,
  };
}

/** Since when (ms after the restart) every view has shown no holder, watched until `untilMs` after the restart; null if one still shows it. */
async function truthSince(agent: string, untilMs: number): Promise<number | null> {
  let since: number | null = null;
  while (Date.now() - restartedAt < untilMs) {
    const seen = await views(agent);
    const shown = seen.directory !== null || seen.metricsHolders !== 0 || seen.who !== null;
    since = shown ? null : (since ?? Date.now() - restartedAt);
    await new Promise((r) => setTimeout(r, 250));
  }
  return since;
}

beforeAll(async () => {
  dev = await startWranglerDev({ vars: VARS });
  for (const entry of cases.values()) entry.scene = await entry.case.before();
  await dev.crash();
  await Promise.all(serves.map((s) => s.stop()));
  dev = await startWranglerDev({ vars: VARS, port: dev.port, persistDir: dev.persistDir });
  restartedAt = Date.now();
}, 240_000); // two start-ups and seven scenes
afterAll(async () => {
  for (const s of open) s.close();
  await Promise.all(serves.map((s) => s.stop()));
  await dev?.stop();
});

describe("after a coordinator restart", () => {
  // First, so that its watch starts as the restart ends.
  restartCase("no view shows a holder that died with the coordinator three TTLs after the restart, and its object still knows its name", {
    async before() {
      const agent = uniqueAgent("ghost");
      const { command, sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-ghost-")));
      const holder = startServe({ url: dev.url, agent, tag: "a", command, sink });
      serves.push(holder);
      await holder.waitFor(/holder/);
      // Every view shows it before the crash (expect.poll is for tests, not the beforeAll this runs in).
      let seen = await views(agent);
      for (const deadline = Date.now() + 10_000; (seen.directory === null || seen.metricsHolders !== 1) && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 250));
        seen = await views(agent);
      }
      expect(seen).toMatchObject({ directory: "machine-a", metricsHolders: 1 });
      expect(seen.who).toContain("machine-a");
      return { agent };
    },
    async after({ agent }: { agent: string }) {
      // True by three TTLs after the restart, and it stays true.
      const since = await truthSince(agent, 3 * TTL_S * 1000 + 1500);
      expect(since).not.toBeNull();
      expect(since!).toBeLessThanOrEqual(3 * TTL_S * 1000);
      console.log(`after the restart, every view was true ${since} ms later`);
      // The agent object, woken by its alarm without its name, still knows who it is.
      expect(await getJson(`${dev.url}/agents/${agent}/presence`)).toMatchObject({ agent, holder: null });
    },
  });

  restartCase("the lease is free at once when nobody had it reserved, fences and claim sequences go on growing, and checkpoints survive", {
    async before() {
      const agent = await frozenAgent("restart");
      const a = await runner(agent, "a");
      a.sock.send({ type: "checkpoint", fence: a.lease.fence, value: { step: 3 }, req: "cp" });
      await a.sock.next("result", (f) => f.req === "cp");
      await drain(agent, "a"); // nothing runs, so the holder hands on at once; its reservation is gone
      return { agent, a };
    },
    async after({ agent, a }: { agent: string; a: Runner }) {
      expect(await presence(agent)).toMatchObject({ holder: null, connection_count: 0 });
      const c = await runner(agent, "c");
      expect(c.lease).toMatchObject({ held: true, checkpoint: { step: 3 } });
      expect(c.lease.fence).toBeGreaterThan(a.lease.fence);
      expect(c.lease.claim_seq).toBeGreaterThan(a.lease.claim_seq);
    },
  });

  restartCase("the previous holder gets its lease back with a new fence, although another runner reconnected first", {
    async before() {
      const agent = await frozenAgent("restored");
      const a = await runner(agent, "a");
      await runner(agent, "b");
      return { agent, a };
    },
    async after({ agent, a }: { agent: string; a: Runner }) {
      const b = await runner(agent, "b");
      expect(b.lease).toMatchObject({ held: false });
      expect((await presence(agent)).controls.reserved_until).not.toBeNull();
      const back = await runner(agent, "a");
      expect(back.lease).toMatchObject({ held: true, fence: a.lease.fence + 1 });
      const p = await presence(agent);
      expect(p.transitions[0]).toMatchObject({ to_machine: "a", reason: "restored" });
      expect(p.controls.reserved_until).toBeNull();
    },
  });

  restartCase("when the previous holder does not return within the grace, the runner that did takes the lease", {
    async before() {
      const agent = await frozenAgent("gone");
      return { agent, a: await runner(agent, "a") };
    },
    async after({ agent, a }: { agent: string; a: Runner }) {
      const b = await runner(agent, "b");
      expect(b.lease.held).toBe(false);
      await advanceClock(dev.url, GRACE_MS - 100, { agent });
      expect((await presence(agent)).controls.reserved_until, "still waiting just before the grace ends").not.toBeNull();
      await advanceClock(dev.url, 200, { agent });
      const held = await b.sock.next("serve_lease", (f) => f.held);
      expect(held.fence).toBe(a.lease.fence + 1);
    },
  });

  restartCase("a holder drained before the restart (still finishing its message) is not waited for", {
    async before() {
      const agent = await frozenAgent("drained");
      const a = await runner(agent, "a");
      await postMessage(dev.url, agent, "unfinished");
      await a.sock.next("message", (m) => m.run);
      await drain(agent, "a");
      expect((await presence(agent)).holder?.machine).toBe("a");
      return { agent, a };
    },
    async after({ agent, a }: { agent: string; a: Runner }) {
      const b = await runner(agent, "b");
      expect(b.lease).toMatchObject({ held: true, fence: a.lease.fence + 1 });
    },
  });

  restartCase("draining the previous holder's machine during the grace ends the wait: the runner that is here takes the lease at once", {
    async before() {
      const agent = await frozenAgent("drain-wait");
      return { agent, a: await runner(agent, "a") };
    },
    async after({ agent, a }: { agent: string; a: Runner }) {
      const b = await runner(agent, "b");
      expect(b.lease.held).toBe(false);
      // The agent's clock stands still: only the drain can end the wait.
      expect(await drain(agent, "a")).toMatchObject({ reserved_until: null });
      expect(await b.sock.next("serve_lease")).toMatchObject({ held: true, fence: a.lease.fence + 1 });
    },
  });

  restartCase("a question open when the coordinator is killed is still asked after it: the parked message keeps it, one answer is taken, and the next attempt gets it", {
    async before() {
      const agent = await frozenAgent("asked");
      const a = await runner(agent, "a");
      const id = await postMessage(dev.url, agent, "ship it?");
      const m = await a.sock.next("message", (f) => f.run && f.id === id);
      const question = { text: "Ship v2?", choices: ["ship", "hold"], step: "ask:1" };
      a.sock.send({ type: "park", id, token: m.token, question, deadline_seconds: 3600, req: "park" });
      await a.sock.next("result", (f) => f.req === "park");
      return { agent, id };
    },
    async after({ agent, id }: { agent: string; id: number }) {
      const message = () => getJson<Record<string, unknown>>(`${dev.url}/agents/${agent}/messages/${id}`);
      expect(await message()).toMatchObject({ status: "parked", question: { text: "Ship v2?", choices: ["ship", "hold"] } });
      const answer = (choice: string) =>
        fetch(`${dev.url}/agents/${agent}/messages/${id}/answer`, { method: "POST", headers: authHeaders(), body: JSON.stringify({ choice }) });
      expect((await answer("ship")).status).toBe(200);
      expect((await answer("hold")).status).toBe(409);
      const b = await runner(agent, "b");
      await advanceClock(dev.url, GRACE_MS + 100, { agent }); // a never comes back
      const again = await b.sock.next("message", (f) => f.run && f.id === id);
      expect(again).toMatchObject({ resume_choice: "ship" });
      expect(await message()).toMatchObject({ answers: [expect.objectContaining({ choice: "ship" })] });
    },
  });
});
