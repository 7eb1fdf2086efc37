// A receiver that never answers must not hold up the lease engine: with a delivery hanging, a
// silent holder is still replaced one TTL after its last frame, and a run timeout still takes its
// message back on time (the alarm starts deliveries and returns; agent-object.ts). And the
// agent.no_holder deadline is planned the moment an outage begins.
import { describe, expect, it } from "vitest";
import { runInDurableObject } from "cloudflare:test";
import { call, claimant, post, stubFor, uniqueAgent, write } from "./helpers.ts";

/** The test runner's outbound service never answers this URL (vitest.workers.config.ts). */
const HANG_URL = "http://receiver.test/hang";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/** The one-second TTL of the test config, and what the engine may take beyond a deadline here. */
const TTL_MS = 1000;
const SLACK_MS = 1500;

async function hangingWebhook(agent: string): Promise<void> {
  expect((await call("PUT", `/agents/${agent}/webhook`, { url: HANG_URL, secret: SECRET })).status).toBe(200);
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
    const lastFrame = Date.now();
    await b.sock.next("serve_lease", (f) => f.held, TTL_MS + SLACK_MS + 2000);
    expect(Date.now() - lastFrame).toBeLessThan(TTL_MS + SLACK_MS);
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
    const handedOut = Date.now();
    expect(await a.sock.next("revoked", (f) => f.id === id, 1000 + SLACK_MS + 2000)).toMatchObject({ reason: "run_timeout" });
    expect(Date.now() - handedOut).toBeLessThan(1000 + SLACK_MS);
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
    const parked = Date.now();
    await expect.poll(async () => (await call("GET", `/agents/${agent}/messages/${id}`)).body.status, { timeout: 1000 + SLACK_MS + 2000, interval: 100 }).toBe("failed");
    expect(Date.now() - parked).toBeLessThan(1000 + SLACK_MS);
  });
});

describe("webhook deadlines", () => {
  it("agent.no_holder is queued on time after the only holder leaves, with nothing else to wake the object", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/webhook`, { url: HANG_URL, secret: SECRET, no_holder_after_seconds: 1 })).status).toBe(200);
    const a = await claimant(agent, "a");
    a.sock.close();
    await a.sock.waitForClose();
    const left = Date.now();
    const queued = async () => runInDurableObject(stubFor(agent), (_i, state) =>
      state.storage.sql.exec<{ type: string }>(`SELECT type FROM webhook_outbox`).toArray().map((r) => r.type));
    await expect.poll(queued, { timeout: 4000, interval: 100 }).toContain("agent.no_holder");
    expect(Date.now() - left).toBeLessThan(1000 + SLACK_MS);
  });
});
