// Durable work in the real runtime: messages, idempotent writes under message tokens, redelivery, checkpoints.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { BASE, claimant, DEV_TOKEN, presence, settle, uniqueAgent, type TestSocket } from "./helpers.ts";

const auth = { Authorization: `Bearer ${DEV_TOKEN}` };

async function post(agent: string, text: string) {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
    method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ text }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function history(agent: string, after = 0) {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages?after=${after}`, { headers: auth });
  return (await res.json()) as { messages: { id: number; status: string; attempts: number; reply: string | null }[]; cursor: number };
}

/** The run copy of message `id` this connection was handed (it carries the message's token). */
function runCopy(sock: TestSocket, id: number): Promise<MessageFrame> {
  return sock.next("message", (f) => f.run && f.id === id);
}

function reply(sock: TestSocket, m: MessageFrame, text: string, req = `r${m.id}`) {
  sock.send({ type: "reply", id: m.id, token: m.token, key: `${m.id}:reply`, text, req });
  return sock.next("result", (f) => f.req === req).then((r) => {
    if (r.op !== "reply") throw new Error(`expected a reply result, got ${r.op}`);
    return r;
  });
}

describe("durable work", () => {
  it("pushes a message to every serve connection; only the holder's copy says run", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const posted = await post(agent, "review PR 7");
    expect(posted.status).toBe(201);
    const ma = await a.sock.next("message");
    const mb = await b.sock.next("message");
    expect(ma).toMatchObject({ id: posted.body.id, text: "review PR 7", run: true, attempt: 1 });
    expect(mb).toMatchObject({ id: posted.body.id, run: false });
    expect((await presence(agent)).connections.map((c) => c.cursor)).toEqual([ma.id, ma.id]);
  });

  it("A pauses, B takes over, A's writes with its old token and old fence are rejected and stored nowhere", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const { body } = await post(agent, "deploy");
    const id = body.id as number;
    const aCopy = await runCopy(a.sock, id);
    // B takes over (A's connection is gone); A comes back on a new connection with its old token and fence.
    a.sock.close();
    const bHeld = await b.sock.next("serve_lease", (f) => f.held);
    const redelivered = await runCopy(b.sock, id);
    expect(redelivered).toMatchObject({ id, attempt: 2 });
    const aBack = await claimant(agent, "a");
    expect(aBack.lease.held).toBe(false);
    aBack.sock.send({ type: "reply", id, token: aCopy.token, key: `${id}:reply`, text: "stale", req: "late" });
    expect(await aBack.sock.next("error", (f) => f.req === "late")).toMatchObject({ code: "stale_token" });
    aBack.sock.send({ type: "checkpoint", fence: a.lease.fence, value: { step: 9 }, req: "cp" });
    expect(await aBack.sock.next("error", (f) => f.req === "cp")).toMatchObject({ code: "stale_fence" });
    // Even with the current token, a standby is not the message's runner.
    aBack.sock.send({ type: "ack", id, token: redelivered.token, req: "ack" });
    expect(await aBack.sock.next("error", (f) => f.req === "ack")).toMatchObject({ code: "not_your_message" });
    const h = await history(agent);
    expect(h.messages[0]).toMatchObject({ id, status: "running", reply: null });
    expect(await reply(b.sock, redelivered, "done by b")).toMatchObject({ duplicate: false, fence: bHeld.fence });
    expect((await history(agent)).messages[0]).toMatchObject({ status: "acknowledged", reply: "done by b" });
  });

  it("unacked work is redelivered to the new holder exactly once with attempt 2; acked work never", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const c = await claimant(agent, "c");
    const first = (await post(agent, "one")).body.id as number;
    const second = (await post(agent, "two")).body.id as number;
    const firstCopy = await runCopy(a.sock, first);
    await a.sock.next("message", (f) => f.id === second);
    await reply(a.sock, firstCopy, "ok");
    a.sock.close();
    await b.sock.next("serve_lease", (f) => f.held);
    const again = await b.sock.next("message", (f) => f.run);
    expect(again).toMatchObject({ id: second, attempt: 2 });
    await settle(b.sock);
    expect(b.sock.framesOf("message").filter((f) => f.run)).toHaveLength(0);
    // c is standby: it never gets a run copy.
    await settle(c.sock);
    expect(c.sock.framesOf("message").filter((f) => f.run)).toHaveLength(0);
    expect((await history(agent)).messages.map((m) => [m.id, m.status, m.attempts])).toEqual([
      [first, "acknowledged", 1],
      [second, "running", 2],
    ]);
  });

  it("a message posted with no holder waits, then goes to the first holder with attempt 1", async () => {
    const agent = uniqueAgent();
    const id = (await post(agent, "later")).body.id as number;
    expect((await history(agent)).messages[0]).toMatchObject({ status: "queued", attempts: 0 });
    const a = await claimant(agent, "a");
    expect(await a.sock.next("message", (f) => f.run)).toMatchObject({ id, attempt: 1 });
  });

  it("a repeated write with the same idempotency key returns the first result and does nothing again", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = (await post(agent, "x")).body.id as number;
    const copy = await runCopy(a.sock, id);
    const first = await reply(a.sock, copy, "first", "q1");
    const second = await reply(a.sock, copy, "second", "q2");
    expect(first).toMatchObject({ duplicate: false, key: `${id}:reply` });
    expect(second).toMatchObject({ duplicate: true, key: `${id}:reply`, fence: first.fence });
    expect((await history(agent)).messages[0]?.reply).toBe("first");
  });

  it("a reply keyed like another message's write does not answer for it: message 2's ack still acknowledges it", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const one = (await post(agent, "one")).body.id as number;
    const two = (await post(agent, "two")).body.id as number;
    const oneCopy = await runCopy(a.sock, one);
    a.sock.send({ type: "reply", id: one, token: oneCopy.token, key: `${two}:ack`, text: "r1", req: "r1" });
    expect(await a.sock.next("result", (f) => f.req === "r1")).toMatchObject({ id: one, duplicate: false });
    const twoCopy = await runCopy(a.sock, two);
    a.sock.send({ type: "ack", id: two, token: twoCopy.token, req: "a2" });
    expect(await a.sock.next("result", (f) => f.req === "a2")).toMatchObject({ id: two, duplicate: false });
    expect((await history(agent)).messages.map((m) => m.status)).toEqual(["acknowledged", "acknowledged"]);
  });

  it("one constant key on three replies acknowledges all three messages", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const ids: number[] = [];
    for (const t of ["x", "y", "z"]) ids.push((await post(agent, t)).body.id as number);
    for (const id of ids) {
      const copy = await runCopy(a.sock, id);
      a.sock.send({ type: "reply", id, token: copy.token, key: "same", text: `done ${id}`, req: `q${id}` });
      expect(await a.sock.next("result", (f) => f.req === `q${id}`)).toMatchObject({ id, duplicate: false, key: "same" });
    }
    const h = await history(agent);
    expect(h.messages.map((m) => [m.status, m.reply])).toEqual(ids.map((id) => ["acknowledged", `done ${id}`]));
  });

  it("a second write to a done message, under any key, is a duplicate naming the write that did it", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = (await post(agent, "x")).body.id as number;
    const copy = await runCopy(a.sock, id);
    a.sock.send({ type: "ack", id, token: copy.token, req: "ack" });
    expect(await a.sock.next("result", (f) => f.req === "ack")).toMatchObject({ duplicate: false, key: "ack" });
    a.sock.send({ type: "reply", id, token: copy.token, key: "late-reply", text: "too late", req: "r" });
    expect(await a.sock.next("result", (f) => f.req === "r")).toMatchObject({ id, duplicate: true, key: "ack" });
    expect((await history(agent)).messages[0]).toMatchObject({ status: "acknowledged", reply: null });
  });

  it("a post retried with the same Idempotency-Key returns the first message and stores nothing", async () => {
    const agent = uniqueAgent();
    const send = (key: string, text: string) => SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { ...auth, "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify({ text }),
    });
    const first = await send("post-1", "deploy");
    expect(first.status).toBe(201);
    const firstBody = (await first.json()) as { id: number };
    const retry = await send("post-1", "deploy");
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await retry.json()).toMatchObject({ id: firstBody.id, text: "deploy" });
    const other = await send("post-2", "deploy");
    expect(other.status).toBe(201);
    expect((await history(agent)).messages.map((m) => m.id)).toEqual([firstBody.id, firstBody.id + 1]);
    const bad = await send("x".repeat(129), "deploy");
    expect(bad.status).toBe(400);
  });

  it("acknowledged history is pruned past BATON_HISTORY_MESSAGES; unacknowledged work never is", async () => {
    const agent = uniqueAgent();
    const keep = Number(env.BATON_HISTORY_MESSAGES);
    const a = await claimant(agent, "a");
    const open = (await post(agent, "left open")).body.id as number;
    // Parked, it stays unacknowledged and frees the holder's slot for the rest.
    const openCopy = await runCopy(a.sock, open);
    a.sock.send({ type: "park", id: open, token: openCopy.token, req: "park" });
    await a.sock.next("result", (f) => f.req === "park");
    for (let i = 0; i < keep + 5; i++) {
      const id = (await post(agent, `m${i}`)).body.id as number;
      const copy = await runCopy(a.sock, id);
      a.sock.send({ type: "ack", id, token: copy.token, req: `a${id}` });
      await a.sock.next("result", (f) => f.req === `a${id}`);
    }
    await post(agent, "last");
    const ids = (await history(agent)).messages.map((m) => m.id);
    expect(ids[0]).toBe(open);
    expect(ids.length).toBeLessThanOrEqual(keep + 1);
    const newest = ids.at(-1)!;
    expect(ids.slice(1)).toEqual(Array.from({ length: ids.length - 1 }, (_, i) => newest - ids.length + 2 + i));
    a.sock.send({ type: "ack", id: open + 1, token: 1, req: "gone" });
    expect(await a.sock.next("error", (f) => f.req === "gone")).toMatchObject({ code: "unknown_message" });
  });

  it("checkpoints reach the next holder with held:true (a restart keeps them: test/e2e/coordinator-restart.test.ts)", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    a.sock.send({ type: "checkpoint", fence: a.lease.fence, value: { step: 3, notes: ["x"] }, req: "cp" });
    expect(await a.sock.next("result", (f) => f.req === "cp")).toMatchObject({ op: "checkpoint" });
    b.sock.send({ type: "checkpoint", fence: a.lease.fence, value: { step: 99 }, req: "cp2" });
    expect(await b.sock.next("error", (f) => f.req === "cp2")).toMatchObject({ code: "not_holder" });
    a.sock.close();
    expect(await b.sock.next("serve_lease", (f) => f.held)).toMatchObject({ checkpoint: { step: 3, notes: ["x"] }, checkpoint_fence: 1 });
  });

  it("history and cursors are right after a reconnect", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const ids: number[] = [];
    for (const t of ["m1", "m2", "m3"]) ids.push((await post(agent, t)).body.id as number);
    const seen = await a.sock.next("message", (f) => f.id === ids[0]);
    a.sock.close();
    const back = await claimant(agent, "a");
    back.sock.send({ type: "sync", after: seen.id, req: "s" });
    const done = await back.sock.next("result", (f) => f.req === "s");
    expect(done).toMatchObject({ op: "sync", cursor: ids[2] });
    expect(back.sock.framesOf("message").filter((f) => !f.run).map((f) => f.id)).toEqual(ids.slice(1));
    expect((await presence(agent)).connections.map((c) => c.cursor)).toEqual([ids[2]]);
    const page = await history(agent, ids[0]!);
    expect(page.messages.map((m) => m.id)).toEqual(ids.slice(1));
    expect(page.cursor).toBe(ids[2]);
  });

  it("bad message bodies get 400 or 413 and store nothing", async () => {
    const agent = uniqueAgent();
    const cases: [BodyInit, number][] = [
      ["{not json", 400],
      [JSON.stringify({ text: "" }), 400],
      [JSON.stringify({ text: 5 }), 400],
      [JSON.stringify({ text: "x", extra: 1 }), 400],
      [JSON.stringify({ text: "x".repeat(33 * 1024) }), 413],
    ];
    for (const [body, status] of cases) {
      const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, { method: "POST", headers: auth, body });
      expect(res.status).toBe(status);
    }
    // A body sent without a length is dropped past the limit and cut off at 1 MiB, not buffered whole.
    const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 256) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const streamed = await SELF.fetch(`${BASE}/agents/${agent}/messages`, { method: "POST", headers: auth, body: stream });
    expect(streamed.status).toBe(413);
    expect(sent).toBeLessThan(256);
    expect((await history(agent)).messages).toEqual([]);
  });

  it("a write for an unknown message is rejected", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    a.sock.send({ type: "ack", id: 4242, token: 1, req: "u" });
    expect(await a.sock.next("error", (f) => f.req === "u")).toMatchObject({ code: "unknown_message" });
  });
});
