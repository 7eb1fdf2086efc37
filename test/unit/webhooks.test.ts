// The webhook rules in plain Node, as tables: which status change makes which event, when an outage
// is reported, the backoff and when an event is given up, the budget, the link, the Standard
// Webhooks signature (made with Web Crypto as the worker makes it, checked against the spec's
// published example and with the verifier docs/guides/operate.md shows, the `standardwebhooks` library), which secrets
// sign after a PUT, and the configuration body's refusals.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { verifyBatonWebhook } from "../../examples/verify-webhook.mjs";
import { hmacBase64, newWebhookSecret, signedHeaders } from "../../worker/objects/webhook-signature.ts";
import {
  afterAttempt, buildEvent, eventLink, liveSecrets, noHolderDueAt, NO_OUTAGE, outageAfter, overBudget, retryDelayMs, secretsAfterPut, signatureBase, signatureHeader,
  statusChangeEvent, testEvent, WEBHOOK, webhookHost, type MessageFacts,
} from "../../worker/rules/webhooks.ts";
import { parseBody } from "../../worker/wire/protocol.ts";
import { webhookConfigSchema, webhookEventSchema } from "../../worker/wire/webhooks.ts";
import { ROOT } from "../e2e/wrangler-dev.ts";

const row = (over: Partial<MessageFacts>): MessageFacts => ({
  id: 4, status: "parked", text: "deploy v2", attempts: 1, expires_at: null, pending_ask: null, error: null, question: null, on_deadline: null, ...over,
});

describe("events from status changes", () => {
  it.each([
    ["running → parked: message.parked with its park deadline", "running", row({ status: "parked", expires_at: 9000 }),
      { type: "message.parked", message: {
        id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 1, park_deadline: 9000, question: { text: null, choices: [], on_deadline: "fail" },
      } }],
    ["running → parked with a question: message.parked with its text, choices and deadline action", "running",
      row({ status: "parked", expires_at: 9000, question: JSON.stringify({ text: "Ship?", choices: ["ship", "hold"], step: null, on_deadline: null, token: 1, asked_at: 1 }), on_deadline: "escalate" }),
      { type: "message.parked", message: {
        id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 1, park_deadline: 9000, question: { text: "Ship?", choices: ["ship", "hold"], on_deadline: "escalate" },
      } }],
    ["running → parked with an unknown outcome: message.outcome_unknown only", "running", row({ status: "parked", pending_ask: "charge" }),
      { type: "message.outcome_unknown", message: { id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 1, park_deadline: null, waiting_on: "charge" } }],
    ["running → failed: message.failed with its error", "running", row({ status: "failed", error: "exit 3", attempts: 5 }),
      { type: "message.failed", message: { id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 5, error: "exit 3" } }],
    ["running → failed after declined hand-outs: message.failed says how many of its attempts were declined (not counted)", "running", row({ status: "failed", error: "exit 3", attempts: 4, declined: 2 }),
      { type: "message.failed", message: { id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 4, declined: 2, error: "exit 3" } }],
    ["running → failed after a person's retry: message.failed says its attempts go on, and how many came before the retry", "running", row({ status: "failed", error: "exit 3", attempts: 8, retried_after: 5, declined: 1 }),
      { type: "message.failed", message: { id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 8, retried_after: 5, declined: 1, error: "exit 3" } }],
    ["parked → failed (park deadline): message.failed", "parked", row({ status: "failed", error: "its park deadline passed" }),
      { type: "message.failed", message: { id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 1, error: "its park deadline passed" } }],
    ["parked → parked: nothing", "parked", row({ status: "parked" }), null],
    ["failed → failed: nothing", "failed", row({ status: "failed" }), null],
    ["queued → running: nothing", "queued", row({ status: "running" }), null],
    ["running → queued: nothing", "running", row({ status: "queued" }), null],
    ["parked → queued (resumed): nothing", "parked", row({ status: "queued" }), null],
    ["running → acknowledged: nothing", "running", row({ status: "acknowledged" }), null],
  ] as const)("%s", (_name, before, after, event) => {
    expect(statusChangeEvent(before, after)).toEqual(event);
  });

  it("a text over 500 characters is cut to its first 500 and marked truncated", () => {
    const facts = statusChangeEvent("running", row({ text: "x".repeat(501) }));
    expect(facts).toMatchObject({ message: { text_preview: "x".repeat(500), text_truncated: true } });
  });
});

describe("agent.no_holder", () => {
  const lost = { at: 10_000, fromClaim: 1, toClaim: null };
  it("an outage begins when the lease is left with nobody (at a silent holder's deadline), survives further empty transitions, and ends with a grant", () => {
    const o = outageAfter(NO_OUTAGE, lost, 8_000);
    expect(o).toEqual({ since: 8_000, notified: false });
    expect(outageAfter({ ...o, notified: true }, { at: 20_000, fromClaim: null, toClaim: null }, 20_000)).toEqual({ since: 8_000, notified: true });
    expect(outageAfter(o, { at: 30_000, fromClaim: null, toClaim: 2 }, 30_000)).toEqual(NO_OUTAGE);
  });

  it.each([
    ["an unreported outage is due its threshold after it began", { since: 8_000, notified: false }, 60_000, 68_000],
    ["a reported outage is not due again", { since: 8_000, notified: true }, 60_000, null],
    ["no outage, nothing due", { since: null, notified: false }, 60_000, null],
    ["no webhook known (no threshold), nothing due", { since: 8_000, notified: false }, null, null],
  ] as const)("%s", (_name, outage, after, due) => {
    expect(noHolderDueAt(outage, after)).toBe(due);
  });
});

describe("retries", () => {
  it("the wait doubles from 1 s after each failed attempt and stops growing at 10 min", () => {
    expect([1, 2, 3, 4, 10, 11, 50].map(retryDelayMs)).toEqual([1000, 2000, 4000, 8000, 512_000, 600_000, 600_000]);
  });

  it.each([
    [200, 5_000, { kind: "delivered" }],
    [204, 5_000, { kind: "delivered" }],
    [301, 5_000, { kind: "retry", at: 5_000 + 4000 }],
    [500, 5_000, { kind: "retry", at: 5_000 + 4000 }],
    [null, 5_000, { kind: "retry", at: 5_000 + 4000 }],
    [500, WEBHOOK.giveUpMs - 1, { kind: "retry", at: WEBHOOK.giveUpMs - 1 + 4000 }],
    [500, WEBHOOK.giveUpMs, { kind: "dropped" }],
    [200, WEBHOOK.giveUpMs + 1, { kind: "delivered" }],
  ] as const)("the 3rd attempt of an event made at 0, answered %s at %s ms: %o", (status, now, verdict) => {
    expect(afterAttempt({ createdAt: 0, attempts: 3 }, status, now)).toEqual(verdict);
  });

  it("one more event than the budget pushes out the oldest", () => {
    expect(overBudget(0)).toBe(0);
    expect(overBudget(WEBHOOK.maxPending - 1)).toBe(0);
    expect(overBudget(WEBHOOK.maxPending)).toBe(1);
  });
});

describe("what a receiver gets", () => {
  it("the link points at the dashboard on the configuring origin, at the agent and the message", () => {
    expect(eventLink("https://baton.example", "reviewer", 12)).toBe("https://baton.example/#agent=reviewer&message=12");
    expect(eventLink("http://127.0.0.1:8787/", "a.b", null)).toBe("http://127.0.0.1:8787/#agent=a.b");
    const event = buildEvent({ type: "agent.no_holder", no_holder_since: 5, after_seconds: 60 }, {
      id: `evt_${"ab".repeat(16)}`, createdAt: 65_005, account: "dev", agent: "reviewer", origin: "https://baton.example",
    });
    expect(webhookEventSchema.parse(event)).toEqual({
      id: `evt_${"ab".repeat(16)}`, type: "agent.no_holder", created_at: 65_005, account: "dev", agent: "reviewer", link: "https://baton.example/#agent=reviewer",
      no_holder_since: 5, after_seconds: 60,
    });
  });

  it("the signature is Standard Webhooks v1: the spec's published example signs to its published value", async () => {
    // From the Standard Webhooks specification's example (and its reference libraries' tests).
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const base = signatureBase("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}');
    expect(base).toBe('msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}');
    expect(signatureHeader([await hmacBase64(secret, base)])).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("signed headers pass the operate guide's verifier (the standardwebhooks library) with every live secret, and fail with another body, secret or an old timestamp", async () => {
    const [current, old] = [newWebhookSecret(), newWebhookSecret()];
    expect(current).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = JSON.stringify({ id: "evt_1", type: "message.parked" });
    const headers = await signedHeaders("evt_1", "message.parked", body, [current, old], Date.now());
    expect(headers).toMatchObject({ "webhook-id": "evt_1", "baton-event-type": "message.parked", "content-type": "application/json" });
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifyBatonWebhook(current, headers, body)).toEqual({ id: "evt_1", type: "message.parked" });
    expect(verifyBatonWebhook(old, headers, body)).toEqual({ id: "evt_1", type: "message.parked" });
    expect(() => verifyBatonWebhook(current, headers, `${body} `)).toThrow(/No matching signature/);
    expect(() => verifyBatonWebhook(newWebhookSecret(), headers, body)).toThrow(/No matching signature/);
    const stale = await signedHeaders("evt_1", "message.parked", body, [current], Date.now() - 301_000);
    expect(() => verifyBatonWebhook(current, stale, body)).toThrow(/too old/);
  });

  it("a plain secret stored before Standard Webhooks signs with its UTF-8 bytes: whsec_ and the base64 of it verifies", async () => {
    const plain = "s3cret-s3cret-s3cret";
    const body = "{}";
    const headers = await signedHeaders("evt_2", "message.failed", body, [plain], Date.now());
    expect(verifyBatonWebhook(`whsec_${Buffer.from(plain).toString("base64")}`, headers, body)).toEqual({});
  });

  it("the webhook.test event: no facts, linked to the agent, or to the dashboard for the account's webhook", () => {
    const at = { id: `evt_${"cd".repeat(16)}`, createdAt: 5, account: "dev", origin: "https://baton.example/" };
    expect(webhookEventSchema.parse(testEvent({ ...at, agent: "reviewer" }))).toMatchObject({ type: "webhook.test", agent: "reviewer", link: "https://baton.example/#agent=reviewer" });
    expect(webhookEventSchema.parse(testEvent({ ...at, agent: null }))).toMatchObject({ type: "webhook.test", agent: null, link: "https://baton.example/" });
  });

  it("the operate guide shows the verifier exactly as examples/verify-webhook.mjs has it", () => {
    const source = readFileSync(join(ROOT, "examples/verify-webhook.mjs"), "utf8");
    const fn = source.slice(source.indexOf("export function verifyBatonWebhook"));
    expect(readFileSync(join(ROOT, "docs/guides/operate.md"), "utf8")).toContain(fn.trim());
  });

  it("presence shows the webhook's host, never its path, query or credentials", () => {
    expect(webhookHost("https://user:pw@hooks.example:8443/p/a?token=x")).toBe("hooks.example:8443");
  });
});

describe("secrets after a PUT", () => {
  const A = "whsec_AAAA", B = "whsec_BBBB", MADE = "whsec_MADE";
  const make = () => MADE;
  const none = { oldSecret: null, oldSecretExpiresAt: null };
  it.each([
    ["a new webhook without a secret: baton makes one, shown once", null, { keepMs: 1000 }, { secret: MADE, ...none, made: MADE }],
    ["a new webhook with a secret: that one", null, { secret: A, keepMs: 1000 }, { secret: A, ...none, made: null }],
    ["an existing one without a secret: unchanged", { secret: A, ...none }, { keepMs: 1000 }, { secret: A, ...none, made: null }],
    ["an existing one, the same secret again: unchanged", { secret: A, ...none }, { secret: A, keepMs: 1000 }, { secret: A, ...none, made: null }],
    ["a new secret: the old one signs beside it until now + keep", { secret: A, ...none }, { secret: B, keepMs: 1000 }, { secret: B, oldSecret: A, oldSecretExpiresAt: 1100, made: null }],
    ["rotate: baton makes the new one; the old one signs beside it", { secret: A, ...none }, { rotate: true, keepMs: 1000 }, { secret: MADE, oldSecret: A, oldSecretExpiresAt: 1100, made: MADE }],
    ["a new secret with keep 0: the old one stops at once", { secret: A, oldSecret: B, oldSecretExpiresAt: 5000 }, { secret: B, keepMs: 0 }, { secret: B, ...none, made: null }],
  ] as const)("%s", (_name, prev, put, after) => {
    expect(secretsAfterPut(prev, put, 100, make)).toEqual(after);
  });

  it("the old secret signs until its expiry, then only the current one", () => {
    const s = { secret: B, oldSecret: A, oldSecretExpiresAt: 1100 };
    expect(liveSecrets(s, 1099)).toEqual([B, A]);
    expect(liveSecrets(s, 1100)).toEqual([B]);
  });
});

describe("the configuration body", () => {
  const SECRET = `whsec_${Buffer.alloc(24, 7).toString("base64")}`;
  it.each([
    ["an https URL and no secret: accepted (baton makes one)", { url: "https://hooks.example/x" }, null],
    ["an https URL and a whsec_ secret of 24 bytes: accepted", { url: "https://hooks.example/x", secret: SECRET }, null],
    ["a 64-byte secret, rotation fields, the largest threshold: accepted",
      { url: "http://127.0.0.1:9000/", secret: `whsec_${Buffer.alloc(64, 1).toString("base64")}`, keep_old_secret_seconds: 0, no_holder_after_seconds: 86_400 }, null],
    ["rotate_secret: accepted", { url: "https://hooks.example/x", rotate_secret: true }, null],
    ["ftp:", { url: "ftp://hooks.example/x" }, "url must be an http: or https: URL of at most 2048 characters"],
    ["a URL of 2049 characters", { url: `https://h.example/${"a".repeat(2031)}` }, "url must be an http: or https: URL of at most 2048 characters"],
    ["a plain secret", { url: "https://hooks.example/x", secret: "s".repeat(32) }, "secret must be whsec_ and the base64 of 24-64 random bytes"],
    ["a whsec_ secret of 23 bytes", { url: "https://hooks.example/x", secret: `whsec_${Buffer.alloc(23).toString("base64")}` }, "secret must be whsec_"],
    ["a whsec_ secret of 65 bytes", { url: "https://hooks.example/x", secret: `whsec_${Buffer.alloc(65).toString("base64")}` }, "secret must be whsec_"],
    ["a whsec_ secret that is not base64", { url: "https://hooks.example/x", secret: `whsec_${"-".repeat(32)}` }, "secret must be whsec_"],
    ["a secret and rotate_secret", { url: "https://hooks.example/x", secret: SECRET, rotate_secret: true }, "give secret or rotate_secret, not both"],
    ["keep over a week", { url: "https://hooks.example/x", keep_old_secret_seconds: 604_801 }, "keep_old_secret_seconds must be a whole number from 0 to 604800"],
    ["a fractional threshold", { url: "https://hooks.example/x", no_holder_after_seconds: 1.5 }, "no_holder_after_seconds must be a whole number from 1 to 86400"],
    ["a threshold over a day", { url: "https://hooks.example/x", no_holder_after_seconds: 86_401 }, "no_holder_after_seconds must be a whole number from 1 to 86400"],
    ["an unknown field", { url: "https://hooks.example/x", events: [] }, "unknown field: events"],
    ["a string body", "https://hooks.example/x", "the body must be a JSON object"],
  ] as const)("%s", (_name, body, refusal) => {
    const parsed = parseBody(webhookConfigSchema, body);
    if (refusal === null) expect(parsed.ok ? "accepted" : parsed.message).toBe("accepted");
    else expect(parsed.ok ? "accepted" : parsed.message).toContain(refusal);
  });
});
