// Cancel in a real agent object: a queued or parked message ends at once and never runs; a running
// one's runner is told with a cancel frame, every later write of that run is refused as
// `cancelled`, and the runner takes the next message; twice answers the first; retry is 409; a
// cancel that races the run's own reply has one winner and both sides hear which.
import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { BASE, call, claimant, message, post, presence, stubFor, uniqueAgent, write, type TestSocket } from "./helpers.ts";
import { passTime } from "./clock.ts";

const run = (sock: TestSocket, id: number, timeoutMs?: number): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id, timeoutMs);

async function cancel(agent: string, id: number, body: unknown = { reason: "sent by mistake" }, token = "baton-dev-token", via = "cli") {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/cancel`, {
    method: "POST", headers: { Authorization: `Bearer ${token}`, "content-type": "application/json", "x-baton-via": via }, body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("cancel", () => {
  it("a queued message ends cancelled at once, kept with who cancelled and why, and never runs", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "deploy to prod");
    const res = await cancel(agent, id, { reason: "sent by mistake" }, "dev-person-token");
    expect(res).toMatchObject({
      status: 200,
      body: { status: "cancelled", cancelled: { token: "person", account: "dev", via: "cli", reason: "sent by mistake", unknown_effects: [] } },
    });
    expect(res.body.answers).toEqual([expect.objectContaining({ choice: "cancel", text: "sent by mistake", token: "person", via: "cli" })]);
    const next = await post(agent, "the next one");
    const a = await claimant(agent, "a");
    await run(a.sock, next);
    expect(a.sock.framesOf("message").filter((f) => f.run && f.id === id)).toEqual([]);
    const work = (await presence(agent)).work;
    expect(work.counts).toMatchObject({ cancelled: 1, queued: 0 });
    expect(work.cancelled).toEqual([expect.objectContaining({ id, token: "person", via: "cli", reason: "sent by mistake" })]);
  });

  it("a parked message ends cancelled at once; its question is closed and answering it is 409", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "delete the bucket");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "park", id, token: m.token, question: { text: "Delete it?" }, deadline_seconds: 600 });
    expect(await cancel(agent, id, {})).toMatchObject({ status: 200, body: { status: "cancelled", question: null, expires_at: null, cancelled: { reason: null } } });
    expect((await call("POST", `/agents/${agent}/messages/${id}/approve`, {})).status).toBe(409);
    expect((await presence(agent)).work.parked).toEqual([]);
  });

  it("a running message: its runner gets a cancel frame, every later write of that run is refused, an open effect is shown as unknown, and the runner takes the next message", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "long job");
    const second = await post(agent, "next job");
    const m = await run(a.sock, id);
    expect(await write(a.sock, { type: "step", id, token: m.token, name: "fetch", kind: "step", phase: "done", value: 1 })).toMatchObject({ op: "step" });
    // The agent's clock stands still (connect stops it): the charge begins a moment after the fetch.
    await passTime(agent, 10);
    expect(await write(a.sock, { type: "step", id, token: m.token, name: "charge", kind: "effect", phase: "intent" })).toMatchObject({ op: "step" });
    const res = await cancel(agent, id, { reason: "wrong branch" });
    expect(res).toMatchObject({ status: 200, body: { status: "cancelled", cancelled: { reason: "wrong branch", unknown_effects: ["charge"] } } });
    expect(res.body.steps).toEqual([expect.objectContaining({ name: "fetch", status: "done" }), expect.objectContaining({ name: "charge", status: "intent" })]);
    expect(await a.sock.next("cancel", (f) => f.id === id)).toEqual({ type: "cancel", id, token: m.token, reason: "wrong branch", by: "default" });
    await run(a.sock, second);
    for (const frame of [
      { type: "reply", id, token: m.token, text: "done anyway", key: "k" },
      { type: "step", id, token: m.token, name: "charge", kind: "effect", phase: "done" },
      { type: "heartbeat", id, token: m.token },
      { type: "checkpoint", id, token: m.token, value: 1 },
      { type: "fail", id, token: m.token, reason: "x" },
    ]) {
      expect(await write(a.sock, frame)).toMatchObject({ type: "error", code: "cancelled" });
    }
    const heartbeat = await call("POST", `/agents/${agent}/messages/${id}/heartbeat`, { token: m.token, run_key: m.run_key });
    expect(heartbeat).toMatchObject({ status: 409, body: { error: "cancelled" } });
    expect(await message(agent, id)).toMatchObject({ status: "cancelled", reply: null });
  });

  it("cancelling twice answers the first cancel and changes nothing; retry is 409; a finished message is 409", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "x");
    const first = await cancel(agent, id, { reason: "first" });
    const again = await cancel(agent, id, { reason: "second" }, "dev-person-token");
    expect(again).toMatchObject({ status: 200, body: { cancelled: { reason: "first", token: "default" } } });
    expect(again.body).toEqual(first.body);
    expect(await call("POST", `/agents/${agent}/messages/${id}/retry`, {})).toMatchObject({
      status: 409, body: { error: "cancelled", message: expect.stringMatching(/cancelled message is final/) },
    });
    const a = await claimant(agent, "a");
    const done = await post(agent, "y");
    const m = await run(a.sock, done);
    await write(a.sock, { type: "ack", id: done, token: m.token });
    expect(await cancel(agent, done)).toMatchObject({ status: 409, body: { error: "message_finished" } });
    expect(await cancel(agent, 9999)).toMatchObject({ status: 404 });
  });

  it("a cancel racing the run's reply has one winner, and both sides are told which", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const ids = [await post(agent, "r1"), await post(agent, "r2")];
    // The reply is sent first, then the cancel: the object sees the reply first.
    let m = await run(a.sock, ids[0]!);
    const reply = write(a.sock, { type: "reply", id: ids[0], token: m.token, text: "won", key: "k" });
    expect(await reply).toMatchObject({ op: "reply", duplicate: false });
    expect(await cancel(agent, ids[0]!)).toMatchObject({ status: 409, body: { error: "message_finished", message: expect.stringMatching(/acknowledged/) } });
    // The cancel first, then the reply: the reply is refused.
    m = await run(a.sock, ids[1]!);
    expect(await cancel(agent, ids[1]!)).toMatchObject({ status: 200, body: { status: "cancelled" } });
    expect(await write(a.sock, { type: "reply", id: ids[1], token: m.token, text: "lost", key: "k" })).toMatchObject({ type: "error", code: "cancelled" });
    expect(await message(agent, ids[1]!)).toMatchObject({ status: "cancelled", reply: null, acked_token: null });
  });

  it("a send-only token may not cancel, even the message it sent; a bad body is 400 and changes nothing", async () => {
    const agent = uniqueAgent();
    const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { Authorization: "Bearer dev-sender-token", "content-type": "application/json" }, body: JSON.stringify({ text: "mine" }),
    });
    const { id } = (await res.json()) as { id: number };
    expect((await cancel(agent, id, {}, "dev-sender-token")).status).toBe(403);
    expect(await cancel(agent, id, { reason: 5 })).toMatchObject({ status: 400, body: { error: "bad_request" } });
    expect(await cancel(agent, id, { reason: "x".repeat(1001) })).toMatchObject({ status: 400 });
    expect(await cancel(agent, id, { why: "x" })).toMatchObject({ status: 400 });
    expect(await message(agent, id)).toMatchObject({ status: "queued" });
  });

  it("a cancel queues message.cancelled for the webhook and counts in the metrics", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/webhook`, { url: "http://receiver.test/status/503", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" })).status).toBe(200);
    const id = await post(agent, "x");
    await cancel(agent, id, { reason: "why not" }, "dev-person-token", "page");
    const events = await runInDurableObject(stubFor(agent), (_i, state) => state.storage.sql
      .exec<{ type: string; facts: string }>(`SELECT type, facts FROM webhook_outbox ORDER BY seq`).toArray());
    expect(events.map((e) => [e.type, JSON.parse(e.facts).message])).toEqual([
      ["message.cancelled", expect.objectContaining({ id, reason: "why not", by: "person", via: "page", was: "queued" })],
    ]);
    const tally = await runInDurableObject(stubFor(agent), (_i, state) => state.storage.sql
      .exec<{ value: number }>(`SELECT value FROM message_tally WHERE key = 'cancelled'`).one().value);
    expect(tally).toBe(1);
  });
});
