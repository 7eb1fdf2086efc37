// A receiver that never answers must not hold up the lease engine: with a delivery hanging, a
// silent holder is still replaced one TTL after its last frame, and a run timeout still takes its
// message back on time (the alarm starts deliveries and returns; agent-object.ts). And the
// agent.no_holder deadline is planned the moment an outage begins. The agent's clock stands still
// (connect stops it) and the tests pass it to just past each deadline: the alarm that falls due
// runs inside that move, so an alarm that waited on the hanging delivery would never let it end.
import { describe, expect, it } from "vitest";
import { runInDurableObject } from "cloudflare:test";
import { call, claimant, post, stubFor, uniqueAgent, write } from "./helpers.ts";
import { passTime } from "./clock.ts";

/** The test runner's outbound service never answers this URL (vitest.workers.config.ts). */
const HANG_URL = "http://receiver.test/hang";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/** The one-second TTL of the test config. */
const TTL_MS = 1000;

async function hangingWebhook(agent: string): Promise<void> {
  expect((await call("PUT", `/agents/${agent}/webhook`, { url: HANG_URL, secret: SECRET })).status).toBe(200);
}

/**
 * Deliveries that came back (delivered or failed). Zero after the deadline acted: the delivery it
 * hung on is still out, so the alarm acted without waiting for it (it times out after 10 s).
 */
async function deliveriesAnswered(agent: string): Promise<number> {
  return runInDurableObject(stubFor(agent), (_i, state) =>
    state.storage.sql.exec<{ n: number }>(`SELECT COALESCE(SUM(delivered + failed_attempts), 0) AS n FROM webhook_stats`).one().n);
}

describe("a hanging webhook receiver", () => {
  it("does not delay the takeover of a silent holder: the standby holds one TTL after the holder's last frame", async () => {
    const agent = uniqueAgent();
    await hangingWebhook(agent);
    const a = await claimant(agent, "silent", { silent: true });
    const b = await claimant(agent, "standby");
    const id = await post(agent, "approve?");
    const m = await a.sock.next("message", (f) => f.run && f.id === id);
    // The park queues message.parked; the alarm starts its delivery, which never gets an answer.
    expect(await write(a.sock, { type: "park", id, token: m.token })).toMatchObject({ op: "park" });
    await passTime(agent, TTL_MS - 1);
    expect(b.sock.framesOf("serve_lease")).toEqual([]);
    await passTime(agent, 2);
    expect(await b.sock.next("serve_lease", (f) => f.held)).toMatchObject({ held: true });
    expect(await deliveriesAnswered(agent)).toBe(0);
  });

  it("does not delay a run timeout: a message whose run outlives its timeout is taken back on time", async () => {
    const agent = uniqueAgent();
    await hangingWebhook(agent);
    const a = await claimant(agent, "a");
    const first = await post(agent, "park me");
    const parked = await a.sock.next("message", (f) => f.run && f.id === first);
    expect(await write(a.sock, { type: "park", id: first, token: parked.token })).toMatchObject({ op: "park" });
    const id = await post(agent, "slow", { run_timeout_seconds: 1 });
    await a.sock.next("message", (f) => f.run && f.id === id);
    await passTime(agent, 999);
    expect(a.sock.framesOf("revoked")).toEqual([]);
    await passTime(agent, 2);
    expect(await a.sock.next("revoked", (f) => f.id === id)).toMatchObject({ reason: "run_timeout" });
    expect(await deliveriesAnswered(agent)).toBe(0);
  });
});

describe("a hanging webhook receiver and park deadlines", () => {
  it("does not delay a park deadline: a question whose deadline passes fails its message on time", async () => {
    const agent = uniqueAgent();
    await hangingWebhook(agent);
    const a = await claimant(agent, "a");
    const id = await post(agent, "approve?");
    const m = await a.sock.next("message", (f) => f.run && f.id === id);
    // The park queues message.parked, whose delivery never gets an answer; its deadline is a second away.
    expect(await write(a.sock, { type: "park", id, token: m.token, deadline_seconds: 1 })).toMatchObject({ op: "park" });
    const status = async () => (await call("GET", `/agents/${agent}/messages/${id}`)).body.status;
    await passTime(agent, 999);
    expect(await status()).toBe("parked");
    await passTime(agent, 2);
    expect(await status()).toBe("failed");
    expect(await deliveriesAnswered(agent)).toBe(0);
  });
});

describe("webhook deadlines", () => {
  it("agent.no_holder is queued on time after the only holder leaves, with nothing else to wake the object", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/webhook`, { url: HANG_URL, secret: SECRET, no_holder_after_seconds: 1 })).status).toBe(200);
    const a = await claimant(agent, "a");
    a.sock.close();
    await a.sock.waitForClose();
    const queued = async () => runInDurableObject(stubFor(agent), (_i, state) =>
      state.storage.sql.exec<{ type: string }>(`SELECT type FROM webhook_outbox`).toArray().map((r) => r.type));
    await passTime(agent, 999);
    expect(await queued()).not.toContain("agent.no_holder");
    await passTime(agent, 2);
    expect(await queued()).toContain("agent.no_holder");
  });
});
