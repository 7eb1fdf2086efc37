// What a delivery trusts, decided when it is sent: the account's webhook is asked for afresh (a
// change or removal applies to the next delivery, not 30 s later), a stored URL is checked again
// against the exposure rules (by deliveries and by the test route), and an outbox whose delivery
// slots are all in flight still owns its next wake, so a restart mid-flight sends them again on time.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AgentWebhooks, type AccountWebhookSource } from "../../worker/objects/agent-webhooks.ts";
import type { WebhookConfig } from "../../worker/objects/webhook-config.ts";
import { WEBHOOK, type WebhookFacts } from "../../worker/rules/webhooks.ts";
import { BASE, call, claimant, post, presence, stubFor, uniqueAgent, write } from "./helpers.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER_SECRET = "whsec_Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9v";
const WHO = { account: "dev", agent: "reviewer" };
const EVENT: WebhookFacts = { type: "agent.no_holder", no_holder_since: 0, after_seconds: 60 };

function accountConfig(url: string, secret = SECRET): WebhookConfig {
  return { url, secret, oldSecret: null, oldSecretExpiresAt: null, noHolderAfterMs: 60_000, origin: BASE, updatedAt: 1 };
}

/** A receiver that keeps each request's URL and signature; `hang` holds every answer until `release`. */
function receiver(hang = false) {
  const seen: { url: string; signature: string }[] = [];
  const waiting: (() => void)[] = [];
  const send = async (url: string, init: RequestInit) => {
    seen.push({ url, signature: (init.headers as Record<string, string>)["webhook-signature"]! });
    if (hang) await new Promise<void>((resolve) => waiting.push(resolve));
    return new Response(null, { status: 200 });
  };
  return { seen, send, release: () => waiting.splice(0).forEach((r) => r()) };
}

describe("the account's webhook at delivery", () => {
  it("a change of URL or secret applies to the very next delivery, and a removal discards it, however soon after the last fetch", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), async (_instance, state) => {
      let current: WebhookConfig | null = accountConfig("https://one.example/hook");
      const source: AccountWebhookSource = { accountWebhook: async () => current };
      const now = 1_000_000;
      const r = receiver();
      const hooks = new AgentWebhooks(state.storage.sql, () => source, () => now, r.send);
      const sendOne = async () => {
        hooks.enqueue(EVENT, now);
        await hooks.deliver(hooks.claimDue(now), WHO);
      };
      await sendOne();
      // Changed a millisecond later by the agent object's clock: well inside the old 30 s of trust.
      current = accountConfig("https://two.example/hook", OTHER_SECRET);
      await sendOne();
      expect(r.seen.map((s) => s.url)).toEqual(["https://one.example/hook", "https://two.example/hook"]);
      expect(r.seen[0]!.signature).not.toBe(r.seen[1]!.signature);
      current = null;
      await sendOne();
      expect(r.seen).toHaveLength(2);
      expect(hooks.outbox.pending()).toBe(0);
      expect(hooks.outbox.stats()).toMatchObject({ delivered: 2, failedAttempts: 0 });
    });
  });
});

describe("a stored URL the exposure rules refuse", () => {
  it("is never sent to: a delivery records a failed attempt naming the rule, and the test route is a 400", async () => {
    const agent = uniqueAgent();
    // Stored as if before the rules (the PUT route would refuse it): straight through the object's RPC.
    await stubFor(agent).setWebhook({ url: "http://127.0.0.1:9/hook", secret: SECRET }, BASE);
    const test = await call("POST", `/agents/${agent}/webhook/test`);
    expect(test.status).toBe(400);
    expect(test.body).toMatchObject({ error: "bad_request", message: expect.stringMatching(/not sent: url must not point at a loopback address/) });
    const { sock } = await claimant(agent, "m1");
    const id = await post(agent, "park me");
    const run = await sock.next("message", (f) => f.run && f.id === id);
    expect(await write(sock, { type: "park", id, token: run.token })).toMatchObject({ op: "park" });
    await runDurableObjectAlarm(stubFor(agent));
    // Sent, the test runner's outbound service would have answered 502; refused, nothing was asked.
    await expect.poll(async () => (await presence(agent)).webhook!.failed_attempts).toBe(1);
    expect((await presence(agent)).webhook).toMatchObject({ pending: 1, delivered: 0, last_status: null, last_error: expect.stringMatching(/^not sent: url must not point at a loopback address/) });
  });

  it("an account's webhook read at delivery is checked the same way", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), async (_instance, state) => {
      const source: AccountWebhookSource = { accountWebhook: async () => accountConfig("http://169.254.169.254/latest") };
      const r = receiver();
      const hooks = new AgentWebhooks(state.storage.sql, () => source, () => 5_000, r.send);
      hooks.enqueue(EVENT, 5_000);
      await hooks.deliver(hooks.claimDue(5_000), WHO);
      expect(r.seen).toHaveLength(0);
      expect(hooks.outbox.stats()).toMatchObject({ failedAttempts: 1, lastError: expect.stringMatching(/link-local/) });
    });
  });
});

describe("an outbox with every delivery slot in flight", () => {
  it("still asks for a wake, when the in-flight marks lapse; after a restart mid-flight that wake sends them again", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), async (_instance, state) => {
      let now = 2_000_000;
      const hanging = receiver(true);
      const before = new AgentWebhooks(state.storage.sql, () => null, () => now, hanging.send);
      before.set({ url: "https://hooks.example/hang", secret: SECRET }, BASE, "reviewer", now);
      for (let i = 0; i < WEBHOOK.batch + 5; i++) before.enqueue(EVENT, now);
      const claimed = before.claimDue(now);
      expect(claimed).toHaveLength(WEBHOOK.batch);
      const flight = before.deliver(claimed, WHO);
      // Five are due and cannot start; the twenty in flight are due again when their marks lapse.
      expect(before.dueAt(now)).toBe(now + WEBHOOK.inFlightMs);
      expect(before.snapshot(now).dueAt).toBe(now + WEBHOOK.inFlightMs);
      // The instance dies with its deliveries unanswered; a new one wakes at the time the old one asked for.
      now += WEBHOOK.inFlightMs;
      const ok = receiver();
      const after = new AgentWebhooks(state.storage.sql, () => null, () => now, ok.send);
      await after.deliver(after.claimDue(now), WHO);
      await after.deliver(after.claimDue(now), WHO);
      expect(ok.seen).toHaveLength(WEBHOOK.batch + 5);
      expect(after.outbox.pending()).toBe(0);
      hanging.release();
      await flight;
    });
  });
});
