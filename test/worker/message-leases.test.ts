// Per-message leases in the real runtime: tokens and attempts on each hand-out, stale tokens
// refused, run timeouts that take a message from a live runner, runner pools with slots, groups,
// park and resume, failure after the last attempt, and a stopping runner that takes nothing new.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { call, claimant, message, post, presence, sayStopping, settle, uniqueAgent, write, type TestSocket } from "./helpers.ts";
import { passTime, passUntil } from "./clock.ts";

async function setPolicy(agent: string, policy: Record<string, unknown>) {
  return call("PUT", `/agents/${agent}/policy`, policy);
}

/** Connects and claims with `slots` slots (serve --concurrency). */
async function runner(agent: string, machine: string, slots = 1) {
  const { sock } = await claimantWith(agent, machine, slots);
  return sock;
}

async function claimantWith(agent: string, machine: string, slots: number) {
  const c = await claimant(agent, machine);
  if (slots !== 1) {
    c.sock.send({ type: "hello", concurrency: slots });
    await settle(c.sock);
  }
  return c;
}

function run(sock: TestSocket, id?: number): Promise<MessageFrame> {
  return sock.next("message", (f) => f.run && (id === undefined || f.id === id));
}

function reply(sock: TestSocket, m: MessageFrame, text: string) {
  return write(sock, { type: "reply", id: m.id, token: m.token, key: `${m.id}:reply`, text });
}

describe("per-message leases", () => {
  it("A claims a message and stalls; B takes it over with a larger token and A's checkpoint; A's late writes are refused; B completes", async () => {
    const agent = uniqueAgent();
    expect((await setPolicy(agent, { mode: "pool" })).status).toBe(200);
    const a = await runner(agent, "a");
    const id = await post(agent, "long task", { run_timeout_seconds: 1 });
    const first = await run(a, id);
    expect(first).toMatchObject({ attempt: 1, run_timeout_ms: 1000 });
    expect(await write(a, { type: "checkpoint", id, token: first.token, value: { step: 2 } })).toMatchObject({ op: "checkpoint", token: first.token });
    const b = await runner(agent, "b");
    // A stalls: its connection keeps heartbeating, but the run timeout passes on the server's clock.
    await passTime(agent, 1000);
    const second = await run(b, id);
    expect(second.token).toBeGreaterThan(first.token!);
    expect(second).toMatchObject({ attempt: 2, checkpoint: { step: 2 } });
    expect(await a.next("revoked")).toEqual({ type: "revoked", id, token: first.token, reason: "run_timeout" });
    // A wakes and writes: every write under its old token is refused and changes nothing.
    expect(await reply(a, first, "stale result")).toMatchObject({ type: "error", code: "stale_token" });
    expect(await write(a, { type: "checkpoint", id, token: first.token, value: { step: 99 } })).toMatchObject({ code: "stale_token" });
    expect(await write(a, { type: "park", id, token: first.token })).toMatchObject({ code: "stale_token" });
    expect(await message(agent, id)).toMatchObject({ status: "running", token: second.token, checkpoint: { step: 2 }, reply: null });
    expect(await reply(b, second, "done from step 2")).toMatchObject({ op: "reply", token: second.token, duplicate: false });
    expect(await message(agent, id)).toMatchObject({ status: "acknowledged", reply: "done from step 2", acked_token: second.token });
    // Its own token is refused too once the message is finished, unless it repeats the same write.
    expect(await reply(b, second, "done from step 2")).toMatchObject({ duplicate: true });
    expect(await write(b, { type: "checkpoint", id, token: second.token, value: {} })).toMatchObject({ code: "message_not_running" });
  });

  it("single mode: only the holder runs, one message per slot; standbys get copies without tokens", async () => {
    const agent = uniqueAgent();
    const a = await runner(agent, "a");
    const b = await runner(agent, "b", 4);
    const one = await post(agent, "one");
    const two = await post(agent, "two");
    const m1 = await run(a, one);
    expect(m1.token).toBeGreaterThan(0);
    const copy = await b.next("message", (f) => f.id === one);
    // The copy is the message as it was posted, before its hand-out counted an attempt.
    expect(copy).toMatchObject({ run: false, attempt: 0 });
    expect(copy.token).toBeUndefined();
    await a.next("message", (f) => f.id === two && !f.run);
    expect((await message(agent, two)).status).toBe("queued");
    await reply(a, m1, "ok");
    const m2 = await run(a, two);
    expect(m2.token).toBeGreaterThan(m1.token!);
    // The holder leaves: its running message goes to the new holder under a larger token.
    a.close();
    const again = await run(b, two);
    expect(again).toMatchObject({ attempt: 2 });
    expect(again.token).toBeGreaterThan(m2.token!);
  });

  it("pool mode: every runner with a free slot takes messages, each on one runner, within max_running", async () => {
    const agent = uniqueAgent();
    await setPolicy(agent, { mode: "pool", max_running: 3 });
    const a = await runner(agent, "a", 2);
    const b = await runner(agent, "b", 2);
    const ids = [await post(agent, "1"), await post(agent, "2"), await post(agent, "3"), await post(agent, "4")];
    await settle(a);
    await settle(b);
    const runs = [...a.framesOf("message"), ...b.framesOf("message")].filter((f) => f.run);
    expect(runs.map((f) => f.id).sort()).toEqual(ids.slice(0, 3));
    expect(a.framesOf("message").filter((f) => f.run)).toHaveLength(2);
    const work = (await presence(agent)).work;
    expect(work).toMatchObject({ mode: "pool", max_running: 3, counts: { running: 3, queued: 1 } });
    expect((await presence(agent)).connections.map((c) => [c.slots, c.running])).toEqual([[2, 2], [2, 1]]);
    const bRun = b.framesOf("message").find((f) => f.run)!;
    await reply(b, bRun, "ok");
    expect((await run(b, ids[3])).attempt).toBe(1);
  });

  it("a group runs one message at a time, in the order posted", async () => {
    const agent = uniqueAgent();
    const a = await runner(agent, "a", 3);
    const g1 = await post(agent, "g1", { group: "chat-7" });
    const g2 = await post(agent, "g2", { group: "chat-7" });
    const other = await post(agent, "other");
    const m1 = await run(a, g1);
    await run(a, other);
    expect((await message(agent, g2)).status).toBe("queued");
    await reply(a, m1, "ok");
    expect(await run(a, g2)).toMatchObject({ group: "chat-7" });
  });

  it("park gives the lease up; resume hands the message out again with attempt + 1, its checkpoint and the input", async () => {
    const agent = uniqueAgent();
    const a = await runner(agent, "a");
    const id = await post(agent, "deploy to prod");
    const first = await run(a, id);
    expect(await write(a, { type: "park", id, token: first.token, value: { plan: "ready" } })).toMatchObject({ op: "park", deadline: null });
    expect(await message(agent, id)).toMatchObject({ status: "parked", claim_seq: null, checkpoint: { plan: "ready" } });
    expect((await presence(agent)).work.parked).toEqual([{ id, attempt: 1, deadline: null, group: null, waiting_on: null, reason: null }]);
    // The slot is free while the message waits for a person.
    const next = await post(agent, "meanwhile");
    const m = await run(a, next);
    await reply(a, m, "ok");
    const resumed = await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "approved by ana" });
    expect(resumed).toMatchObject({ status: 200, body: { status: "running" } });
    const second = await run(a, id);
    expect(second).toMatchObject({ attempt: 2, checkpoint: { plan: "ready" }, resume_input: "approved by ana" });
    expect(second.token).toBeGreaterThan(first.token!);
    expect(await reply(a, first, "late")).toMatchObject({ code: "stale_token" });
    expect(await call("POST", `/agents/${agent}/messages/${id}/resume`, {})).toMatchObject({ status: 409, body: { error: "not_parked" } });
    expect(await reply(a, second, "deployed")).toMatchObject({ duplicate: false });
  });

  it("a parked message fails when its deadline passes on the server's clock", async () => {
    const agent = uniqueAgent();
    const a = await runner(agent, "a");
    const id = await post(agent, "wait for approval");
    const m = await run(a, id);
    const parked = await write(a, { type: "park", id, token: m.token, deadline_seconds: 1 });
    await passUntil(agent, parked.deadline as number);
    expect(await message(agent, id)).toMatchObject({ status: "failed" });
    expect((await presence(agent)).work.failed).toEqual([{ id, attempts: 1, error: "its park deadline passed before anyone answered" }]);
    expect(await call("POST", `/agents/${agent}/messages/${id}/resume`, {})).toMatchObject({ status: 409 });
  });

  it("after max_attempts a message that times out again is failed, not handed out forever", async () => {
    const agent = uniqueAgent();
    await setPolicy(agent, { max_attempts: 2 });
    const a = await runner(agent, "a");
    const id = await post(agent, "flaky", { run_timeout_seconds: 1 });
    await run(a, id);
    await passTime(agent, 1000);
    await a.next("revoked", (f) => f.id === id);
    await passTime(agent, 1000);
    expect((await run(a, id)).attempt).toBe(2);
    await passTime(agent, 1000);
    await a.next("revoked", (f) => f.id === id);
    expect(await message(agent, id)).toMatchObject({ status: "failed", attempts: 2 });
    await settle(a);
    expect(a.framesOf("message").filter((f) => f.run && f.id === id)).toHaveLength(0);
  });

  it("bad policy, post, resume and write input gets a named error and changes nothing", async () => {
    const agent = uniqueAgent();
    const before = (await call("GET", `/agents/${agent}/policy`)).body;
    for (const bad of [{ mode: "fleet" }, { max_running: 0 }, { run_timeout_seconds: 0 }, { max_attempts: 1.5 }, { colour: "red" }]) {
      expect((await setPolicy(agent, bad)).status, JSON.stringify(bad)).toBe(400);
    }
    expect((await call("GET", `/agents/${agent}/policy`)).body).toEqual(before);
    expect((await call("POST", `/agents/${agent}/messages`, { text: "x", run_timeout_seconds: 0 })).status).toBe(400);
    expect((await call("POST", `/agents/${agent}/messages`, { text: "x", group: "" })).status).toBe(400);
    expect((await call("POST", `/agents/${agent}/messages/999/resume`, {})).status).toBe(404);
    const a = await runner(agent, "a");
    const id = await post(agent, "x");
    const m = await run(a, id);
    expect(await write(a, { type: "reply", id, key: "k", text: "no lease named" })).toMatchObject({ code: "bad_frame" });
    expect(await write(a, { type: "park", id })).toMatchObject({ code: "bad_frame" });
    expect(await write(a, { type: "checkpoint", id, value: 1 })).toMatchObject({ code: "bad_frame" });
    expect(await write(a, { type: "reply", id, token: m.token! + 1, key: "k", text: "future" })).toMatchObject({ code: "stale_token" });
    await setPolicy(agent, { mode: "pool" });
    const lease = (await presence(agent)).fence;
    // The older fence-only form is refused in either mode: a fence says who holds the agent, not who runs the message.
    expect(await write(a, { type: "ack", id, fence: lease })).toMatchObject({ code: "bad_frame" });
    expect(await message(agent, id)).toMatchObject({ status: "running", token: m.token });
  });

  it("a runner that says it is stopping is handed nothing new: a queued message waits for the next holder and runs there as attempt 1", async () => {
    const agent = uniqueAgent();
    const a = await runner(agent, "a", 2);
    const b = await runner(agent, "b");
    const first = await run(a, await post(agent, "running when the stop began"));
    // `baton serve` got SIGTERM: it says so before stopping its runs, then releases.
    await sayStopping(a);
    expect((await presence(agent)).connections.map((c) => [c.machine, c.stopping ?? false])).toEqual([["a", true], ["b", false]]);
    const queued = await post(agent, "posted during the stop");
    await settle(a);
    expect(a.framesOf("message").filter((f) => f.run)).toEqual([]);
    expect(await message(agent, queued)).toMatchObject({ status: "queued", attempts: 0 });
    expect(await reply(a, first, "done")).toMatchObject({ op: "reply" });
    a.send({ type: "serve_lease", op: "release" });
    expect(await run(b, queued)).toMatchObject({ attempt: 1 });
  });
});
