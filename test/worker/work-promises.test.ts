// The promises about work, held against an adversary with a token of the same account: a
// deadline is decided by the coordinator's clock at the moment of the write (also when its alarm
// is late), a message token is honoured only from the connection it was handed to, a failed run
// is a failed attempt and never a reply, the fence-only ack is gone, release + claim restarts the
// preference hysteresis, and parked work costs an event nothing.
import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { MessageStore } from "../../worker/objects/message-store.ts";
import { auth, BASE, call, claimant, connect, message, post, presence, settle, stubFor, uniqueAgent, write, type TestSocket } from "./helpers.ts";
import { advanceClock, freezeClock, passTime, passUntil } from "./clock.ts";

const run = (sock: TestSocket, id: number): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id);
const reply = (sock: TestSocket, m: MessageFrame, text: string) => write(sock, { type: "reply", id: m.id, token: m.token, key: `${m.id}:reply`, text });

/**
 * Lets the agent's clock pass `at` (a deadline it reported) by 100 ms with its alarm late, as on a
 * busy object: the alarm is pushed a minute out (the runtime's own, as serve-lease.test.ts holds it
 * back), the clock moves with heartbeats to just before `at`, then past it in one move that runs no
 * alarm and leaves every connection well inside its TTL.
 */
async function passDeadlineWithAlarmLate(agent: string, at: number): Promise<void> {
  await runInDurableObject(stubFor(agent), async (_instance, state) => {
    await state.storage.setAlarm(Date.now() + 60_000);
  });
  const { now } = await advanceClock(0, { agent });
  await passTime(agent, Math.max(0, at - now - 200));
  const moved = await advanceClock(300, { agent });
  expect(moved.alarmsRun).toBe(0);
  expect(moved.now).toBeGreaterThan(at);
}

describe("deadlines are decided at the write", () => {
  it("a reply after the run deadline is refused even though the alarm has not run, and the message goes back", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/policy`, { run_timeout_seconds: 1 })).status).toBe(200);
    await freezeClock(agent);
    const a = await claimant(agent, "a");
    const id = await post(agent, "slow");
    const m = await run(a.sock, id);
    await passDeadlineWithAlarmLate(agent, (await message(agent, id)).expires_at as number);
    expect(await reply(a.sock, m, "late")).toMatchObject({ type: "error", code: "message_not_running" });
    const after = await message(agent, id);
    expect(after.reply).toBeNull();
    expect(after.status).not.toBe("acknowledged");
    expect(after.error).toMatch(/run timeout/);
  });

  it("a resume after the park deadline is a 409 and the message fails, even though the alarm has not run", async () => {
    const agent = uniqueAgent();
    await freezeClock(agent);
    const a = await claimant(agent, "a");
    const id = await post(agent, "ask");
    const m = await run(a.sock, id);
    const parked = await write(a.sock, { type: "park", id, token: m.token, deadline_seconds: 1 });
    expect(parked).toMatchObject({ type: "result", op: "park" });
    await passDeadlineWithAlarmLate(agent, parked.deadline as number);
    const resumed = await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "yes" });
    expect(resumed).toMatchObject({ status: 409, body: { error: "not_parked" } });
    expect(await message(agent, id)).toMatchObject({ status: "failed" });
  });
});

describe("a message token is bound to its runner", () => {
  it("a standby, a never-claimed socket and another runner cannot complete someone else's message; the runner can", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const watcher = await connect(agent, { machine: "w" });
    const id = await post(agent, "mine");
    const m = await run(a.sock, id);
    // The token is no secret: GET /messages/{id} shows it.
    expect((await message(agent, id)).token).toBe(m.token);
    for (const thief of [b.sock, watcher]) {
      expect(await reply(thief, m, "stolen")).toMatchObject({ type: "error", code: "not_your_message" });
      expect(await write(thief, { type: "ack", id, token: m.token })).toMatchObject({ type: "error", code: "not_your_message" });
      expect(await write(thief, { type: "fail", id, token: m.token, reason: "x" })).toMatchObject({ type: "error", code: "not_your_message" });
    }
    expect(await reply(a.sock, m, "done by a")).toMatchObject({ type: "result", duplicate: false });
    expect(await message(agent, id)).toMatchObject({ status: "acknowledged", reply: "done by a" });
    // After the fact, another connection's repeat is no duplicate success either.
    expect(await reply(b.sock, m, "again")).toMatchObject({ type: "error" });
    expect(await reply(a.sock, m, "again")).toMatchObject({ type: "result", duplicate: true });
  });

  it("the fence-only ack (the older form) is refused and leaves a queued message queued, also while paused", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    expect((await call("POST", `/agents/${agent}/pause`, {})).status).toBe(200);
    const id = await post(agent, "queued while paused");
    expect(await write(a.sock, { type: "ack", id, fence: a.lease.fence })).toMatchObject({ type: "error", code: "bad_frame" });
    expect(await write(a.sock, { type: "reply", id, fence: a.lease.fence, key: "k", text: "x" })).toMatchObject({ type: "error", code: "bad_frame" });
    expect(await message(agent, id)).toMatchObject({ status: "queued", reply: null });
  });
});

describe("a failed run is a failed attempt", () => {
  it("fail queues the message again after a backoff with attempt + 1, and fails it with the reason after max_attempts", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/policy`, { max_attempts: 2 })).status).toBe(200);
    const t0 = await freezeClock(agent);
    const a = await claimant(agent, "a");
    const id = await post(agent, "breaks");
    const first = await run(a.sock, id);
    expect(await write(a.sock, { type: "fail", id, token: first.token, reason: "the command exited with code 3; stderr: boom" }))
      .toMatchObject({ type: "result", op: "fail", status: "queued" });
    const waiting = await message(agent, id);
    expect(waiting).toMatchObject({ status: "queued", reply: null, failures: 1, error: "the command exited with code 3; stderr: boom" });
    expect(waiting.retry_at as number).toBeGreaterThan(t0);
    // Not handed out again before its backoff (1 s) ends; then with attempt 2 and a new token.
    await passTime(agent, 800);
    await settle(a.sock);
    expect(a.sock.framesOf("message").filter((f) => f.run && f.id === id)).toEqual([]);
    await passTime(agent, 300);
    const second = await a.sock.next("message", (f) => f.run && f.id === id);
    expect(second).toMatchObject({ attempt: 2 });
    expect(second.token).toBeGreaterThan(first.token!);
    expect(await write(a.sock, { type: "fail", id, token: second.token, reason: "killed by SIGKILL" })).toMatchObject({ status: "failed" });
    expect(await message(agent, id)).toMatchObject({ status: "failed", attempts: 2, error: "killed by SIGKILL", reply: null });
    const p = await presence(agent);
    expect(p.work.failed).toContainEqual({ id, attempts: 2, error: "killed by SIGKILL" });
  });
});

describe("preference cannot be flapped", () => {
  it("a preferred runner that releases and claims again waits a whole hysteresis each time: at most one move per period", async () => {
    const agent = uniqueAgent();
    await claimant(agent, "low");
    const high = await connect(agent, { machine: "high" });
    high.send({ type: "serve_lease", op: "claim", priority: 10 });
    await high.next("serve_lease");
    await passTime(agent, 2100);
    await high.next("serve_lease", (f) => f.held);
    const { now: started } = await advanceClock(0, { agent });
    // Flap: release and claim again every 100 ms of the object's time, for one hysteresis period.
    for (let i = 0; i < 19; i++) {
      high.send({ type: "serve_lease", op: "release" });
      high.send({ type: "serve_lease", op: "claim", priority: 10 });
      await settle(high);
      await passTime(agent, 100);
    }
    const moves = (await presence(agent)).transitions.filter((t) => t.reason === "preferred" && t.at >= started);
    expect(moves.length).toBeLessThanOrEqual(1);
  });
});

describe("parked work costs an event nothing", () => {
  it("a dispatch reads no parked message that is not due", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const text = "x".repeat(30 * 1024);
    for (let i = 0; i < 5; i++) {
      const id = await post(agent, text);
      const m = await run(a.sock, id);
      await write(a.sock, { type: "park", id, token: m.token, value: { big: "y".repeat(15 * 1024) } });
    }
    await runInDurableObject(stubFor(agent), (_i, state) => {
      const open = new MessageStore(state.storage.sql).openLeases(Date.now());
      expect(open.filter((m) => m.status === "parked")).toEqual([]);
    });
  });
});

describe("a re-claim", () => {
  it("that changes concurrency is saved: the runner is handed as many messages as it now says it takes", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/policy`, { mode: "pool" })).status).toBe(200);
    const a = await claimant(agent, "a");
    a.sock.send({ type: "serve_lease", op: "claim", concurrency: 2 });
    await settle(a.sock);
    const first = await post(agent, "one");
    const second = await post(agent, "two");
    await run(a.sock, first);
    await run(a.sock, second);
    expect((await presence(agent)).work.running.map((m) => m.id).sort()).toEqual([first, second]);
  });
});

describe("the alarm stays quiet", () => {
  it("a failed message whose backoff ended while every slot is busy does not make the alarm fire again and again", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const first = await post(agent, "fails");
    const second = await post(agent, "runs long");
    const m = await run(a.sock, first);
    expect(await write(a.sock, { type: "fail", id: first, token: m.token, reason: "x" })).toMatchObject({ status: "queued" });
    await run(a.sock, second);
    // The backoff (1 s) ends while `second` holds the only slot; an alarm left due would run at
    // every step below (up to 20 times each), as the runtime would run it again and again.
    await passTime(agent, 1300);
    const before = (await presence(agent)).wakes;
    await passTime(agent, 1000);
    const after = (await presence(agent)).wakes;
    expect(after - before).toBeLessThan(20);
  });

  it("a park deadline that passes on the alarm reaches the directory: the listing shows the failure", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "ask");
    const m = await run(a.sock, id);
    const parked = await write(a.sock, { type: "park", id, token: m.token, deadline_seconds: 1 });
    a.sock.close();
    await a.sock.waitForClose();
    await passUntil(agent, parked.deadline as number);
    await expect.poll(async () => {
      const res = await SELF.fetch(`${BASE}/agents`, { headers: auth });
      return ((await res.json()) as { agents: { agent: string; work: { counts: { parked: number } } }[] }).agents.find((e) => e.agent === agent)?.work.counts.parked;
    }, { timeout: 3000 }).not.toBe(1);
  });
});
