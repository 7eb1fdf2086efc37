// The step journal in a real agent object: a step is recorded under the message's current token
// and handed to the next attempt with its result; an effect's intent without an outcome parks the
// message for a person (ask) or lets it run again (retry); a person answers done or redo; the same
// writes over HTTP need the run's key; heartbeats move the run deadline but never past the run
// timeout, and a run that stops heartbeating is taken back.
import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { accountTag, LIMITS, type MessageFrame } from "../../worker/wire/protocol.ts";
import { StepStore } from "../../worker/objects/step-store.ts";
import { BASE, call, claimant, DEV_TOKEN, message, OTHER_TOKEN, post, presence, settle, stubFor, uniqueAgent, write, type TestSocket } from "./helpers.ts";
import { frozenAgent, passTime } from "./clock.ts";

const run = (sock: TestSocket, id: number, timeoutMs?: number): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id, timeoutMs);
const step = (sock: TestSocket, m: MessageFrame, name: string, extra: Record<string, unknown>) =>
  write(sock, { type: "step", id: m.id, token: m.token, name, kind: "step", phase: "done", ...extra });

describe("steps", () => {
  it("a recorded step reaches the next attempt with its result; a second record of it changes nothing", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const first = await run(a.sock, id);
    expect(first.steps).toBeUndefined();
    expect(await step(a.sock, first, "llm", { value: { answer: 42 } })).toMatchObject({ type: "result", op: "step", status: "done", duplicate: false });
    expect(await step(a.sock, first, "llm", { value: { answer: 0 } })).toMatchObject({ op: "step", duplicate: true, value: { answer: 42 } });
    a.sock.close();
    const b = await claimant(agent, "b");
    const second = await run(b.sock, id);
    expect(second.attempt).toBe(2);
    expect(second.steps).toEqual([{ name: "llm", kind: "step", status: "done", value: { answer: 42 }, on_unknown: null, attempt: 1 }]);
    const view = await message(agent, id);
    expect(view.steps).toEqual([expect.objectContaining({ name: "llm", kind: "step", status: "done", attempt: 1, bytes: 13 })]);
  });

  it("a step written under a stale token or from another connection is refused and not recorded", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    expect(await step(b.sock, m, "x", { value: 1 })).toMatchObject({ type: "error", code: "not_your_message" });
    expect(await step(a.sock, { ...m, token: m.token! + 1 }, "x", { value: 1 })).toMatchObject({ type: "error", code: "stale_token" });
    expect((await message(agent, id)).steps).toEqual([]);
  });

  it("a journal is bounded in bytes: a write past the budget is too_large and changes nothing", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "work");
    // Fill the journal to just under its budget directly (the frame rate limit would make this slow) before
    // anything reads it (the store keeps what it read), then write past it.
    await runInDurableObject(stubFor(agent), (_i, state) => {
      for (let i = 0; i < 49; i++) {
        state.storage.sql.exec(`INSERT INTO message_steps (message_id, name, kind, status, value, attempt, token, at) VALUES (?, ?, 'step', 'done', ?, 1, 1, ?)`,
          id, `fill${i}`, JSON.stringify("y".repeat(41 * 1024 - 2)), i);
      }
    });
    const a = await claimant(agent, "a");
    const m = await run(a.sock, id);
    expect(await step(a.sock, m, "last", { value: "x".repeat(40 * 1024) })).toMatchObject({ type: "error", code: "too_large" });
    const steps = (await message(agent, id)).steps as { name: string; bytes: number }[];
    expect(steps.map((s) => s.name)).not.toContain("last");
    expect(steps.reduce((n, s) => n + s.bytes, 0)).toBeLessThanOrEqual(2 * 1024 * 1024);
  });
});

describe("the journal a successor is handed", () => {
  it("is the journal as SQLite holds it: what the object kept in memory through steps, effects, their keys and rewrites agrees with a fresh read", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    // Named in the order they begin, so records begun in the same millisecond keep that order too.
    await step(a.sock, m, "a-plan", { value: { outline: ["a", "b"] } });
    await step(a.sock, m, "b-pay", { kind: "effect", phase: "intent", on_unknown: "retry" });
    await step(a.sock, m, "c-mail", { kind: "effect", phase: "intent", on_unknown: "retry" });
    await step(a.sock, m, "b-pay", { kind: "effect", phase: "done", value: "paid", on_unknown: "retry" });
    a.sock.close();
    const b = await claimant(agent, "b");
    const copy = await run(b.sock, id);
    const fresh = await runInDurableObject(stubFor(agent), (_i, state) => new StepStore(state.storage.sql).journal(id));
    expect(copy.steps).toEqual(fresh.map((r) => ({
      name: r.name, kind: r.kind, status: r.status, on_unknown: r.onUnknown, attempt: r.attempt, ...(r.value === null ? {} : { value: JSON.parse(r.value) as unknown }),
    })));
    expect(copy.steps?.map((s) => [s.name, s.status])).toEqual([["a-plan", "done"], ["b-pay", "done"], ["c-mail", "intent"]]);
    const key = (await call("GET", `/agents/${agent}/messages/${id}/steps/c-mail`)).body as { idempotency_key: string };
    expect(await step(b.sock, copy, "c-mail", { kind: "effect", phase: "intent", on_unknown: "retry" })).toMatchObject({ idempotency_key: key.idempotency_key });
  });
});

describe("effects", () => {
  it("an intent without an outcome parks the message when its runner leaves (ask); done records the person's answer and it runs again", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "refund");
    const m = await run(a.sock, id);
    expect(await step(a.sock, m, "refund", { kind: "effect", phase: "intent" })).toMatchObject({ op: "step", status: "intent" });
    a.sock.close();
    const b = await claimant(agent, "b");
    await settle(b.sock);
    expect(b.sock.framesOf("message").filter((f) => f.run && f.id === id)).toEqual([]);
    const parked = await message(agent, id);
    expect(parked).toMatchObject({ status: "parked", waiting_on: "refund" });
    // Presence says what it waits on as data (the dashboard and `baton who` read it), the sentence only for older readers.
    expect((await presence(agent)).work.parked).toEqual([expect.objectContaining({ id, waiting_on: "refund", reason: "outcome unknown: step refund" })]);
    const resumedBlind = await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "ok" });
    expect(resumedBlind).toMatchObject({ status: 409, body: { error: "outcome_unknown" } });
    const resumed = await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "refunded by hand", outcome: "done" });
    expect(resumed.status).toBe(200);
    const again = await run(b.sock, id);
    expect(again.steps).toEqual([expect.objectContaining({ name: "refund", kind: "effect", status: "done", value: "refunded by hand" })]);
  });

  it("redo forgets the intent, so the next attempt runs the effect again", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "charge");
    const m = await run(a.sock, id);
    await step(a.sock, m, "charge", { kind: "effect", phase: "intent" });
    expect(await write(a.sock, { type: "fail", id, token: m.token, reason: "timeout talking to the bank" })).toMatchObject({ op: "fail", status: "parked" });
    expect((await call("POST", `/agents/${agent}/messages/${id}/resume`, { outcome: "redo" })).status).toBe(200);
    const again = await run(a.sock, id);
    expect(again.steps).toBeUndefined();
  });

  it("with retry the message simply runs again and the intent is handed over, to be run under the same key", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "email");
    const m = await run(a.sock, id);
    await step(a.sock, m, "email", { kind: "effect", phase: "intent", on_unknown: "retry" });
    a.sock.close();
    const b = await claimant(agent, "b");
    const again = await run(b.sock, id);
    expect(again.steps).toEqual([expect.objectContaining({ name: "email", status: "intent", on_unknown: "retry" })]);
    const key = await call("GET", `/agents/${agent}/messages/${id}/steps/email`);
    expect(key.body).toMatchObject({ status: "intent", idempotency_key: `baton:${await accountTag("dev")}:${agent}:${id}:email` });
  });

  it("an effect's key differs between two accounts for the same agent, message and name, and stays the same on the next attempt", async () => {
    const agent = uniqueAgent();
    const keys: string[][] = [];
    for (const token of [DEV_TOKEN, OTHER_TOKEN]) {
      const a = await claimant(agent, "a", { token });
      const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
        method: "POST", headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ text: "charge" }),
      });
      const { id } = (await res.json()) as { id: number };
      expect(id).toBe(1);
      const intent = (m: MessageFrame, sock: TestSocket) => step(sock, m, "charge", { kind: "effect", phase: "intent", on_unknown: "retry" });
      const first = await intent(await run(a.sock, id), a.sock);
      a.sock.close();
      const b = await claimant(agent, "b", { token });
      const second = await intent(await run(b.sock, id), b.sock);
      b.sock.close();
      keys.push([first.idempotency_key as string, second.idempotency_key as string]);
    }
    const [dev, other] = keys as [string[], string[]];
    expect(dev[0]).toBe(`baton:${await accountTag("dev")}:${agent}:1:charge`);
    expect(dev[1]).toBe(dev[0]);
    expect(other[1]).toBe(other[0]);
    expect(other[0]).not.toBe(dev[0]);
    expect(other[0]!.length).toBeLessThanOrEqual(LIMITS.effectKeyChars);
  });

  it("an intent the previous release recorded keeps that release's key when it runs again, so the API sees the retry it is", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "charge");
    // As that release left it, before this object read the journal (the store keeps what it read).
    await runInDurableObject(stubFor(agent), (_i, state) => {
      state.storage.sql.exec(`INSERT INTO message_steps (message_id, name, kind, status, value, on_unknown, attempt, token, at) VALUES (?, 'pay', 'effect', 'intent', NULL, 'retry', 1, 1, 1)`, id);
    });
    const a = await claimant(agent, "a");
    await run(a.sock, id);
    const legacy = `baton:${agent}:${id}:pay`;
    expect((await call("GET", `/agents/${agent}/messages/${id}/steps/pay`)).body).toMatchObject({ idempotency_key: legacy });
    a.sock.close();
    const b = await claimant(agent, "b");
    const again = await run(b.sock, id);
    expect(await step(b.sock, again, "pay", { kind: "effect", phase: "intent", on_unknown: "retry" })).toMatchObject({ status: "intent", idempotency_key: legacy });
    expect(await step(b.sock, again, "pay", { kind: "effect", phase: "done", value: "paid", on_unknown: "retry" })).toMatchObject({ status: "done", idempotency_key: legacy });
    // A new effect gets the key with the account's tag.
    expect(await step(b.sock, again, "mail", { kind: "effect", phase: "intent" })).toMatchObject({ idempotency_key: `baton:${await accountTag("dev")}:${agent}:${id}:mail` });
  });
});

describe("over HTTP", () => {
  it("a step PUT needs the run's key: a wrong key is 403, the right one records it", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    expect(m.run_key).toMatch(/^[0-9a-f]{32}$/);
    const wrong = await call("PUT", `/agents/${agent}/messages/${id}/steps/fetch`, { token: m.token, run_key: "0".repeat(32), kind: "step", phase: "done", value: "x" });
    expect(wrong).toMatchObject({ status: 403, body: { error: "not_your_message" } });
    const right = await call("PUT", `/agents/${agent}/messages/${id}/steps/fetch`, { token: m.token, run_key: m.run_key, kind: "step", phase: "done", value: "x" });
    expect(right).toMatchObject({ status: 200, body: { status: "done", duplicate: false, value: "x" } });
    expect(await call("GET", `/agents/${agent}/messages/${id}/steps/fetch`)).toMatchObject({ status: 200, body: { value: "x", kind: "step" } });
    expect((await call("GET", `/agents/${agent}/messages/${id}/steps/nope`)).status).toBe(404);
    expect((await call("GET", `/agents/${agent}/messages/${id}/steps/bad%20name`)).status).toBe(400);
  });
});

describe("heartbeats", () => {
  it("a run that heartbeats outlives its heartbeat timeout; one that stops is taken back within it, never past the run timeout", async () => {
    // The clock moves only by passTime: on a busy machine a second could pass between the hand-out and the first beat.
    const agent = await frozenAgent();
    expect((await call("PUT", `/agents/${agent}/policy`, { heartbeat_timeout_seconds: 1 })).body).toMatchObject({ heartbeat_timeout_seconds: 1 });
    const a = await claimant(agent, "a");
    const id = await post(agent, "slow");
    const m = await run(a.sock, id);
    expect(m.heartbeat_timeout_ms).toBe(1000);
    for (let i = 0; i < 4; i++) {
      await passTime(agent, 400);
      expect(await write(a.sock, { type: "heartbeat", id, token: m.token, details: { done: i } })).toMatchObject({ op: "heartbeat" });
    }
    const view = await message(agent, id);
    expect(view).toMatchObject({ status: "running", progress: { done: 3 } });
    await passTime(agent, 1000);
    await a.sock.next("revoked", (f) => f.id === id);
    // Taken back, and handed out again to the only runner there is, as attempt 2.
    expect(await message(agent, id)).toMatchObject({ attempts: 2, failures: 1, error: expect.stringMatching(/heartbeat timeout/) });
  });

  it("a heartbeat never moves the deadline past the run timeout's cap", async () => {
    const agent = uniqueAgent();
    await call("PUT", `/agents/${agent}/policy`, { heartbeat_timeout_seconds: 60 });
    const a = await claimant(agent, "a");
    const id = await post(agent, "capped", { run_timeout_seconds: 2 });
    const m = await run(a.sock, id);
    const beat = await write(a.sock, { type: "heartbeat", id, token: m.token });
    const cap = await runInDurableObject(stubFor(agent), (_i, state) =>
      state.storage.sql.exec<{ cap_at: number }>(`SELECT cap_at FROM messages WHERE id = ?`, id).one().cap_at);
    expect(beat.expires_at).toBe(cap);
  });
});
