// A person in the loop, in a real agent object: a park carries a question (text, choices, what its
// deadline does); an answer (approve, reject, or a choice) is kept with who gave it and from where;
// approve or a choice queues the message with the answer as its resume input, choice and journal
// step; reject ends it as `rejected`; answering twice or after the deadline is 409; a deadline
// answers by itself (approve, reject), fails the message, or waits again (escalate).
import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { AgentCoordinator } from "../../worker/objects/agent-object.ts";
import { StepStore } from "../../worker/objects/step-store.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { auth, BASE, call, claimant, message, post, presence, settle, stubFor, write, type TestSocket } from "./helpers.ts";
import { frozenAgent, passTime, passUntil } from "./clock.ts";

const run = (sock: TestSocket, id: number, timeoutMs?: number): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id, timeoutMs);

async function answerFrom(via: string, path: string, body: unknown) {
  const res = await SELF.fetch(`${BASE}${path}`, { method: "POST", headers: { ...auth, "x-baton-via": via }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("questions", () => {
  it("a park asks a question with choices; the chosen answer reaches the next attempt as input, choice and journal step, and is kept with who gave it", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "deploy v2?");
    const m = await run(a.sock, id);
    const question = { text: "Ship v2 to production?", choices: ["ship", "hold"], step: "ask:1" };
    expect(await write(a.sock, { type: "park", id, token: m.token, question, deadline_seconds: 600 })).toMatchObject({ op: "park" });
    const parked = await message(agent, id);
    expect(parked).toMatchObject({ status: "parked", question: { text: question.text, choices: ["ship", "hold"], on_deadline: "fail" } });
    expect((await presence(agent)).work.parked).toEqual([expect.objectContaining({ id, question: question.text, choices: ["ship", "hold"] })]);
    expect((await answerFrom("cli", `/agents/${agent}/messages/${id}/answer`, { choice: "approve" })).status).toBe(400);
    const answered = await answerFrom("page", `/agents/${agent}/messages/${id}/answer`, { choice: "ship", text: "go, carefully" });
    expect(answered).toMatchObject({ status: 200, body: { question: null, resume_choice: "ship", resume_input: "go, carefully" } });
    expect((answered.body.answers as unknown[])).toEqual([
      expect.objectContaining({ choice: "ship", text: "go, carefully", question: question.text, account: "dev", via: "page" }),
    ]);
    const again = await run(a.sock, id);
    expect(again).toMatchObject({ attempt: 2, resume_input: "go, carefully", resume_choice: "ship" });
    expect(again.steps).toEqual([expect.objectContaining({ name: "ask:1", status: "done", value: expect.objectContaining({ choice: "ship", text: "go, carefully" }) })]);
    expect(await answerFrom("cli", `/agents/${agent}/messages/${id}/approve`, {})).toMatchObject({ status: 409, body: { error: "not_parked" } });
  });

  it("reject ends the message as rejected: it is never handed out again and cannot be answered twice", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "delete the old bucket");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "park", id, token: m.token, question: { text: "Delete it?" } });
    const rejected = await answerFrom("cli", `/agents/${agent}/messages/${id}/reject`, { text: "not this week" });
    expect(rejected).toMatchObject({ status: 200, body: { status: "rejected", answers: [expect.objectContaining({ choice: "reject", text: "not this week", via: "cli" })] } });
    await settle(a.sock);
    expect(a.sock.framesOf("message").filter((f) => f.id === id && f.run)).toEqual([]);
    expect((await presence(agent)).work.counts).toMatchObject({ rejected: 1, parked: 0, queued: 0 });
    expect(await answerFrom("cli", `/agents/${agent}/messages/${id}/reject`, {})).toMatchObject({ status: 409 });
  });

  it("a deadline with approve resumes the message by itself, recorded as answered by the deadline", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "renew the certificate");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "park", id, token: m.token, question: { text: "Renew?", on_deadline: "approve", step: "ask:1" }, deadline_seconds: 1 });
    await passTime(agent, 1000);
    const again = await run(a.sock, id);
    expect(again).toMatchObject({ attempt: 2, resume_choice: "approve" });
    expect(again.steps).toEqual([expect.objectContaining({ name: "ask:1", value: expect.objectContaining({ choice: "approve" }) })]);
    expect((await message(agent, id)).answers).toEqual([expect.objectContaining({ choice: "approve", via: "deadline", token: "deadline" })]);
  });

  it("a deadline with reject ends the message, with escalate it waits once more, with none it fails", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const ids = [await post(agent, "r"), await post(agent, "e"), await post(agent, "f")];
    const ends = ["reject", "escalate", undefined];
    for (const [i, id] of ids.entries()) {
      const m = await run(a.sock, id);
      const question = { text: `q${i}`, ...(ends[i] ? { on_deadline: ends[i] } : {}) };
      await write(a.sock, { type: "park", id, token: m.token, question, deadline_seconds: 1 });
    }
    const first = (await message(agent, ids[1]!)).expires_at as number;
    await passUntil(agent, (await message(agent, ids[2]!)).expires_at as number);
    expect(await message(agent, ids[0]!)).toMatchObject({ status: "rejected", answers: [expect.objectContaining({ choice: "reject", via: "deadline" })] });
    const escalated = await message(agent, ids[1]!);
    expect(escalated).toMatchObject({ status: "parked", question: { text: "q1", on_deadline: "escalate" } });
    expect(escalated.expires_at as number).toBeGreaterThan(first);
    expect(await message(agent, ids[2]!)).toMatchObject({ status: "failed", error: expect.stringMatching(/deadline passed/) });
  });

  it("a served command's question stored over HTTP (baton ask) is what its park asks; answering after the deadline is 409", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "pick a model");
    const m = await run(a.sock, id);
    const wrongKey = await call("POST", `/agents/${agent}/messages/${id}/ask`, { token: m.token, run_key: "0".repeat(32), question: { text: "Which?" } });
    expect(wrongKey.status).toBe(403);
    const asked = await call("POST", `/agents/${agent}/messages/${id}/ask`, { token: m.token, run_key: m.run_key, question: { text: "Which model?", choices: ["small", "large"] } });
    expect(asked).toMatchObject({ status: 200, body: { id, token: m.token } });
    await write(a.sock, { type: "park", id, token: m.token, deadline_seconds: 1 });
    expect(await message(agent, id)).toMatchObject({ question: { text: "Which model?", choices: ["small", "large"] } });
    await passTime(agent, 1000);
    expect((await answerFrom("cli", `/agents/${agent}/messages/${id}/answer`, { choice: "large" })).status).toBe(409);
  });

  it("a failed message is retried with a fresh set of tries as its next attempt number, and the retry is kept with who asked for it", async () => {
    const agent = await frozenAgent();
    await call("PUT", `/agents/${agent}/policy`, { max_attempts: 1 });
    const a = await claimant(agent, "a");
    const id = await post(agent, "flaky");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "fail", id, token: m.token, reason: "boom" });
    expect(await message(agent, id)).toMatchObject({ status: "failed" });
    const retried = await answerFrom("page", `/agents/${agent}/messages/${id}/retry`, {});
    expect(retried).toMatchObject({ status: 200, body: { answers: [expect.objectContaining({ choice: "retry", via: "page" })] } });
    expect(await run(a.sock, id)).toMatchObject({ attempt: 2 });
  });

  it("a run that asked (baton ask) cannot finish before the answer: its reply is question_open and a resume is refused too", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "ship?");
    const m = await run(a.sock, id);
    await call("POST", `/agents/${agent}/messages/${id}/ask`, { token: m.token, run_key: m.run_key, question: { text: "Ship v2?" } });
    expect(await write(a.sock, { type: "reply", id, token: m.token, key: `${id}:reply`, text: "SHIPPED" })).toMatchObject({ type: "error", code: "question_open" });
    expect(await message(agent, id)).toMatchObject({ status: "running", reply: null });
    await write(a.sock, { type: "park", id, token: m.token });
    const resumed = await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "yes please" });
    expect(resumed).toMatchObject({ status: 409, body: { error: "question_open" } });
    expect(await message(agent, id)).toMatchObject({ status: "parked", answers: [], question: { text: "Ship v2?" } });
  });

  it("a question's choices are distinct and never reject, and its text has no control characters; such a park is refused and changes nothing", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "pick");
    const m = await run(a.sock, id);
    for (const question of [{ text: "Pick", choices: ["a", "a"] }, { text: "Pick", choices: ["ok", "reject"] }, { text: "Pick\u001b]0;pwned\u0007" }]) {
      expect(await write(a.sock, { type: "park", id, token: m.token, question })).toMatchObject({ type: "error", code: "bad_frame" });
    }
    expect(await message(agent, id)).toMatchObject({ status: "running" });
    expect(await write(a.sock, { type: "park", id, token: m.token, question: { text: "Line one\n\tline two" } })).toMatchObject({ op: "park" });
  });

  it("a deadline that would approve a question whose journal is full fails the message, saying why, instead of asking for ever", async () => {
    const agent = await frozenAgent();
    const id = await post(agent, "renew");
    // Filled before anything reads the journal (the store keeps what it read).
    await runInDurableObject(stubFor(agent), (_i, state) => {
      for (let i = 0; i < 1000; i++) {
        state.storage.sql.exec(`INSERT INTO message_steps (message_id, name, kind, status, value, attempt, token, at) VALUES (?, ?, 'step', 'done', '1', 1, 1, ?)`, id, `s${i}`, i);
      }
    });
    const a = await claimant(agent, "a");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "park", id, token: m.token, question: { text: "Renew?", on_deadline: "approve", step: "ask:1" }, deadline_seconds: 1 });
    await passTime(agent, 1000);
    expect(await message(agent, id)).toMatchObject({ status: "failed", error: expect.stringMatching(/journal is full/) });
  });
});

const forged = { choice: "apply", text: null, by: { account: "dev", token: "ana", via: "page" }, at: 1 };

describe("answers only a person can give", () => {
  it("a run cannot write under ask: nor park on a name its own step holds; the person's answer reaches the next attempt as a record of kind answer", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "deploy");
    const m = await run(a.sock, id);
    const stepFrame = (token: number, name: string) => ({ type: "step", id, token, name, kind: "step", phase: "done", value: forged });
    expect(await write(a.sock, stepFrame(m.token!, "ask:1"))).toMatchObject({ type: "error", code: "bad_request", message: expect.stringContaining("kept for a person's answers") });
    expect(await write(a.sock, stepFrame(m.token!, "approval"))).toMatchObject({ op: "step", status: "done" });
    const question = { text: "Apply?", choices: ["apply", "hold"] };
    expect(await write(a.sock, { type: "park", id, token: m.token, question: { ...question, step: "approval" } }))
      .toMatchObject({ type: "error", code: "bad_request", message: expect.stringContaining("an ask needs a name of its own") });
    const overHttp = await call("POST", `/agents/${agent}/messages/${id}/ask`, { token: m.token, run_key: m.run_key, question: { ...question, step: "approval" } });
    expect(overHttp).toMatchObject({ status: 400, body: { error: "bad_request" } });
    expect(await message(agent, id)).toMatchObject({ status: "running", question: null });
    expect(await write(a.sock, { type: "park", id, token: m.token, question: { ...question, step: "ask:1" } })).toMatchObject({ op: "park" });
    expect((await answerFrom("page", `/agents/${agent}/messages/${id}/answer`, { choice: "hold" })).status).toBe(200);
    const again = await run(a.sock, id);
    expect(again.steps).toContainEqual(expect.objectContaining({ name: "ask:1", kind: "answer", value: expect.objectContaining({ choice: "hold", by: expect.objectContaining({ via: "page" }) }) }));
    expect(await write(a.sock, stepFrame(again.token!, "ask:1"))).toMatchObject({ type: "error", code: "bad_request" });
    expect((await call("GET", `/agents/${agent}/messages/${id}/steps/ask:1`)).body).toMatchObject({ kind: "answer", value: { choice: "hold" } });
  });

  it("a run's record under a question's name, then a failed attempt: the next attempt's question is refused, never answered by that record", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "deploy");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "step", id, token: m.token, name: "approval", kind: "step", phase: "done", value: forged });
    expect(await write(a.sock, { type: "fail", id, token: m.token, reason: "try again" })).toMatchObject({ op: "fail", status: "queued" });
    await passTime(agent, 1000);
    const again = await run(a.sock, id);
    expect(again.steps).toEqual([expect.objectContaining({ name: "approval", kind: "step" })]);
    expect(await write(a.sock, { type: "park", id, token: again.token, question: { text: "Apply?", step: "approval" } })).toMatchObject({ type: "error", code: "bad_request" });
    expect(await message(agent, id)).toMatchObject({ status: "running", question: null, answers: [] });
  });

  it("a question inside an effect is refused at once (frame and HTTP); once the effect's outcome is recorded, it is asked and answered", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "charge, then ask");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "step", id, token: m.token, name: "charge", kind: "effect", phase: "intent" });
    expect(await write(a.sock, { type: "park", id, token: m.token, question: { text: "Ship?", step: "ask:1" } }))
      .toMatchObject({ type: "error", code: "effect_in_progress", message: expect.stringContaining("inside an effect") });
    const overHttp = await call("POST", `/agents/${agent}/messages/${id}/ask`, { token: m.token, run_key: m.run_key, question: { text: "Ship?", step: "ask:1" } });
    expect(overHttp).toMatchObject({ status: 409, body: { error: "effect_in_progress" } });
    expect(await message(agent, id)).toMatchObject({ status: "running", question: null });
    await write(a.sock, { type: "step", id, token: m.token, name: "charge", kind: "effect", phase: "done", value: "ch_1" });
    expect(await write(a.sock, { type: "park", id, token: m.token, question: { text: "Ship?", step: "ask:1" } })).toMatchObject({ op: "park" });
    expect((await answerFrom("cli", `/agents/${agent}/messages/${id}/approve`, {})).status).toBe(200);
    expect((await run(a.sock, id)).steps).toContainEqual(expect.objectContaining({ name: "ask:1", kind: "answer" }));
  });

  it("a deadline never settles a message waiting on an effect whose outcome is unknown: it waits for done or redo", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "charge");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "step", id, token: m.token, name: "charge", kind: "effect", phase: "intent" });
    expect(await write(a.sock, { type: "park", id, token: m.token, deadline_seconds: 1 })).toMatchObject({ op: "park" });
    expect(await message(agent, id)).toMatchObject({ status: "parked", waiting_on: "charge" });
    await passTime(agent, 1000);
    const after = await message(agent, id);
    expect(after).toMatchObject({ status: "parked", waiting_on: "charge", expires_at: null, answers: [] });
    expect((await answerFrom("cli", `/agents/${agent}/messages/${id}/approve`, {})).body).toMatchObject({ error: "outcome_unknown" });
    expect((await call("POST", `/agents/${agent}/messages/${id}/resume`, { outcome: "done", input: "ch_1" })).status).toBe(200);
    expect((await run(a.sock, id)).steps).toContainEqual(expect.objectContaining({ name: "charge", status: "done", value: "ch_1" }));
  });

  it("an answer after an escalating question's deadline, before the alarm asked again, is taken: the message was still waiting for it", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "renew");
    const m = await run(a.sock, id);
    await write(a.sock, { type: "park", id, token: m.token, question: { text: "Renew?", on_deadline: "escalate", step: "ask:1" }, deadline_seconds: 600 });
    const deadline = (await message(agent, id)).expires_at as number;
    // The answer arrives after the deadline, before the alarm escalated (a busy object, a late alarm): the object's clock says so.
    const answered = await runInDurableObject(stubFor(agent), (instance: AgentCoordinator) => {
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(deadline + 500);
      try {
        return instance.answer(id, { choice: "approve", text: null }, { account: "dev", token: "ana", via: "page" });
      } finally {
        vi.useRealTimers();
      }
    });
    expect(answered).toMatchObject({ ok: true, view: { question: null, resume_choice: "approve", answers: [expect.objectContaining({ choice: "approve", via: "page" })] } });
    expect((await call("GET", `/agents/${agent}/messages/${id}/steps/ask:1`)).body).toMatchObject({ kind: "answer", value: { choice: "approve" } });
  });

  it("an answer kept as a step before answers were their own kind becomes an answer once; a run's record with no answer behind it stays a step", async () => {
    const agent = await frozenAgent();
    const id = await post(agent, "asked before the upgrade");
    // As that release left it, before this object read the journal (the store keeps what it read).
    await runInDurableObject(stubFor(agent), (_i, state) => {
      const { sql } = state.storage;
      const value = (choice: string, at: number) => JSON.stringify({ choice, text: null, by: { account: "dev", token: "ana", via: "page" }, at });
      const insert = `INSERT INTO message_steps (message_id, name, kind, status, value, attempt, token, at) VALUES (?, ?, 'step', 'done', ?, 1, ?, ?)`;
      sql.exec(insert, id, "ask:1", value("ship", 1234), 1, 1);
      sql.exec(insert, id, "approval", value("apply", 99), 1, 2);
      sql.exec(`INSERT INTO message_answers (message_id, at, choice, text, question, account, token, via) VALUES (?, 1234, 'ship', NULL, 'Ship?', 'dev', 'ana', 'page')`, id);
      sql.exec(`DELETE FROM message_steps_meta`);
      sql.exec(`DELETE FROM schema_versions WHERE store = 'message_steps'`);
      // What the next wake of an object written by a release before schema versions does first.
      new StepStore(sql);
    });
    expect((await call("GET", `/agents/${agent}/messages/${id}/steps/ask:1`)).body).toMatchObject({ kind: "answer", value: { choice: "ship" } });
    expect((await call("GET", `/agents/${agent}/messages/${id}/steps/approval`)).body).toMatchObject({ kind: "step" });
  });
});
