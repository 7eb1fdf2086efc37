// Hostile input in the real runtime: bad frames, floods and too many connections are each
// answered with a named error, and leave the lease, presence and stored data as they were (bad
// names: bad-names.test.ts).
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { AgentCoordinator } from "../../worker/objects/agent-object.ts";
import { MessageStore } from "../../worker/objects/message-store.ts";
import { describe, expect, it } from "vitest";
import { LIMITS, type ErrorCode } from "../../worker/wire/protocol.ts";
import { BASE, claimant, connect, DEV_TOKEN, presence, settle, uniqueAgent, waitFor, type TestSocket } from "./helpers.ts";
import { advanceClock, freezeClock, frozenAgent } from "./clock.ts";
import { scene, snapshot } from "./scene.ts";

const auth = { Authorization: `Bearer ${DEV_TOKEN}` };

const bytes = (text: string) => new TextEncoder().encode(text).buffer as ArrayBuffer;

const BAD_FRAMES: { name: string; raw: string | ArrayBuffer; code: ErrorCode }[] = [
  { name: "a binary claim", raw: bytes('{"type":"serve_lease","op":"claim"}'), code: "binary_frame" },
  { name: "malformed JSON", raw: '{"type":"serve_lease","op":"claim"', code: "bad_json" },
  { name: "a JSON array", raw: '[{"type":"serve_lease","op":"release"}]', code: "bad_frame" },
  { name: "an unknown type", raw: '{"type":"steal_lease"}', code: "unknown_type" },
  { name: "a server frame type", raw: '{"type":"serve_lease_granted","held":true}', code: "unknown_type" },
  { name: "a claim with extra fields", raw: '{"type":"serve_lease","op":"claim","held":true,"fence":99}', code: "bad_frame" },
  { name: "an unknown op", raw: '{"type":"serve_lease","op":"steal"}', code: "bad_frame" },
  { name: "a release with a wrong field type", raw: '{"type":"serve_lease","op":"release","fence":"1"}', code: "bad_frame" },
  { name: "an oversized claim", raw: JSON.stringify({ type: "serve_lease", op: "claim", pad: "x".repeat(LIMITS.frameBytes) }), code: "frame_too_large" },
  {
    name: "an oversized release",
    raw: JSON.stringify({ type: "serve_lease", op: "release", req: "r", pad: "€".repeat(LIMITS.frameBytes / 3 + 1) }),
    code: "frame_too_large",
  },
  { name: "a hello whose machine label holds a terminal escape", raw: JSON.stringify({ type: "hello", machine: "\u001b[2Jpwned" }), code: "bad_frame" },
  { name: "an ack with a wrong id", raw: '{"type":"ack","id":0,"token":1}', code: "bad_frame" },
  { name: "a fence-only ack (the older form)", raw: '{"type":"ack","id":1,"fence":1}', code: "bad_frame" },
  {
    name: "an oversized reply",
    raw: JSON.stringify({ type: "reply", id: 1, token: 1, key: "k", text: "x".repeat(LIMITS.replyTextBytes + 1) }),
    code: "too_large",
  },
  {
    name: "an oversized checkpoint",
    raw: JSON.stringify({ type: "checkpoint", fence: 1, value: "x".repeat(LIMITS.checkpointBytes) }),
    code: "too_large",
  },
  { name: "a checkpoint without a value", raw: '{"type":"checkpoint","fence":1}', code: "bad_frame" },
];

describe("bad frames change nothing", () => {
  for (const bad of BAD_FRAMES) {
    it(`${bad.name} from the holder, a standby and an idle connection gets ${bad.code} and moves nothing`, async () => {
      const s = await scene();
      const before = await snapshot(s.agent);
      for (const sock of [s.holder, s.standby, s.idle]) {
        sock.sendRaw(bad.raw);
        expect(await sock.next("error")).toMatchObject({ code: bad.code });
        await settle(sock);
        expect(sock.closed).toBeNull();
      }
      expect(await snapshot(s.agent)).toEqual(before);
      for (const sock of [s.holder, s.standby, s.idle]) expect(sock.framesOf("serve_lease")).toEqual([]);
      // The stored checkpoint did not move either: the next holder is handed none.
      s.holder.send({ type: "serve_lease", op: "release" });
      const takeover = await s.standby.next("serve_lease", (f) => f.held);
      expect(takeover).not.toHaveProperty("checkpoint");
    });
  }

  it("a 2 MiB frame gets frame_too_large and moves nothing", async () => {
    const s = await scene();
    const before = await snapshot(s.agent);
    s.idle.sendRaw(JSON.stringify({ type: "serve_lease", op: "claim", pad: "x".repeat(2 * 1024 * 1024) }));
    expect(await s.idle.next("error")).toMatchObject({ code: "frame_too_large" });
    await settle(s.idle);
    expect(await snapshot(s.agent)).toEqual(before);
  });
});

/** Sends `frames` back to back on a connection that has sent nothing yet, so they share one window. */
function burst(sock: TestSocket, frames: string[]): void {
  for (const f of frames) sock.sendRaw(f);
}

const SPACED_PING = '{"type": "ping"}';

describe("floods", () => {
  // How many frames fit in one window depends on how fast this machine answers, so these tests
  // never count on an exact split; they check that every frame got exactly one answer, that some
  // were refused, and that a refused frame changed nothing. The exact window is unit-tested.
  const BURST = LIMITS.framesPerSecond * 4;

  it("a burst past the limit gets rate_limited answers and every frame exactly one answer", async () => {
    // Its clock stands still: the holder's lease must not go stale while the burst is answered on a busy machine.
    const agent = await frozenAgent();
    const holder = await claimant(agent, "holder");
    // Silent: every pong below answers the burst.
    const flooder = await connect(agent, { machine: "flooder", silent: true });
    const before = await snapshot(agent);
    burst(flooder, Array.from({ length: BURST }, () => SPACED_PING));
    await waitFor(() => flooder.frames.length >= BURST, "the burst's answers");
    const refused = flooder.framesOf("error");
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((f) => f.code === "rate_limited")).toBe(true);
    expect(flooder.framesOf("pong").length + refused.length).toBe(BURST);
    expect(await snapshot(agent)).toEqual(before);
    expect(holder.sock.framesOf("serve_lease")).toEqual([]);
  });

  it("a holder's refused writes in a flood are not acted on", async () => {
    const agent = uniqueAgent();
    // Silent: its own fenced heartbeat would share the rate window and add an answer to the count.
    const holder = await claimant(agent, "holder", { silent: true });
    burst(holder.sock, Array.from({ length: BURST }, (_, n) =>
      JSON.stringify({ type: "checkpoint", fence: holder.lease.fence, value: { n }, req: `c${n}` })));
    await waitFor(() => holder.sock.frames.filter((f) => f.type === "result" || f.type === "error").length >= BURST, "the burst's answers");
    const accepted = holder.sock.framesOf("result").map((f) => Number(String(f.req).slice(1)));
    const refused = holder.sock.framesOf("error");
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((f) => f.code === "rate_limited")).toBe(true);
    expect(accepted.length + refused.length).toBe(BURST);
    // The stored checkpoint is the last write answered with a result: no refused frame was stored.
    const last = accepted.at(-1);
    const stub = env.AGENTS.get(env.AGENTS.idFromName(`dev:${agent}`));
    const stored = await runInDurableObject(stub, (_i: AgentCoordinator, state) =>
      new MessageStore(state.storage.sql).agentCheckpoint.get());
    expect(stored?.value).toEqual({ n: last });
  });

  it("the window resets: after a second the same connection is heard again", async () => {
    const agent = uniqueAgent();
    const sock = await connect(agent, { machine: "m" });
    burst(sock, Array.from({ length: LIMITS.framesPerSecond + 1 }, () => SPACED_PING));
    expect(await sock.next("error")).toMatchObject({ code: "rate_limited" });
    // Auto-answered pings keep the connection alive past the one-second window without counting.
    for (let i = 0; i < 2; i++) {
      await advanceClock(600, { agent });
      sock.send({ type: "ping" });
      await sock.next("pong");
    }
    sock.send({ type: "serve_lease", op: "claim" });
    expect(await sock.next("serve_lease")).toMatchObject({ held: true, fence: 1 });
  });
});

describe("connection limit", () => {
  it(`connection ${LIMITS.connectionsPerAgent + 1} gets 429 too_many_connections and nothing moves`, async () => {
    const agent = uniqueAgent();
    // The agent's clock stands still: none of the 64 goes stale (the TTL is one second) while the rest connect on a slow machine.
    await freezeClock(agent);
    const holder = await claimant(agent, "holder");
    const others: TestSocket[] = [];
    for (let i = 1; i < LIMITS.connectionsPerAgent; i++) others.push(await connect(agent, { machine: `m${i}` }));
    const before = await snapshot(agent);
    expect(before.connection_count).toBe(LIMITS.connectionsPerAgent);
    const res = await SELF.fetch(`${BASE}/agents/${agent}/serve?machine=extra`, { headers: { ...auth, Upgrade: "websocket" } });
    expect(res.status).toBe(429);
    expect(res.webSocket).toBeFalsy();
    expect(await res.json()).toMatchObject({ error: "too_many_connections" });
    expect(await snapshot(agent)).toEqual(before);
    expect(holder.sock.framesOf("serve_lease")).toEqual([]);
    // One leaves, one more fits.
    const leaving = others.pop()!;
    leaving.close();
    await leaving.waitForClose();
    await settle(holder.sock);
    others.push(await connect(agent, { machine: "again" }));
    expect((await presence(agent)).connection_count).toBe(LIMITS.connectionsPerAgent);
  });
});

describe("session lease TTL range", () => {
  it(`a TTL outside ${LIMITS.leaseTtlSeconds.min}-${LIMITS.leaseTtlSeconds.max} s gets 400 and leaves the lease as it was`, async () => {
    const session = `s-${crypto.randomUUID()}`;
    const post = (op: string, body: unknown) =>
      SELF.fetch(`${BASE}/leases/${session}/${op}`, { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const state = async () => {
      const { expires_in_ms: _left, ...rest } = (await (await SELF.fetch(`${BASE}/leases/${session}`, { headers: auth })).json()) as Record<string, unknown>;
      return rest;
    };
    const holder = crypto.randomUUID();
    expect((await post("acquire", { run_id: holder, ttl_seconds: 60 })).status).toBe(201);
    const before = await state();
    const bad = [0, -1, 1.5, LIMITS.leaseTtlSeconds.max + 1, "60", null];
    for (const ttl of bad) {
      for (const [op, run] of [["acquire", crypto.randomUUID()], ["renew", holder], ["acquire", holder]] as const) {
        const res = await post(op, { run_id: run, ttl_seconds: ttl });
        expect(res.status, `${op} ttl ${JSON.stringify(ttl)}`).toBe(400);
        expect(await res.json()).toMatchObject({ error: "bad_request" });
      }
    }
    expect(await state()).toEqual(before);
  });
});

describe("oversized HTTP bodies", () => {
  it(`a message over ${LIMITS.messageTextBytes} bytes gets 413 too_large and is not stored`, async () => {
    const agent = uniqueAgent();
    const send = (body: BodyInit) =>
      SELF.fetch(`${BASE}/agents/${agent}/messages`, { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body });
    const big = JSON.stringify({ text: "x".repeat(LIMITS.messageTextBytes + 1) });
    const res = await send(big);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: "too_large" });
    const huge = JSON.stringify({ text: "x".repeat(4 * LIMITS.messageTextBytes) });
    const streamed = new Blob([huge]).stream();
    const res2 = await send(streamed);
    expect(res2.status).toBe(413);
    const list = await SELF.fetch(`${BASE}/agents/${agent}/messages`, { headers: auth });
    expect(await list.json()).toMatchObject({ messages: [] });
  });

  it("a session lease body over 4 KiB gets 413 too_large and grants nothing", async () => {
    const session = `s-${crypto.randomUUID()}`;
    const res = await SELF.fetch(`${BASE}/leases/${session}/acquire`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ run_id: crypto.randomUUID(), pad: "x".repeat(4096) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: "too_large" });
    const state = await SELF.fetch(`${BASE}/leases/${session}`, { headers: auth });
    expect(await state.json()).toMatchObject({ held: false, fence: 0 });
  });
});
