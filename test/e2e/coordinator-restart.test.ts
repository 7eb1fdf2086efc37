// A coordinator restart, for real: kill -9 of wrangler dev, then a new one on the same state (as a
// deploy or a crash restarts every object). Every socket drops; the lease, fences, claim counter,
// checkpoints and open questions survive; the previous holder's runner gets its lease back within
// the restart grace; one that does not return, or whose machine is drained, does not hold the
// others up. One restart serves every case: each sets its scene up on an agent of its own before
// it, and looks after it. Each agent's clock stands still from its scene's start (the test clock,
// kept in the object's storage across the restart), so a grace ends when a test moves it there,
// however long the cases before took.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authHeaders, getJson, postMessage, uniqueAgent } from "./serve-helpers.ts";
import { rawRunner, type RawServe } from "./raw-serve.ts";
import { advanceClock, startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import type { Presence } from "../../worker/wire/server-frames.ts";

const GRACE_MS = 3000;
const VARS = { BATON_HEARTBEAT_TTL_SECONDS: "5", BATON_PRESENCE_SCAN_SECONDS: "1", BATON_RESTART_GRACE_SECONDS: String(GRACE_MS / 1000) };
let dev: DevServer;
const open: RawServe[] = [];

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

beforeAll(async () => {
  dev = await startWranglerDev({ vars: VARS });
  for (const entry of cases.values()) entry.scene = await entry.case.before();
  await dev.crash();
  dev = await startWranglerDev({ vars: VARS, port: dev.port, persistDir: dev.persistDir });
}, 240_000); // two start-ups and six scenes
afterAll(async () => {
  for (const s of open) s.close();
  await dev?.stop();
});

describe("after a coordinator restart", () => {
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
