// A coordinator restart, for real: kill -9 of wrangler dev, then a new one on the same state (as a
// deploy or a crash restarts every object). Every socket drops; the lease, fences, claim counter,
// checkpoints and open questions survive; the previous holder's runner gets its lease back within
// the restart grace; one that does not return, or whose machine is drained, does not hold the
// others up.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authHeaders, getJson, postMessage, uniqueAgent } from "./serve-helpers.ts";
import { rawRunner, type RawServe } from "./raw-serve.ts";
import { startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import type { Presence } from "../../worker/wire/server-frames.ts";

const GRACE_S = 3;
const VARS = { BATON_HEARTBEAT_TTL_SECONDS: "5", BATON_PRESENCE_SCAN_SECONDS: "1", BATON_RESTART_GRACE_SECONDS: String(GRACE_S) };
let dev: DevServer;
const open: RawServe[] = [];

beforeAll(async () => {
  dev = await startWranglerDev({ vars: VARS });
});
afterAll(async () => {
  for (const s of open) s.close();
  await dev?.stop();
});

async function restart(): Promise<void> {
  await dev.crash();
  dev = await startWranglerDev({ vars: VARS, port: dev.port, persistDir: dev.persistDir });
}

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

describe("after a coordinator restart", () => {
  it("the lease is free at once when nobody had it reserved, fences and claim sequences go on growing, and checkpoints survive", async () => {
    const agent = uniqueAgent("restart");
    const a = await runner(agent, "a");
    a.sock.send({ type: "checkpoint", fence: a.lease.fence, value: { step: 3 }, req: "cp" });
    await a.sock.next("result", (f) => f.req === "cp");
    await drain(agent, "a"); // nothing runs, so the holder hands on at once; its reservation is gone
    await restart();
    const after = await presence(agent);
    expect(after).toMatchObject({ holder: null, connection_count: 0 });
    const c = await runner(agent, "c");
    expect(c.lease).toMatchObject({ held: true, checkpoint: { step: 3 } });
    expect(c.lease.fence).toBeGreaterThan(a.lease.fence);
    expect(c.lease.claim_seq).toBeGreaterThan(a.lease.claim_seq);
  });

  it("the previous holder gets its lease back with a new fence, although another runner reconnected first", async () => {
    const agent = uniqueAgent("restored");
    const a = await runner(agent, "a");
    await runner(agent, "b");
    await restart();
    const b = await runner(agent, "b");
    expect(b.lease).toMatchObject({ held: false });
    expect((await presence(agent)).controls.reserved_until).not.toBeNull();
    const back = await runner(agent, "a");
    expect(back.lease).toMatchObject({ held: true, fence: a.lease.fence + 1 });
    const p = await presence(agent);
    expect(p.transitions[0]).toMatchObject({ to_machine: "a", reason: "restored" });
    expect(p.controls.reserved_until).toBeNull();
  });

  it("when the previous holder does not return within the grace, the runner that did takes the lease", async () => {
    const agent = uniqueAgent("gone");
    const a = await runner(agent, "a");
    await restart();
    const b = await runner(agent, "b");
    expect(b.lease.held).toBe(false);
    const held = await b.sock.next("serve_lease", (f) => f.held, (GRACE_S + 3) * 1000);
    expect(held.fence).toBe(a.lease.fence + 1);
  });

  it("a holder drained before the restart (still finishing its message) is not waited for", async () => {
    const agent = uniqueAgent("drained");
    const a = await runner(agent, "a");
    await postMessage(dev.url, agent, "unfinished");
    await a.sock.next("message", (m) => m.run);
    await drain(agent, "a");
    expect((await presence(agent)).holder?.machine).toBe("a");
    await restart();
    const b = await runner(agent, "b");
    expect(b.lease).toMatchObject({ held: true, fence: a.lease.fence + 1 });
  });

  it("draining the previous holder's machine during the grace ends the wait: the runner that is here takes the lease at once", async () => {
    const agent = uniqueAgent("drain-wait");
    const a = await runner(agent, "a");
    await restart();
    const b = await runner(agent, "b");
    expect(b.lease.held).toBe(false);
    expect(await drain(agent, "a")).toMatchObject({ reserved_until: null });
    expect(await b.sock.next("serve_lease", undefined, (GRACE_S * 1000) / 2)).toMatchObject({ held: true, fence: a.lease.fence + 1 });
  });

  it("a question open when the coordinator is killed is still asked after it: the parked message keeps it, one answer is taken, and the next attempt gets it", async () => {
    const agent = uniqueAgent("asked");
    const a = await runner(agent, "a");
    const id = await postMessage(dev.url, agent, "ship it?");
    const m = await a.sock.next("message", (f) => f.run && f.id === id);
    const question = { text: "Ship v2?", choices: ["ship", "hold"], step: "ask:1" };
    a.sock.send({ type: "park", id, token: m.token, question, deadline_seconds: 3600, req: "park" });
    await a.sock.next("result", (f) => f.req === "park");
    await restart();
    const message = () => getJson<Record<string, unknown>>(`${dev.url}/agents/${agent}/messages/${id}`);
    expect(await message()).toMatchObject({ status: "parked", question: { text: "Ship v2?", choices: ["ship", "hold"] } });
    const answer = (choice: string) =>
      fetch(`${dev.url}/agents/${agent}/messages/${id}/answer`, { method: "POST", headers: authHeaders(), body: JSON.stringify({ choice }) });
    expect((await answer("ship")).status).toBe(200);
    expect((await answer("hold")).status).toBe(409);
    const b = await runner(agent, "b");
    const again = await b.sock.next("message", (f) => f.run && f.id === id, (GRACE_S + 5) * 1000);
    expect(again).toMatchObject({ resume_choice: "ship" });
    expect(await message()).toMatchObject({ answers: [expect.objectContaining({ choice: "ship" })] });
  });
});
