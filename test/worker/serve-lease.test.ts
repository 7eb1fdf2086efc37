// The serve lease in the real runtime: election, handover, stale scan, soft lease, release.
import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { MessageStore } from "../../worker/objects/message-store.ts";
import { describe, expect, it } from "vitest";
import { AgentCoordinator } from "../../worker/objects/agent-object.ts";
import { PING_TEXT } from "../../worker/wire/protocol.ts";
import { BASE, claimant, connect, DEV_TOKEN, presence, settle, stubFor, uniqueAgent } from "./helpers.ts";
import { advanceClock, frozenAgent, passTime } from "./clock.ts";

/** Pushes the agent's next scan a minute out, as a busy object would run it late. */
async function holdAlarmBack(agent: string): Promise<void> {
  await runInDurableObject(stubFor(agent), async (_instance: AgentCoordinator, state) => {
    await state.storage.setAlarm(Date.now() + 60_000);
  });
}

describe("serve lease", () => {
  it("two connections race to claim and exactly one holds", async () => {
    const agent = uniqueAgent();
    const [a, b] = await Promise.all([connect(agent, { machine: "a" }), connect(agent, { machine: "b" })]);
    a.send({ type: "serve_lease", op: "claim" });
    b.send({ type: "serve_lease", op: "claim" });
    const [la, lb] = await Promise.all([a.next("serve_lease"), b.next("serve_lease")]);
    expect([la.held, lb.held].filter(Boolean)).toHaveLength(1);
    expect(la.fence).toBe(1);
    expect(lb.fence).toBe(1);
    const holder = la.held ? la : lb;
    const standby = la.held ? lb : la;
    expect(holder.claim_seq).toBeLessThan(standby.claim_seq);
    expect(standby.position).toBe(1);
    expect(holder.holder?.claim_seq).toBe(holder.claim_seq);
  });

  it("holder closes and the standby takes over with a larger fence", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    expect(a.lease.held).toBe(true);
    expect(b.lease.held).toBe(false);
    a.sock.close();
    const takeover = await b.sock.next("serve_lease");
    expect(takeover.held).toBe(true);
    expect(takeover.fence).toBeGreaterThan(a.lease.fence);
    const p = await presence(agent);
    expect(p.transitions[0]).toMatchObject({
      from_claim: a.lease.claim_seq, to_claim: b.lease.claim_seq, from_machine: "a", to_machine: "b", reason: "closed",
    });
  });

  it("a holder's hello relabel reaches presence.holder and the serve_lease frames of every claimant", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "old-name");
    const b = await claimant(agent, "b");
    a.sock.send({ type: "hello", machine: "new-name" });
    expect(await b.sock.next("serve_lease")).toMatchObject({ held: false, holder: { machine: "new-name" } });
    expect(await a.sock.next("serve_lease")).toMatchObject({ held: true, fence: a.lease.fence, holder: { machine: "new-name" } });
    expect((await presence(agent)).holder?.machine).toBe("new-name");
    a.sock.close();
    expect(await b.sock.next("serve_lease")).toMatchObject({ held: true });
    expect((await presence(agent)).transitions[0]).toMatchObject({ from_machine: "new-name", to_machine: "b" });
  });

  it("the stale scan, driven through the alarm, closes a silent holder and re-elects", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "silent", { silent: true });
    const b = await claimant(agent, "alive");
    // TTL is one second in the test config: the holder stays silent past it while b heartbeats,
    // and the scan alarm that falls due on the way hands over.
    await passTime(agent, 1200);
    const takeover = await b.sock.next("serve_lease");
    expect(takeover).toMatchObject({ held: true, fence: 2 });
    const closed = await a.sock.waitForClose();
    expect(closed.code).toBe(4008);
    const p = await presence(agent);
    expect(p.holder?.machine).toBe("alive");
    expect(p.transitions[0]?.reason).toBe("stale");
  });

  it("a silent holder's auto-answered ping after its deadline does not revive it: the late scan hands over", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "silent", { silent: true });
    const b = await claimant(agent, "alive");
    await holdAlarmBack(agent);
    await passTime(agent, 1100);
    a.sock.sendRaw(PING_TEXT);
    await a.sock.next("pong");
    expect(await runDurableObjectAlarm(stubFor(agent))).toBe(true);
    // Asked at once, before any later scan could have run: the late scan itself handed over.
    expect((await presence(agent)).holder?.machine).toBe("alive");
    expect(await b.sock.next("serve_lease")).toMatchObject({ held: true, fence: 2 });
    expect((await a.sock.waitForClose()).code).toBe(4008);
    expect((await presence(agent)).transitions[0]).toMatchObject({ reason: "stale", to_machine: "alive" });
  });

  it("a frame from a holder past its TTL is refused with lease_expired before any scan runs, and the lease moves", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "silent", { silent: true });
    const b = await claimant(agent, "alive");
    await holdAlarmBack(agent);
    await passTime(agent, 1100);
    a.sock.sendRaw(PING_TEXT);
    await a.sock.next("pong");
    a.sock.send({ type: "checkpoint", fence: a.lease.fence, value: { step: 1 }, req: "late" });
    expect(await a.sock.next("error", (f) => f.req === undefined || f.req === "late")).toMatchObject({ code: "lease_expired" });
    expect(await b.sock.next("serve_lease")).toMatchObject({ held: true, fence: 2 });
    const stored = await runInDurableObject(stubFor(agent), (_instance: AgentCoordinator, state) => new MessageStore(state.storage.sql).agentCheckpoint.get());
    expect(stored).toBeNull();
  });

  it("a holder that pings with its fence stays holder when the scan runs late; its own pings are its proof", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a", { silent: true });
    const b = await claimant(agent, "b");
    await holdAlarmBack(agent);
    for (let i = 0; i < 8; i++) {
      await passTime(agent, 200);
      a.sock.send({ type: "ping", fence: a.lease.fence });
      await a.sock.next("pong");
    }
    await runDurableObjectAlarm(stubFor(agent));
    await settle(b.sock);
    expect(b.sock.framesOf("serve_lease")).toHaveLength(0);
    expect((await presence(agent)).holder?.machine).toBe("a");
  });

  it("auto-response heartbeats keep a connection alive across scans without waking the object", async () => {
    // A holder proves liveness with fenced pings the object answers itself, so this connection
    // releases first: from then on its heartbeats are the exact ping text, answered by the runtime.
    // The object's clock moves only by the test (five steps of 300 ms pass its 1 s TTL), so a busy
    // machine can neither let the TTL lapse between two pings nor fire an alarm of its own.
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    a.sock.send({ type: "serve_lease", op: "release" });
    expect(await a.sock.next("result")).toMatchObject({ op: "release", released: true });
    const wakesBefore = (await presence(agent)).wakes;
    for (let i = 0; i < 5; i++) {
      expect((await advanceClock(300, { agent })).alarmsRun).toBe(0);
      a.sock.send({ type: "ping" });
      await a.sock.next("pong");
      expect(await runDurableObjectAlarm(stubFor(agent))).toBe(true);
    }
    const p = await presence(agent);
    // Five alarms and this presence read woke the object; the heartbeats (about fifteen) did not.
    expect(p.wakes).toBe(wakesBefore + 5 + 1);
    expect(p.connections.map((c) => c.claim_seq)).toEqual([a.lease.claim_seq]);
    expect(a.sock.closed).toBeNull();
  });

  it("a reconnecting former holder gets a new sequence and stays standby", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "home");
    const b = await claimant(agent, "work");
    a.sock.close();
    await b.sock.next("serve_lease", (f) => f.held);
    const back = await claimant(agent, "home");
    expect(back.lease.held).toBe(false);
    expect(back.lease.claim_seq).toBeGreaterThan(b.lease.claim_seq);
    expect((await presence(agent)).holder?.machine).toBe("work");
  });

  it("release hands over at once; a release from a standby leaves the lease as it is and takes the standby out of the line", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const c = await claimant(agent, "c");
    b.sock.send({ type: "serve_lease", op: "release", req: "r1" });
    expect(await b.sock.next("result")).toMatchObject({ op: "release", released: false, req: "r1" });
    expect((await presence(agent)).holder?.machine).toBe("a");
    expect((await presence(agent)).fence).toBe(1);
    expect((await presence(agent)).serve_standbys).toBe(1);
    a.sock.send({ type: "serve_lease", op: "release" });
    expect(await a.sock.next("result")).toMatchObject({ released: true });
    // b left the line with its release: c, next after it, takes over.
    expect(await c.sock.next("serve_lease")).toMatchObject({ held: true, fence: 2 });
    expect(await a.sock.next("serve_lease")).toMatchObject({ held: false });
    await settle(b.sock);
    expect(b.sock.framesOf("serve_lease").filter((f) => f.held)).toHaveLength(0);
  });

  it("does not repeat held frames", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    a.sock.send({ type: "serve_lease", op: "claim" });
    b.sock.send({ type: "serve_lease", op: "claim" });
    const c = await claimant(agent, "c");
    c.sock.close();
    await settle(a.sock);
    await settle(b.sock);
    expect(a.sock.framesOf("serve_lease")).toHaveLength(0);
    expect(b.sock.framesOf("serve_lease")).toHaveLength(0);
  });

  it("a machine label with control characters or over 64 chars is refused before the socket opens", async () => {
    const agent = uniqueAgent();
    for (const machine of ["evil\u001b[2J", "x".repeat(65)]) {
      const res = await SELF.fetch(`${BASE}/agents/${agent}/serve?machine=${encodeURIComponent(machine)}`, {
        headers: { Upgrade: "websocket", Authorization: `Bearer ${DEV_TOKEN}` },
      });
      expect(res.status).toBe(400);
      expect(res.webSocket).toBeNull();
    }
    expect((await presence(agent)).connection_count).toBe(0);
  });

  it("different agent names do not block each other", async () => {
    const one = await claimant(uniqueAgent(), "m");
    const two = await claimant(uniqueAgent(), "m");
    expect(one.lease.held).toBe(true);
    expect(two.lease.held).toBe(true);
  });

  it("presence numbers match the connections", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    await claimant(agent, "b");
    await claimant(agent, "c");
    const idle = await connect(agent, { machine: "idle" });
    await settle(idle);
    const p = await presence(agent);
    expect(p).toMatchObject({ agent, connection_count: 4, serve_candidates: 3, serve_standbys: 2, fence: 1 });
    expect(p.holder).toMatchObject({ claim_seq: a.lease.claim_seq, machine: "a" });
    expect(p.connections.filter((c) => c.held)).toHaveLength(1);
    expect(p.connections.map((c) => c.machine)).toEqual(["a", "b", "c", "idle"]);
    for (const c of p.connections) expect(c.heartbeat_age_seconds).toBeLessThan(1);
  });

  it("standbys never go below zero and the holder can be nobody", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    a.sock.send({ type: "serve_lease", op: "release" });
    await a.sock.next("result");
    const p = await presence(agent);
    expect(p).toMatchObject({ serve_candidates: 0, serve_standbys: 0, holder: null, fence: 1 });
  });

  it("a new instance rebuilt from storage keeps the same holder and fence", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    a.sock.close();
    await b.sock.next("serve_lease", (f) => f.held);
    const c = await claimant(agent, "c");
    const rebuilt = await runInDurableObject(stubFor(agent), (_instance: AgentCoordinator, state) => {
      return new AgentCoordinator(state, env as never).presence();
    });
    expect(rebuilt.fence).toBe(2);
    expect(rebuilt.holder?.claim_seq).toBe(b.lease.claim_seq);
    expect(rebuilt.serve_standbys).toBe(1);
    // The claim counter also survives: a new claim gets a sequence never seen before.
    const d = await claimant(agent, "d");
    expect(d.lease.claim_seq).toBeGreaterThan(c.lease.claim_seq);
  });

  it("claim sequences and fences survive a restart of the object", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    await runInDurableObject(stubFor(agent), (_i, state) => {
      for (const ws of state.getWebSockets()) ws.close(1001, "restart");
    });
    await a.sock.waitForClose();
    const b = await claimant(agent, "b");
    expect(b.lease.claim_seq).toBeGreaterThan(a.lease.claim_seq);
    expect(b.lease.fence).toBe(2);
  });
});
