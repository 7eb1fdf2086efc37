// The webhook rules in plain Node, as tables: which status change makes which event, when an outage
// is reported, the backoff and when an event is given up, the budget, the link, the signature
// (made with Web Crypto as the worker makes it, checked with the README's Node verifier), and the
// configuration body's refusals.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { verifyBatonSignature } from "../../examples/verify-webhook.mjs";
import { hmacHex } from "../../worker/objects/webhook-signature.ts";
import {
  afterAttempt, buildEvent, eventLink, noHolderDueAt, NO_OUTAGE, outageAfter, overBudget, retryDelayMs, signatureBase, signatureHeader,
  statusChangeEvent, WEBHOOK, webhookHost, type MessageFacts,
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
      row({ status: "parked", expires_at: 9000, question: JSON.stringify({ text: "Ship?", choices: ["ship", "hold"] }), on_deadline: "escalate" }),
      { type: "message.parked", message: {
        id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 1, park_deadline: 9000, question: { text: "Ship?", choices: ["ship", "hold"], on_deadline: "escalate" },
      } }],
    ["running → parked with an unknown outcome: message.outcome_unknown only", "running", row({ status: "parked", pending_ask: "charge" }),
      { type: "message.outcome_unknown", message: { id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 1, park_deadline: null, waiting_on: "charge" } }],
    ["running → failed: message.failed with its error", "running", row({ status: "failed", error: "exit 3", attempts: 5 }),
      { type: "message.failed", message: { id: 4, text_preview: "deploy v2", text_truncated: false, attempts: 5, error: "exit 3" } }],
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

  it("the signature is HMAC-SHA256 of '<t>.<body>'; the README's Node verifier accepts it and refuses another body, secret or an old timestamp", async () => {
    const body = JSON.stringify({ id: "evt_1", type: "message.parked" });
    const t = 1_700_000_000;
    expect(signatureBase(t, body)).toBe(`${t}.${body}`);
    const header = signatureHeader(t, await hmacHex("secret-of-16-chars", signatureBase(t, body)));
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
    expect(verifyBatonSignature("secret-of-16-chars", header, body, 300, t + 10)).toBe(true);
    expect(verifyBatonSignature("secret-of-16-chars", header, `${body} `, 300, t + 10)).toBe(false);
    expect(verifyBatonSignature("another-secret-16", header, body, 300, t + 10)).toBe(false);
    expect(verifyBatonSignature("secret-of-16-chars", header, body, 300, t + 301)).toBe(false);
    expect(verifyBatonSignature("secret-of-16-chars", "garbage", body, 300, t)).toBe(false);
  });

  it("the README shows the verifier exactly as examples/verify-webhook.mjs has it", () => {
    const source = readFileSync(join(ROOT, "examples/verify-webhook.mjs"), "utf8");
    const fn = source.slice(source.indexOf("export function verifyBatonSignature"));
    expect(readFileSync(join(ROOT, "README.md"), "utf8")).toContain(fn.trim());
  });

  it("presence shows the webhook's host, never its path, query or credentials", () => {
    expect(webhookHost("https://user:pw@hooks.example:8443/p/a?token=x")).toBe("hooks.example:8443");
  });
});

describe("the configuration body", () => {
  it.each([
    ["an https URL and a 16-character secret: accepted", { url: "https://hooks.example/x", secret: "s".repeat(16) }, null],
    ["an http URL, a 256-character secret, the largest threshold: accepted", { url: "http://127.0.0.1:9000/", secret: "s".repeat(256), no_holder_after_seconds: 86_400 }, null],
    ["ftp:", { url: "ftp://hooks.example/x", secret: "s".repeat(16) }, "url must be an http: or https: URL of at most 2048 characters"],
    ["a URL of 2049 characters", { url: `https://h.example/${"a".repeat(2031)}`, secret: "s".repeat(16) }, "url must be an http: or https: URL of at most 2048 characters"],
    ["a 15-character secret", { url: "https://hooks.example/x", secret: "s".repeat(15) }, "secret must be a string of 16-256 characters"],
    ["a fractional threshold", { url: "https://hooks.example/x", secret: "s".repeat(16), no_holder_after_seconds: 1.5 }, "no_holder_after_seconds must be a whole number from 1 to 86400"],
    ["a threshold over a day", { url: "https://hooks.example/x", secret: "s".repeat(16), no_holder_after_seconds: 86_401 }, "no_holder_after_seconds must be a whole number from 1 to 86400"],
    ["an unknown field", { url: "https://hooks.example/x", secret: "s".repeat(16), events: [] }, "unknown field: events"],
    ["a string body", "https://hooks.example/x", "the body must be a JSON object"],
  ] as const)("%s", (_name, body, refusal) => {
    const parsed = parseBody(webhookConfigSchema, body);
    if (refusal === null) expect(parsed.ok).toBe(true);
    else expect(parsed.ok ? "accepted" : parsed.message).toContain(refusal);
  });
});
