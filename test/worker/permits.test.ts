// Approvals as one-use permits, in a real agent object: an effect's intent that needs approval is
// recorded only when it spends an unspent permit a person granted for this message, this effect
// and the digest of these very arguments; otherwise the coordinator stores the question (the
// effect, its arguments as canonical JSON and their SHA-256) and refuses approval_required. No
// effect begins on a permit for other arguments, a spent permit, another message's permit, or a
// permit presented by a stale token; and no serve token can write the person's answer.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { argsDigest, canonicalJson } from "../../worker/wire/approvals.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { auth, BASE, call, claimant, message, post, write, type TestSocket } from "./helpers.ts";
import { frozenAgent, passTime } from "./clock.ts";
import { retryBackoffMs } from "../../worker/rules/message-lease.ts";

const RUNNER = "dev-runner-token"; // serve scope only

const run = (sock: TestSocket, id: number): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id);

const charge = (amount: number) => ({ question: `Charge $${amount} to card 4242?`, args: { card: "4242", amount } });

function intent(sock: TestSocket, m: MessageFrame, approve: { question: string; args: unknown; choices?: string[] }, name = "charge", extra: Record<string, unknown> = {}) {
  return write(sock, { type: "step", id: m.id, token: m.token, name, kind: "effect", phase: "intent", approve, ...extra });
}

async function answer(agent: string, id: number, choice: string, token?: string) {
  const headers = token === undefined ? { ...auth, "x-baton-via": "page" } : { Authorization: `Bearer ${token}`, "content-type": "application/json" };
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/answer`, { method: "POST", headers, body: JSON.stringify({ choice }) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Runs message `id` on `sock` until its effect's approval is asked and the attempt parks on it; resolves with that attempt. */
async function askedAndParked(sock: TestSocket, id: number, approve = charge(500)) {
  const m = await run(sock, id);
  expect(await intent(sock, m, approve)).toMatchObject({ type: "error", code: "approval_required" });
  expect(await write(sock, { type: "park", id, token: m.token })).toMatchObject({ op: "park" });
  return m;
}

/** A message whose charge of `amount` a person approved: resolves with the attempt handed out after the approval. */
async function approved(agent: string, sock: TestSocket, amount = 500) {
  const id = await post(agent, "pay the invoice");
  await askedAndParked(sock, id, charge(amount));
  expect(await answer(agent, id, "approve")).toMatchObject({ status: 200 });
  return { id, next: await run(sock, id) };
}

describe("approval permits", () => {
  it("the intent asks the question with the effect, its canonical arguments and their digest; approved, the next attempt spends the permit once and begins the effect", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "pay the invoice");
    const first = await askedAndParked(a.sock, id, { question: "Charge $500 to card 4242?", args: { card: "4242", amount: 500 } });
    const canonical = canonicalJson({ amount: 500, card: "4242" });
    const parked = await message(agent, id);
    expect(parked).toMatchObject({
      status: "parked", steps: [],
      question: { text: "Charge $500 to card 4242?", choices: [], approve: { effect: "charge", args: canonical, digest: argsDigest(canonical) } },
    });
    expect(canonical).toBe('{"amount":500,"card":"4242"}');
    expect(await answer(agent, id, "approve")).toMatchObject({ status: 200 });
    const next = await run(a.sock, id);
    expect(next.token!).toBeGreaterThan(first.token!);
    // The same arguments in another key order are the same canonical JSON, so the same digest.
    expect(await intent(a.sock, next, { question: "Charge $500 to card 4242?", args: { amount: 500, card: "4242" } })).toMatchObject({ op: "step", status: "intent", idempotency_key: expect.any(String) });
    const view = await message(agent, id);
    expect(view.permits).toEqual([expect.objectContaining({ effect: "charge", digest: argsDigest(canonical), asked_token: first.token, spent_token: next.token, by: expect.objectContaining({ account: "dev", via: "page" }) })]);
    expect(view.steps).toEqual([expect.objectContaining({ name: "charge", kind: "effect", status: "intent" })]);
  });

  it("$500 approved, the code then charges $5,000: refused, nothing begins, and the coordinator asks again with the new arguments; the $500 permit stays unspent", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const { id, next } = await approved(agent, a.sock, 500);
    const refused = await intent(a.sock, next, charge(5000));
    expect(refused).toMatchObject({ type: "error", code: "approval_required", message: expect.stringContaining("was approved for arguments sha256:") });
    expect(await write(a.sock, { type: "park", id, token: next.token })).toMatchObject({ op: "park" });
    const view = await message(agent, id);
    expect(view.steps).toEqual([]);
    expect(view.question).toMatchObject({ text: "Charge $5000 to card 4242?", approve: { args: '{"amount":5000,"card":"4242"}' } });
    expect(view.permits).toEqual([expect.objectContaining({ args: '{"amount":500,"card":"4242"}', spent_token: null })]);
  });

  it("a spent permit is refused: a later attempt's intent of the same effect and arguments asks again and begins nothing", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const { id, next } = await approved(agent, a.sock);
    expect(await intent(a.sock, next, charge(500), "charge", { on_unknown: "retry" })).toMatchObject({ op: "step", status: "intent" });
    expect(await write(a.sock, { type: "fail", id, token: next.token, reason: "crashed mid-charge" })).toMatchObject({ op: "fail" });
    // The agent's clock stands still (frozenAgent): the failed attempt's retry backoff passes only when moved on.
    await passTime(agent, retryBackoffMs(next.attempt) + 100);
    const third = await run(a.sock, id);
    expect(await intent(a.sock, third, charge(500), "charge", { on_unknown: "retry" })).toMatchObject({ type: "error", code: "approval_required", message: expect.stringContaining(`spent by attempt token ${next.token}`) });
    const view = await message(agent, id);
    expect(view.permits).toEqual([expect.objectContaining({ spent_token: next.token })]);
    expect(view.steps).toEqual([expect.objectContaining({ name: "charge", status: "intent", attempt: 2 })]);
  });

  it("another message's permit spends nothing: the same effect and arguments in a second message ask their own question", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const first = await approved(agent, a.sock);
    expect(await write(a.sock, { type: "ack", id: first.id, token: first.next.token })).toMatchObject({ op: "ack" });
    const other = await post(agent, "pay it again");
    const m = await run(a.sock, other);
    expect(await intent(a.sock, m, charge(500))).toMatchObject({ type: "error", code: "approval_required", message: expect.stringContaining("needs a person's approval") });
    expect((await message(agent, other)).permits).toBeUndefined();
  });

  it("a permit presented by a stale token is refused and nothing changes; the attempt that holds the message spends it exactly once", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const { id, next: lost } = await approved(agent, a.sock);
    a.sock.close();
    const current = await run(b.sock, id);
    const before = await message(agent, id);
    const stale = await claimant(agent, "a-again");
    expect(await intent(stale.sock, lost, charge(500))).toMatchObject({ type: "error", code: "stale_token" });
    const put = await call("PUT", `/agents/${agent}/messages/${id}/steps/charge`, { token: lost.token, run_key: lost.run_key, kind: "effect", phase: "intent", approve: charge(500) });
    expect(put).toMatchObject({ status: 409, body: { error: "stale_token" } });
    expect(await message(agent, id)).toEqual(before);
    expect(await intent(b.sock, current, charge(500))).toMatchObject({ op: "step", status: "intent" });
    expect(await intent(b.sock, current, charge(500))).toMatchObject({ type: "error", code: "effect_in_progress" });
    expect((await message(agent, id)).permits).toEqual([expect.objectContaining({ spent_token: current.token })]);
  });

  it("over HTTP with the run key: the same refusal asks the question, and an approved permit is spent by the PUT of the next attempt", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "pay the invoice");
    const m = await run(a.sock, id);
    const body = (hand: MessageFrame, amount: number) => ({ token: hand.token, run_key: hand.run_key, kind: "effect", phase: "intent", approve: charge(amount) });
    expect(await call("PUT", `/agents/${agent}/messages/${id}/steps/charge`, body(m, 500))).toMatchObject({ status: 409, body: { error: "approval_required" } });
    expect(await write(a.sock, { type: "park", id, token: m.token })).toMatchObject({ op: "park" });
    expect(await answer(agent, id, "approve")).toMatchObject({ status: 200 });
    const next = await run(a.sock, id);
    expect(await call("PUT", `/agents/${agent}/messages/${id}/steps/charge`, body(next, 5000))).toMatchObject({ status: 409, body: { error: "approval_required" } });
    expect(await call("PUT", `/agents/${agent}/messages/${id}/steps/charge`, body(next, 500))).toMatchObject({ status: 200, body: { status: "intent" } });
  });

  it("no serve token writes the person's answer: approve with a runner's token is 403 and grants no permit", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a", { token: RUNNER });
    const id = await post(agent, "pay the invoice");
    await askedAndParked(a.sock, id);
    const before = await message(agent, id);
    for (const path of ["answer", "approve"]) {
      const res = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/${path}`, {
        method: "POST", headers: { Authorization: `Bearer ${RUNNER}`, "content-type": "application/json" }, body: JSON.stringify(path === "answer" ? { choice: "approve" } : {}),
      });
      expect(res.status).toBe(403);
    }
    expect(await message(agent, id)).toEqual(before);
    expect(before.permits).toBeUndefined();
  });

  it("another choice than approve grants no permit: it is kept in the journal as the person's answer, and reject ends the message", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "pay the invoice");
    const m = await run(a.sock, id);
    expect(await intent(a.sock, m, { ...charge(500), choices: ["approve", "deny"] })).toMatchObject({ code: "approval_required" });
    await write(a.sock, { type: "park", id, token: m.token });
    expect(await answer(agent, id, "deny")).toMatchObject({ status: 200 });
    const next = await run(a.sock, id);
    expect(next.steps).toEqual([expect.objectContaining({ name: "ask:approve:charge", kind: "answer", value: expect.objectContaining({ choice: "deny" }) })]);
    expect(await intent(a.sock, next, { ...charge(500), choices: ["approve", "deny"] })).toMatchObject({ code: "approval_required" });
    expect((await message(agent, id)).permits).toBeUndefined();
  });

  it("bad approvals are refused and change nothing: on a step, on an outcome, choices without approve, arguments over their budget", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "pay the invoice");
    const m = await run(a.sock, id);
    const before = await message(agent, id);
    expect(await write(a.sock, { type: "step", id, token: m.token, name: "s", kind: "step", phase: "done", value: 1, approve: charge(1) })).toMatchObject({ code: "bad_frame" });
    expect(await write(a.sock, { type: "step", id, token: m.token, name: "charge", kind: "effect", phase: "done", value: 1, approve: charge(1) })).toMatchObject({ code: "bad_frame" });
    expect(await intent(a.sock, m, { ...charge(1), choices: ["deny"] })).toMatchObject({ code: "bad_frame" });
    expect(await intent(a.sock, m, { question: "big?", args: "x".repeat(9000) })).toMatchObject({ code: "too_large" });
    const put = await call("PUT", `/agents/${agent}/messages/${id}/steps/charge`, { token: m.token, run_key: m.run_key, kind: "effect", phase: "intent", approve: { question: "big?", args: "x".repeat(9000) } });
    expect(put).toMatchObject({ status: 413, body: { error: "too_large" } });
    expect(await message(agent, id)).toEqual(before);
  });
  it("an effect two people must approve: one approval (twice from the same token) grants nothing; the second person's grants the permit, which the attempt after a failover spends once", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "pay the invoice");
    const approve = { ...charge(500), needs: 2 };
    const first = await run(a.sock, id);
    expect(await intent(a.sock, first, approve)).toMatchObject({ type: "error", code: "approval_required" });
    expect(await write(a.sock, { type: "park", id, token: first.token })).toMatchObject({ op: "park" });
    expect((await message(agent, id)).question).toMatchObject({ approve: { effect: "charge" }, quorum: { needs: 2, approvals: 0 } });
    expect(await answer(agent, id, "approve", "dev-person-token")).toMatchObject({ status: 200, body: { status: "parked" } });
    expect(await answer(agent, id, "approve", "dev-person-token")).toMatchObject({ status: 200, body: { status: "parked", question: { quorum: { approvals: 1 } } } });
    expect((await message(agent, id)).permits ?? []).toEqual([]);
    expect(await answer(agent, id, "approve")).toMatchObject({ status: 200 });
    // The holder that asked leaves; another machine gets the message and spends the permit, once.
    a.sock.close();
    const b = await claimant(agent, "b");
    const next = await run(b.sock, id);
    expect(await intent(b.sock, next, approve)).toMatchObject({ op: "step", status: "intent" });
    expect((await message(agent, id)).permits).toEqual([expect.objectContaining({ effect: "charge", spent_token: next.token })]);
  });
});
