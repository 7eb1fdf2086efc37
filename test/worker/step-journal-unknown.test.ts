// The step journal in a real agent object, continued (step-journal.test.ts has steps, effects and
// heartbeats): an effect's unknown outcome is never lost or skipped; a second intent is refused, two
// unknowns are asked about in turn, a reply meanwhile is refused; step names, nesting limits and a
// stale attempt's replay.
import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { BASE, call, claimant, DEV_TOKEN, message, post, stubFor, uniqueAgent, write, type TestSocket } from "./helpers.ts";

const run = (sock: TestSocket, id: number, timeoutMs?: number): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id, timeoutMs);
const step = (sock: TestSocket, m: MessageFrame, name: string, extra: Record<string, unknown>) =>
  write(sock, { type: "step", id: m.id, token: m.token, name, kind: "step", phase: "done", ...extra });

describe("unknown outcomes are never lost or skipped", () => {
  it("a second intent of one effect in the same attempt is refused with effect_in_progress", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "refund");
    const m = await run(a.sock, id);
    const [one, two] = await Promise.all([
      step(a.sock, m, "refund", { kind: "effect", phase: "intent" }),
      step(a.sock, m, "refund", { kind: "effect", phase: "intent" }),
    ]);
    expect([one.type, two.type].sort()).toEqual(["error", "result"]);
    expect([one, two].find((f) => f.type === "error")).toMatchObject({ code: "effect_in_progress" });
    const http = await call("PUT", `/agents/${agent}/messages/${id}/steps/refund`, { token: m.token, run_key: m.run_key, kind: "effect", phase: "intent" });
    expect(http).toMatchObject({ status: 409, body: { error: "effect_in_progress" } });
  });

  it("two effects left unknown are each asked about in turn; the message runs again only when both are answered", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "pay and mail");
    const m = await run(a.sock, id);
    await step(a.sock, m, "pay", { kind: "effect", phase: "intent" });
    await step(a.sock, m, "mail", { kind: "effect", phase: "intent" });
    expect(await write(a.sock, { type: "fail", id, token: m.token, reason: "crashed" })).toMatchObject({ op: "fail", status: "parked" });
    expect(await message(agent, id)).toMatchObject({ status: "parked", waiting_on: "pay" });
    const first = await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "paid", outcome: "done" });
    expect(first).toMatchObject({ status: 200, body: { status: "parked", waiting_on: "mail" } });
    expect((await call("POST", `/agents/${agent}/messages/${id}/resume`, {})).body).toMatchObject({ error: "outcome_unknown" });
    const second = await call("POST", `/agents/${agent}/messages/${id}/resume`, { outcome: "redo" });
    expect(second).toMatchObject({ status: 200, body: { waiting_on: null } });
    expect(second.body.status).not.toBe("parked");
    const again = await run(a.sock, id);
    expect(again.steps).toEqual([expect.objectContaining({ name: "pay", status: "done", value: "paid" })]);
  });

  it("a reply while an effect's outcome is unknown is refused and changes nothing; failing the attempt parks it for a person", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "refund");
    const m = await run(a.sock, id);
    await step(a.sock, m, "refund", { kind: "effect", phase: "intent" });
    expect(await write(a.sock, { type: "reply", id, token: m.token, key: `${id}:reply`, text: "refunded" })).toMatchObject({ type: "error", code: "outcome_unknown" });
    expect(await write(a.sock, { type: "ack", id, token: m.token })).toMatchObject({ type: "error", code: "outcome_unknown" });
    expect(await message(agent, id)).toMatchObject({ status: "running", reply: null });
    expect(await write(a.sock, { type: "fail", id, token: m.token, reason: "outcome unknown" })).toMatchObject({ status: "parked" });
    expect(await message(agent, id)).toMatchObject({ status: "parked", waiting_on: "refund" });
  });

  it("an outcome answered done is recorded inside the journal's byte budget: over it is 413 and the message stays parked", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "refund");
    // Filled before anything reads the journal (the store keeps what it read): 49 × 41 KiB + 30 KiB, about 9 KiB of the 2 MiB budget left.
    await runInDurableObject(stubFor(agent), (_i, state) => {
      for (let i = 0; i < 50; i++) {
        state.storage.sql.exec(`INSERT INTO message_steps (message_id, name, kind, status, value, attempt, token, at) VALUES (?, ?, 'step', 'done', ?, 1, 1, ?)`,
          id, `fill${i}`, JSON.stringify("y".repeat((i < 49 ? 41 : 30) * 1024 - 2)), i);
      }
    });
    const a = await claimant(agent, "a");
    const m = await run(a.sock, id);
    await step(a.sock, m, "refund", { kind: "effect", phase: "intent" });
    await write(a.sock, { type: "fail", id, token: m.token, reason: "crashed" });
    const over = await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "x".repeat(16 * 1024 - 16), outcome: "done" });
    expect(over).toMatchObject({ status: 413, body: { error: "too_large" } });
    expect(await message(agent, id)).toMatchObject({ status: "parked", waiting_on: "refund" });
    expect((await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "ok", outcome: "done" })).status).toBe(200);
  });

  it("a step name with ':' works over HTTP, percent-encoded as clients send it", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const put = await call("PUT", `/agents/${agent}/messages/${id}/steps/${encodeURIComponent("llm:draft")}`, { token: m.token, run_key: m.run_key, kind: "step", phase: "done", value: 1 });
    expect(put).toMatchObject({ status: 200, body: { name: "llm:draft", status: "done" } });
    expect(await call("GET", `/agents/${agent}/messages/${id}/steps/llm%3Adraft`)).toMatchObject({ status: 200, body: { value: 1 } });
  });

  it("JSON nested deeper than 64 levels is refused in a frame and in a body, and changes nothing", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const deep = JSON.parse(`${"[".repeat(100)}${"]".repeat(100)}`) as unknown;
    expect(await step(a.sock, m, "deep", { value: deep })).toMatchObject({ type: "error", code: "bad_json" });
    expect(await write(a.sock, { type: "checkpoint", id, token: m.token, value: deep })).toMatchObject({ type: "error", code: "bad_json" });
    const http = await call("PUT", `/agents/${agent}/messages/${id}/steps/deep`, { token: m.token, run_key: m.run_key, kind: "step", phase: "done", value: deep });
    expect(http).toMatchObject({ status: 400, body: { error: "bad_json" } });
    const shallow = JSON.parse(`${"[".repeat(60)}"[[[ in a string"${"]".repeat(60)}`) as unknown;
    expect(await step(a.sock, m, "shallow", { value: shallow })).toMatchObject({ type: "result", status: "done" });
    expect(((await message(agent, id)).steps as { name: string }[]).map((s) => s.name)).toEqual(["shallow"]);
    expect((await call("GET", `/agents/${agent}/messages?after=0`)).status).toBe(200);
  });

  it("a stale attempt replaying a step its successor recorded is refused as its write would be, by frame, PUT and GET; an inspection read still works", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const first = await run(a.sock, id);
    a.sock.close();
    const b = await claimant(agent, "b");
    const second = await run(b.sock, id);
    expect(await step(b.sock, second, "draft", { value: "wrote-by-b" })).toMatchObject({ op: "step", duplicate: false });
    const stale = await claimant(agent, "a-again");
    expect(await step(stale.sock, first, "draft", { value: "wrote-by-a" })).toMatchObject({ type: "error", code: "stale_token" });
    const put = await call("PUT", `/agents/${agent}/messages/${id}/steps/draft`, { token: first.token, run_key: first.run_key, kind: "step", phase: "done", value: "wrote-by-a" });
    expect(put).toMatchObject({ status: 409, body: { error: "stale_token" } });
    const read = (token: number, runKey: string) => SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/steps/draft`, {
      headers: { authorization: `Bearer ${DEV_TOKEN}`, "x-baton-token": String(token), "x-baton-run-key": runKey },
    });
    const replay = await read(first.token!, first.run_key!);
    expect(replay.status).toBe(409);
    expect(await replay.json()).toMatchObject({ error: "stale_token" });
    expect(await (await read(second.token!, second.run_key!)).json()).toMatchObject({ value: "wrote-by-b" });
    expect(await call("GET", `/agents/${agent}/messages/${id}/steps/draft`)).toMatchObject({ status: 200, body: { value: "wrote-by-b" } });
    const half = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/steps/draft`, { headers: { authorization: `Bearer ${DEV_TOKEN}`, "x-baton-token": "3" } });
    expect(half.status).toBe(400);
  });
});
