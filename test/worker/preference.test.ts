// Preference, drain, pause and restart grace in the real runtime. The test config sets a 2 s
// hysteresis and a 1 s restart grace; the tests move the agent's clock past those (passTime), and
// the alarm that falls due makes the move: the clock passed the threshold, nobody slept.
import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AgentControls } from "../../worker/objects/agent-controls.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { BASE, connect, DEV_TOKEN, OTHER_TOKEN, presence, settle, stubFor, uniqueAgent, type TestSocket } from "./helpers.ts";
import { passTime } from "./clock.ts";

const HYSTERESIS_MS = 2000;

/** A serve connection that claims with a priority and a runner id, as `baton serve --priority` does. */
async function runner(agent: string, machine: string, opts: { priority?: number; runner_id?: string } = {}) {
  const sock = await connect(agent, { machine });
  sock.send({ type: "serve_lease", op: "claim", ...opts });
  const lease = await sock.next("serve_lease");
  return { sock, lease };
}

async function control(agent: string, route: string, body?: unknown, token = DEV_TOKEN) {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/${route}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function post(agent: string, text: string): Promise<number> {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
    method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text }),
  });
  return ((await res.json()) as { id: number }).id;
}

/** Acknowledges a message under the token of its run copy, which this connection was handed. */
async function ack(sock: TestSocket, run: MessageFrame) {
  sock.send({ type: "ack", id: run.id, token: run.token, req: `ack${run.id}` });
  return sock.next("result", (f) => f.req === `ack${run.id}`);
}

/** Moves the object's clock past the hysteresis; the alarm that falls due acts on it. */
async function afterHysteresis(agent: string) {
  await passTime(agent, HYSTERESIS_MS);
}

const reasons = async (agent: string) => (await presence(agent)).transitions.map((t) => t.reason).reverse();

describe("preference", () => {
  it("a higher-priority runner takes the lease only after the hysteresis, with a new fence and reason preferred", async () => {
    const agent = uniqueAgent();
    const low = await runner(agent, "laptop");
    const high = await runner(agent, "workstation", { priority: 5 });
    expect(high.lease).toMatchObject({ held: false, position: 1 });
    const p = await presence(agent);
    expect(p.holder?.machine).toBe("laptop");
    expect(p.connections.map((c) => [c.machine, c.priority])).toEqual([["laptop", 0], ["workstation", 5]]);
    expect(p.controls.hysteresis_seconds).toBe(HYSTERESIS_MS / 1000);
    await afterHysteresis(agent);
    expect(await high.sock.next("serve_lease")).toMatchObject({ held: true, fence: low.lease.fence + 1 });
    expect(await low.sock.next("serve_lease")).toMatchObject({ held: false, position: 1 });
    expect((await presence(agent)).transitions[0]).toMatchObject({ from_machine: "laptop", to_machine: "workstation", reason: "preferred" });
  });

  it("equal priorities never steal back: a later claim of the same priority stays standby", async () => {
    const agent = uniqueAgent();
    await runner(agent, "a", { priority: 3 });
    const b = await runner(agent, "b", { priority: 3 });
    await afterHysteresis(agent);
    await settle(b.sock);
    expect(b.sock.framesOf("serve_lease")).toEqual([]);
    expect((await presence(agent)).holder?.machine).toBe("a");
  });

  it("the holder runs a message: the lease moves only after its ack, the backlog goes to the new holder, nothing runs twice", async () => {
    const agent = uniqueAgent();
    const low = await runner(agent, "laptop");
    const first = await post(agent, "long task");
    const second = await post(agent, "queued behind it");
    const firstRun = await low.sock.next("message", (m) => m.run);
    expect(firstRun).toMatchObject({ id: first });
    const high = await runner(agent, "workstation", { priority: 5 });
    await afterHysteresis(agent);
    expect((await presence(agent)).holder?.machine).toBe("laptop");
    expect(await ack(low.sock, firstRun)).toMatchObject({ duplicate: false });
    expect(await high.sock.next("serve_lease")).toMatchObject({ held: true, fence: low.lease.fence + 1 });
    expect(await high.sock.next("message", (m) => m.run)).toMatchObject({ id: second, attempt: 1 });
    await settle(low.sock);
    expect(low.sock.framesOf("message").filter((m) => m.run)).toEqual([]);
    const m = await (await SELF.fetch(`${BASE}/agents/${agent}/messages/${first}`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } })).json();
    expect(m).toMatchObject({ status: "acknowledged", attempts: 1, acked_fence: low.lease.fence });
  });

  it("a flapping preferred runner moves the lease at most once per hysteresis period", async () => {
    const agent = uniqueAgent();
    await runner(agent, "laptop");
    // Four short visits (a connect, a claim and a close each), far shorter than the hysteresis: the lease never moves.
    for (let i = 0; i < 4; i++) {
      const flap = await runner(agent, "workstation", { priority: 5, runner_id: "ws" });
      flap.sock.close();
      await flap.sock.waitForClose();
      await runDurableObjectAlarm(stubFor(agent));
    }
    expect((await presence(agent)).holder?.machine).toBe("laptop");
    // It stays up for a whole period: one move. Then it drops and comes straight back: the
    // lease goes back to the laptop and stays there until the new connection has waited again.
    const stays = await runner(agent, "workstation", { priority: 5, runner_id: "ws" });
    await afterHysteresis(agent);
    await stays.sock.next("serve_lease", (f) => f.held);
    stays.sock.close();
    await stays.sock.waitForClose();
    const back = await runner(agent, "workstation", { priority: 5, runner_id: "ws" });
    await runDurableObjectAlarm(stubFor(agent));
    expect(back.lease.held).toBe(false);
    const p = await presence(agent);
    expect(p.holder?.machine).toBe("laptop");
    const preferred = p.transitions.filter((t) => t.reason === "preferred");
    expect(preferred).toHaveLength(1);
  });
});

describe("drain and pause", () => {
  it("a drained holder finishes its message, hands on (reason drained) and stays connected as a non-candidate until undrained", async () => {
    const agent = uniqueAgent();
    const a = await runner(agent, "a");
    const b = await runner(agent, "b");
    const id = await post(agent, "finish me");
    const running = await a.sock.next("message", (m) => m.run && m.id === id);
    const drained = await control(agent, "drain", {});
    expect(drained).toMatchObject({ status: 200, body: { agent, changed: true, drained: [{ machine: "a" }] } });
    expect((await presence(agent)).holder?.machine).toBe("a");
    await ack(a.sock, running);
    expect(await b.sock.next("serve_lease")).toMatchObject({ held: true, fence: a.lease.fence + 1 });
    expect(await a.sock.next("serve_lease")).toMatchObject({ held: false });
    const p = await presence(agent);
    expect(p.transitions[0]).toMatchObject({ from_machine: "a", to_machine: "b", reason: "drained" });
    expect(p.connections.map((c) => [c.machine, c.drained])).toEqual([["a", true], ["b", false]]);
    expect(p).toMatchObject({ connection_count: 2, serve_candidates: 1, serve_standbys: 0 });
    expect(await control(agent, "undrain", { machine: "a" })).toMatchObject({ status: 200, body: { changed: true, drained: [] } });
    expect(await presence(agent)).toMatchObject({ serve_candidates: 2, serve_standbys: 1, holder: { machine: "b" } });
  });

  it("draining the last runner leaves messages queued and visible; undrain hands them out", async () => {
    const agent = uniqueAgent();
    const a = await runner(agent, "only");
    expect(await control(agent, "drain", { machine: "only" })).toMatchObject({ status: 200 });
    expect(await a.sock.next("serve_lease")).toMatchObject({ held: false });
    const id = await post(agent, "waits");
    expect(await a.sock.next("message")).toMatchObject({ id, run: false });
    const p = await presence(agent);
    expect(p).toMatchObject({ holder: null, serve_candidates: 0, controls: { drained: [{ machine: "only" }] } });
    expect(p.transitions[0]).toMatchObject({ to_claim: null, reason: "drained" });
    expect(p.recent_messages[0]).toMatchObject({ id, status: "queued" });
    await control(agent, "undrain", {});
    expect(await a.sock.next("serve_lease")).toMatchObject({ held: true });
    expect(await a.sock.next("message")).toMatchObject({ id, run: true });
  });

  it("pause: nothing is handed out, messages queue, the lease stays; unpause hands them to the holder", async () => {
    const agent = uniqueAgent();
    const a = await runner(agent, "a");
    expect(await control(agent, "pause")).toMatchObject({ status: 200, body: { paused: true, changed: true } });
    expect(await control(agent, "pause")).toMatchObject({ status: 200, body: { paused: true, changed: false } });
    const id = await post(agent, "later");
    expect(await a.sock.next("message")).toMatchObject({ id, run: false });
    const p = await presence(agent);
    expect(p).toMatchObject({ holder: { machine: "a" }, fence: a.lease.fence, controls: { paused: true } });
    expect(p.recent_messages[0]).toMatchObject({ id, status: "queued" });
    expect(await control(agent, "unpause")).toMatchObject({ status: 200, body: { paused: false, changed: true } });
    expect(await a.sock.next("message")).toMatchObject({ id, run: true, attempt: 1 });
    expect((await presence(agent)).fence).toBe(a.lease.fence);
  });

  it("pause holds the lease against a ready preferred runner; unpause lets it move at once, with reason preferred", async () => {
    const agent = uniqueAgent();
    const low = await runner(agent, "laptop");
    expect((await control(agent, "pause")).status).toBe(200);
    const high = await runner(agent, "workstation", { priority: 5 });
    await afterHysteresis(agent);
    expect(await presence(agent)).toMatchObject({ holder: { machine: "laptop" }, fence: low.lease.fence });
    expect(high.sock.framesOf("serve_lease").some((f) => f.held)).toBe(false);
    expect((await control(agent, "unpause")).status).toBe(200);
    expect(await high.sock.next("serve_lease", (f) => f.held)).toMatchObject({ fence: low.lease.fence + 1 });
    expect((await reasons(agent)).at(-1)).toBe("preferred");
  });

  it("bad control requests change nothing: a bad body is 400, drain with no holder and no machine is 409 no_holder", async () => {
    const agent = uniqueAgent();
    await runner(agent, "a");
    expect(await control(agent, "drain", { machine: "" })).toMatchObject({ status: 400, body: { error: "bad_request" } });
    expect(await control(agent, "drain", { machine: "a", extra: 1 })).toMatchObject({ status: 400, body: { error: "bad_request" } });
    expect(await control(agent, "drain", { machine: "x\u202e" })).toMatchObject({ status: 400 });
    expect((await presence(agent)).controls.drained).toEqual([]);
    const empty = uniqueAgent();
    expect(await control(empty, "drain")).toMatchObject({ status: 409, body: { error: "no_holder" } });
    const get = await SELF.fetch(`${BASE}/agents/${agent}/pause`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
    expect(get.status).toBe(404);
  });

  it("controls follow the account rules: another account's pause and drain reach only its own agent of that name", async () => {
    const agent = uniqueAgent();
    await runner(agent, "a");
    expect((await control(agent, "pause", undefined, "wrong-token")).status).toBe(401);
    expect(await control(agent, "pause", undefined, OTHER_TOKEN)).toMatchObject({ status: 200, body: { paused: true } });
    expect(await control(agent, "drain", { machine: "a" }, OTHER_TOKEN)).toMatchObject({ status: 200 });
    expect((await presence(agent)).controls).toMatchObject({ paused: false, drained: [] });
    expect((await presence(agent, OTHER_TOKEN)).controls).toMatchObject({ paused: true, drained: [{ machine: "a" }] });
  });

  it("a claim with a priority out of range or a malformed runner id is a bad_frame and claims nothing", async () => {
    const agent = uniqueAgent();
    const sock = await connect(agent, { machine: "a" });
    sock.send({ type: "serve_lease", op: "claim", priority: 5000, req: "p" });
    expect(await sock.next("error", (f) => f.req === "p")).toMatchObject({ code: "bad_frame" });
    sock.send({ type: "serve_lease", op: "claim", runner_id: "has space", req: "r" });
    expect(await sock.next("error", (f) => f.req === "r")).toMatchObject({ code: "bad_frame" });
    expect(await presence(agent)).toMatchObject({ holder: null, serve_candidates: 0 });
  });
});

// Restarts themselves (the previous holder restored, not returning, drained) are tested with a real
// coordinator restart in test/e2e/coordinator-restart.test.ts; here, only what needs no restart.
describe("restart grace", () => {
  it("a grace turned off or shortened by a redeploy ends a wait begun under the longer one", async () => {
    const agent = uniqueAgent();
    await runner(agent, "a", { runner_id: "run-a" });
    await runInDurableObject(stubFor(agent), (_instance, state) => {
      const now = Date.now();
      const lease = { fence: 1, holderClaim: 1, holderMachine: "a", since: now };
      const before = new AgentControls(state.storage.sql, { hysteresisMs: HYSTERESIS_MS, restartGraceMs: 86_400_000 });
      before.noteHolder("run-a", true);
      before.noteRestart(lease, now);
      expect(before.report(now).reserved_until).toBe(now + 86_400_000);
      expect(before.snapshot(now).reserved).toMatchObject({ runner: "run-a", until: now + 86_400_000 });
      const off = new AgentControls(state.storage.sql, { hysteresisMs: HYSTERESIS_MS, restartGraceMs: 0 });
      off.noteRestart(lease, now);
      expect(off.report(now).reserved_until).toBeNull();
      expect(off.snapshot(now).reserved).toBeNull();
      const shorter = new AgentControls(state.storage.sql, { hysteresisMs: HYSTERESIS_MS, restartGraceMs: 10_000 });
      expect(shorter.report(now).reserved_until).toBeNull();
      expect(shorter.snapshot(now).reserved).toBeNull();
    });
  });

});
