// Webhooks in the real runtime: the configuration routes (agent and account, validation, the
// secret never shown, account walls), the events a parked or failed message puts in the agent's
// outbox and what presence shows of it. The outbox itself is webhook-outbox.test.ts; deliveries to a
// real receiver are in test/e2e/webhooks.test.ts.
import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { WebhookConfigStore } from "../../worker/objects/webhook-config.ts";
import { hmacBase64, signedHeaders } from "../../worker/objects/webhook-signature.ts";
import { WEBHOOK } from "../../worker/rules/webhooks.ts";
import { BASE, claimant, DEV_TOKEN, HOOKS_TOKEN, OTHER_TOKEN, post, presence, stubFor, uniqueAgent, write } from "./helpers.ts";
import { advanceClock, passTime } from "./clock.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/** The test runner's outbound service answers these (vitest.workers.config.ts); nothing leaves the machine. */
const OK_URL = "http://receiver.test/status/200";
const BUSY_URL = "http://receiver.test/status/503";

/** One HTTP call through the Worker as account `hooks` (or `token`'s): the status and the JSON body (null when empty). */
async function hooks(method: string, path: string, body?: unknown, token = HOOKS_TOKEN) {
  const res = await SELF.fetch(`${BASE}${path}`, {
    method, headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
}

/** A runner of account hooks that holds the agent; each message handed to it is parked (or failed) by the test. */
async function holder(agent: string) {
  const { sock } = await claimant(agent, "m1", { token: HOOKS_TOKEN });
  return {
    sock,
    async run(text: string) {
      const { id } = (await hooks("POST", `/agents/${agent}/messages`, { text })).body as { id: number };
      const frame = await sock.next("message", (f) => f.run && f.id === id);
      return { id, token: frame.token };
    },
  };
}

async function webhookOf(agent: string) {
  return (await presence(agent, HOOKS_TOKEN)).webhook!;
}

describe("webhook configuration", () => {
  it("an agent's webhook: PUT stores it, GET shows it without the secret, DELETE removes it; bad input is a 400 that changes nothing", async () => {
    const agent = uniqueAgent();
    expect((await hooks("GET", `/agents/${agent}/webhook`)).status).toBe(404);
    const put = await hooks("PUT", `/agents/${agent}/webhook`, { url: BUSY_URL, secret: SECRET, no_holder_after_seconds: 5 });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ scope: "agent", agent, url: BUSY_URL, no_holder_after_seconds: 5, link_origin: BASE, updated_at: expect.any(Number), old_secret_expires_at: null });
    const shown = await hooks("GET", `/agents/${agent}/webhook`);
    expect(shown.body).toEqual(put.body);
    expect(JSON.stringify(shown.body)).not.toContain(SECRET);
    for (const [body, says] of [
      [{ url: "ftp://example.com/x", secret: SECRET }, /url must be an http: or https: URL/],
      [{ url: `https://example.com/${"a".repeat(2048)}`, secret: SECRET }, /at most 2048 characters/],
      [{ url: "not a url", secret: SECRET }, /url must be an http: or https: URL/],
      [{ url: "https://example.com/x", secret: "short" }, /secret must be whsec_ and the base64 of 24-64 random bytes/],
      [{ url: "https://example.com/x", secret: "s3cret-s3cret-s3cret-s3cret" }, /secret must be whsec_/],
      [{ url: "https://example.com/x", secret: SECRET, rotate_secret: true }, /give secret or rotate_secret, not both/],
      [{ url: "https://example.com/x", secret: SECRET, no_holder_after_seconds: 0 }, /no_holder_after_seconds must be a whole number from 1 to 86400/],
      [{ url: "https://example.com/x", secret: SECRET, extra: 1 }, /unknown field: extra/],
      [{ secret: SECRET }, /url must be/],
      [{ url: "https://example.com/x", keep_old_secret_seconds: -1 }, /keep_old_secret_seconds must be a whole number from 0 to 604800/],
      [[1, 2], /the body must be a JSON object/],
    ] as const) {
      const res = await hooks("PUT", `/agents/${agent}/webhook`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe("bad_request");
      expect(res.body.message).toMatch(says);
    }
    expect((await hooks("GET", `/agents/${agent}/webhook`)).body).toEqual(put.body);
    expect((await hooks("DELETE", `/agents/${agent}/webhook`)).status).toBe(204);
    expect((await hooks("GET", `/agents/${agent}/webhook`)).status).toBe(404);
    expect((await hooks("DELETE", `/agents/${agent}/webhook`)).status).toBe(404);
  });

  it("the account's webhook: PUT, GET without the secret, DELETE; bad input is a 400; another account sees none", async () => {
    const put = await hooks("PUT", "/webhook", { url: BUSY_URL, secret: SECRET });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ scope: "account", agent: null, url: BUSY_URL, no_holder_after_seconds: 60, link_origin: BASE });
    const shown = await hooks("GET", "/webhook");
    expect(shown.body).toEqual(put.body);
    expect(JSON.stringify(shown.body)).not.toContain(SECRET);
    expect((await hooks("GET", "/webhook", undefined, OTHER_TOKEN)).status).toBe(404);
    expect((await hooks("PUT", "/webhook", { url: BUSY_URL, secret: "short" })).status).toBe(400);
    expect((await hooks("GET", "/webhook")).body).toEqual(put.body);
    expect((await hooks("DELETE", "/webhook")).status).toBe(204);
    expect((await hooks("GET", "/webhook")).status).toBe(404);
  });
});

describe("secrets", () => {
  it("a webhook set without a secret gets one baton made, shown once in the PUT's answer; a PUT without one keeps it; rotate_secret makes a new one and the old one still signs until its expiry", async () => {
    const agent = uniqueAgent();
    const put = await hooks("PUT", `/agents/${agent}/webhook`, { url: OK_URL });
    expect(put.status).toBe(200);
    const made = put.body.secret as string;
    expect(made).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(JSON.stringify((await hooks("GET", `/agents/${agent}/webhook`)).body)).not.toContain(made.slice(6));
    const kept = await hooks("PUT", `/agents/${agent}/webhook`, { url: OK_URL, no_holder_after_seconds: 9 });
    expect(kept.body).toMatchObject({ no_holder_after_seconds: 9, old_secret_expires_at: null });
    expect(kept.body.secret).toBeUndefined();
    const rotated = await hooks("PUT", `/agents/${agent}/webhook`, { url: OK_URL, rotate_secret: true, keep_old_secret_seconds: 60 });
    const fresh = rotated.body.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(made);
    expect(rotated.body.old_secret_expires_at).toBeGreaterThan(Date.now() + 50_000);
    expect((await hooks("GET", `/agents/${agent}/webhook`)).body.old_secret_expires_at).toBe(rotated.body.old_secret_expires_at);
    const secrets = await runInDurableObject(stubFor(agent, "hooks"), (_i, state) => new WebhookConfigStore(state.storage.sql).get());
    expect(secrets).toMatchObject({ secret: fresh, oldSecret: made });
    const given = await hooks("PUT", `/agents/${agent}/webhook`, { url: OK_URL, secret: SECRET, keep_old_secret_seconds: 0 });
    expect(given.body).toMatchObject({ old_secret_expires_at: null });
    expect(given.body.secret).toBeUndefined();
  });

  it("a webhook row stored before rotation existed (a plain secret, no rotation columns) is read after the upgrade and signs with the secret's UTF-8 bytes", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), async (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec(`DROP TABLE IF EXISTS webhook_config`);
      sql.exec(`DELETE FROM schema_versions WHERE store = 'webhook_config'`);
      sql.exec(`CREATE TABLE webhook_config (one INTEGER PRIMARY KEY CHECK (one = 1), url TEXT NOT NULL, secret TEXT NOT NULL,
        no_holder_after_ms INTEGER NOT NULL, origin TEXT NOT NULL, updated_at INTEGER NOT NULL)`);
      sql.exec(`INSERT INTO webhook_config VALUES (1, ?, 's3cret-s3cret-s3cret', 60000, ?, 5)`, OK_URL, BASE);
      const config = new WebhookConfigStore(sql).get();
      expect(config).toEqual({ url: OK_URL, secret: "s3cret-s3cret-s3cret", oldSecret: null, oldSecretExpiresAt: null, noHolderAfterMs: 60_000, origin: BASE, updatedAt: 5 });
      const headers = await signedHeaders("evt_x", "message.failed", "{}", [config!.secret], 1_000_000);
      // The same key as whsec_ and the base64 of the plain text.
      expect(headers["webhook-signature"]).toBe(`v1,${await hmacBase64(`whsec_${btoa("s3cret-s3cret-s3cret")}`, "evt_x.1000.{}")}`);
    });
  });

  it("POST …/webhook/test sends a signed webhook.test now and answers the receiver's status; none configured is a 404", async () => {
    const agent = uniqueAgent();
    expect((await hooks("POST", `/agents/${agent}/webhook/test`)).status).toBe(404);
    await hooks("PUT", `/agents/${agent}/webhook`, { url: BUSY_URL, secret: SECRET });
    const busy = await hooks("POST", `/agents/${agent}/webhook/test`);
    expect(busy).toMatchObject({ status: 200, body: { url: BUSY_URL, status: 503, delivered: false, error: "the receiver answered 503" } });
    expect(busy.body.id).toMatch(/^evt_[0-9a-f]{32}$/);
    expect((await hooks("PUT", `/agents/${agent}/webhook`, { url: OK_URL })).body).toMatchObject({ url: OK_URL });
    expect((await hooks("POST", `/agents/${agent}/webhook/test`)).body).toMatchObject({ status: 200, delivered: true, error: null });
    // Nothing was queued: a test is sent once, now.
    expect(await webhookOf(agent)).toMatchObject({ pending: 0, delivered: 0, failed_attempts: 0 });
    expect((await hooks("POST", "/webhook/test", undefined, OTHER_TOKEN)).status).toBe(404);
  });
});

describe("events into the outbox", () => {
  it("a question two people decide: message.parked carries its quorum, an answer that does not decide queues no event", async () => {
    const agent = uniqueAgent();
    expect((await hooks("PUT", `/agents/${agent}/webhook`, { url: BUSY_URL, secret: SECRET }, DEV_TOKEN)).status).toBe(200);
    const id = await post(agent, "q", { question: { text: "Pay $500?", needs: 2, approvers: ["person", "admin"] } });
    const facts = async () => runInDurableObject(stubFor(agent), (_i, state) =>
      state.storage.sql.exec<{ type: string; facts: string }>(`SELECT type, facts FROM webhook_outbox ORDER BY seq`).toArray());
    const answer = (token: string) => SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/approve`, {
      method: "POST", headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}",
    });
    expect((await answer("dev-person-token")).status).toBe(200);
    const queued = await facts();
    expect(queued.map((e) => e.type)).toEqual(["message.parked"]);
    expect(JSON.parse(queued[0]!.facts).message.question).toEqual({
      text: "Pay $500?", choices: [], on_deadline: "fail", quorum: { needs: 2, reject_needs: 1, approvers: ["person", "admin"] },
    });
  });

  it("a parked message queues one message.parked event; presence shows it pending with the receiver's host, then the refused attempt with its retry", async () => {
    const agent = uniqueAgent();
    expect((await hooks("PUT", `/agents/${agent}/webhook`, { url: BUSY_URL, secret: SECRET })).status).toBe(200);
    const h = await holder(agent);
    const m = await h.run("approve the deploy");
    expect(await write(h.sock, { type: "park", id: m.id, token: m.token })).toMatchObject({ op: "park" });
    const before = await webhookOf(agent);
    expect(before).toMatchObject({ configured: "agent", host: "receiver.test", delivered: 0, dropped: 0 });
    expect(JSON.stringify(before)).not.toContain(SECRET);
    const events = await runInDurableObject(stubFor(agent, "hooks"), (_i, state) =>
      state.storage.sql.exec<{ type: string; event_id: string }>(`SELECT type, event_id FROM webhook_outbox`).toArray());
    expect(events.map((e) => e.type)).toEqual(["message.parked"]);
    // The alarm sends it; the receiver answers 503, so it waits for its retry, a second later.
    await runDurableObjectAlarm(stubFor(agent, "hooks"));
    await expect.poll(async () => (await webhookOf(agent)).failed_attempts).toBeGreaterThanOrEqual(1);
    const after = await webhookOf(agent);
    expect(after).toMatchObject({ pending: 1, last_status: 503, last_error: "the receiver answered 503", delivered: 0 });
    expect(after.next_retry_at! - after.last_attempt_at!).toBeGreaterThanOrEqual(WEBHOOK.firstRetryMs - 50);
  });

  it("a parked question's event carries its text, choices and deadline action; a deadline with escalate queues message.escalated and waits again", async () => {
    const agent = uniqueAgent();
    expect((await hooks("PUT", `/agents/${agent}/webhook`, { url: BUSY_URL, secret: SECRET })).status).toBe(200);
    const h = await holder(agent);
    const m = await h.run("ship it?");
    const question = { text: "Ship v2?", choices: ["ship", "hold"], on_deadline: "escalate" };
    expect(await write(h.sock, { type: "park", id: m.id, token: m.token, question, deadline_seconds: 1 })).toMatchObject({ op: "park" });
    const facts = async () => runInDurableObject(stubFor(agent, "hooks"), (_i, state) =>
      state.storage.sql.exec<{ type: string; facts: string }>(`SELECT type, facts FROM webhook_outbox ORDER BY seq`).toArray());
    const [parked] = await facts();
    expect(parked!.type).toBe("message.parked");
    expect(JSON.parse(parked!.facts).message.question).toEqual({ text: "Ship v2?", choices: ["ship", "hold"], on_deadline: "escalate" });
    await passTime(agent, 999, HOOKS_TOKEN);
    expect((await facts()).map((e) => e.type)).not.toContain("message.escalated");
    await passTime(agent, 2, HOOKS_TOKEN);
    expect((await facts()).map((e) => e.type)).toContain("message.escalated");
    const escalated = JSON.parse((await facts()).find((e) => e.type === "message.escalated")!.facts);
    expect(escalated.message).toMatchObject({ id: m.id, question: { text: "Ship v2?" } });
    const { now } = await advanceClock(0, { agent, token: HOOKS_TOKEN });
    expect(escalated.message.park_deadline).toBeGreaterThan(now);
  });

  it("a message that fails for good queues message.failed with its reason; one parked while an effect's outcome is unknown queues message.outcome_unknown, not message.parked", async () => {
    const agent = uniqueAgent();
    expect((await hooks("PUT", `/agents/${agent}/webhook`, { url: BUSY_URL, secret: SECRET })).status).toBe(200);
    expect((await hooks("PUT", `/agents/${agent}/policy`, { max_attempts: 1 })).status).toBe(200);
    const h = await holder(agent);
    const failing = await h.run("break");
    expect(await write(h.sock, { type: "fail", id: failing.id, token: failing.token, reason: "exit 3" })).toMatchObject({ status: "failed" });
    const asking = await h.run("charge the card");
    const intent = { type: "step", id: asking.id, token: asking.token, name: "charge", kind: "effect", phase: "intent", on_unknown: "ask" };
    expect(await write(h.sock, intent)).toMatchObject({ op: "step" });
    expect(await write(h.sock, { type: "fail", id: asking.id, token: asking.token, reason: "crashed" })).toMatchObject({ status: "parked" });
    const events = await runInDurableObject(stubFor(agent, "hooks"), (_i, state) => state.storage.sql
      .exec<{ type: string; facts: string }>(`SELECT type, facts FROM webhook_outbox ORDER BY seq`).toArray());
    expect(events.map((e) => e.type)).toEqual(["message.failed", "message.outcome_unknown"]);
    expect(JSON.parse(events[0]!.facts)).toMatchObject({ message: { id: failing.id, error: "exit 3", attempts: 1, text_preview: "break", text_truncated: false } });
    expect(JSON.parse(events[1]!.facts)).toMatchObject({ message: { id: asking.id, waiting_on: "charge", park_deadline: null } });
  });

  it("an agent without a webhook of its own delivers to the account's; its own, once set, replaces the account's", async () => {
    const agent = uniqueAgent();
    expect((await hooks("PUT", "/webhook", { url: OK_URL, secret: SECRET })).status).toBe(200);
    try {
      const h = await holder(agent);
      const first = await h.run("one");
      await write(h.sock, { type: "park", id: first.id, token: first.token });
      await runDurableObjectAlarm(stubFor(agent, "hooks"));
      await expect.poll(async () => (await webhookOf(agent)).delivered).toBe(1);
      expect(await webhookOf(agent)).toMatchObject({ configured: "account", host: "receiver.test", pending: 0, last_status: 200 });
      expect((await hooks("PUT", `/agents/${agent}/webhook`, { url: BUSY_URL, secret: SECRET })).status).toBe(200);
      const second = await h.run("two");
      await write(h.sock, { type: "park", id: second.id, token: second.token });
      await runDurableObjectAlarm(stubFor(agent, "hooks"));
      await expect.poll(async () => (await webhookOf(agent)).last_status).toBe(503);
      expect(await webhookOf(agent)).toMatchObject({ configured: "agent", delivered: 1, pending: 1 });
    } finally {
      await hooks("DELETE", "/webhook");
    }
  });

  it("with no webhook of the agent's or the account's, a parked message's event is discarded when due and nothing is counted", async () => {
    const agent = uniqueAgent();
    const { sock } = await claimant(agent, "m1", { token: OTHER_TOKEN });
    const { id } = (await hooks("POST", `/agents/${agent}/messages`, { text: "x" }, OTHER_TOKEN)).body as { id: number };
    const run = await sock.next("message", (f) => f.run && f.id === id);
    await write(sock, { type: "park", id, token: run.token });
    await runDurableObjectAlarm(stubFor(agent, "other"));
    await expect.poll(async () => (await presence(agent, OTHER_TOKEN)).webhook!.pending).toBe(0);
    expect((await presence(agent, OTHER_TOKEN)).webhook).toMatchObject({ configured: null, host: null, delivered: 0, failed_attempts: 0, dropped: 0 });
  });
});
