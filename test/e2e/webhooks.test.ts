// Webhooks against a real `wrangler dev` and a real receiver (node:http on a free loopback port),
// every delivery verified with the Standard Webhooks library (the verifier docs/guides/operate.md shows): a message a
// served command parks (exit 75) arrives as a signed message.parked event; a receiver that answers
// 500 twice gets the same event a third time, after which the outbox is empty and presence says
// delivered; an agent left without a holder is reported once, N seconds later; after a rotation
// both secrets verify; and `baton webhook set|show|test|rm` configure, try and remove a webhook.
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { verifyBatonWebhook } from "../../examples/verify-webhook.mjs";
import { webhookEventSchema, webhookTestResultSchema, webhookViewSchema, type WebhookEvent, type WebhookReport } from "../../worker/wire/webhooks.ts";
import { authHeaders, BIN, getJson, postMessage, sharedServeFixture, startServe, token, uniqueAgent } from "./serve-helpers.ts";
import { agentMetrics, sampleValue } from "./prometheus.ts";
import { startReceiver, type Delivery, type Receiver } from "./receiver.ts";
import { advanceClock, ROOT } from "./wrangler-dev.ts";

// The account webhook is the whole account's: an account of its own, so no other file's agents send it events.
const fx = sharedServeFixture({ account: "webhooks" });
const SECRET = `whsec_${Buffer.from("e2e-webhook-secret-0123456789-abc").toString("base64")}`;

/** Verifies one delivery with the standardwebhooks library; the event, or it throws. */
function verified(secret: string, d: Delivery): unknown {
  return verifyBatonWebhook(secret, d.headers as Record<string, string>, d.body);
}

/**
 * Runs `baton ARGS...` without blocking this process (the receiver answers from it meanwhile):
 * its exit code and output.
 */
function baton(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: token(), NO_COLOR: "1" }, timeout: 30_000 },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }));
  });
}

/** A webhook receiver on 127.0.0.1: answers the queued statuses in turn (then 200) and keeps every request. */
async function receiver(statuses: number[] = []): Promise<Receiver> {
  const r = await startReceiver("/hooks/baton", statuses);
  receivers.push(r);
  return r;
}

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

async function setWebhook(agent: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${fx.dev.url}/agents/${agent}/webhook`, { method: "PUT", headers: authHeaders(), body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** A served command that parks every message (exit 75, EX_TEMPFAIL). */
function parkingCommand(): { command: string; sink: string } {
  const dir = mkdtempSync(join(tmpdir(), "baton-hooks-"));
  const command = join(dir, "park.sh");
  writeFileSync(command, "#!/bin/sh\ncat >/dev/null\nexit 75\n", { mode: 0o755 });
  return { command, sink: join(dir, "sink.jsonl") };
}

/** Starts `baton serve AGENT -- park.sh` and waits until it holds the lease. */
async function servedParking(agent: string) {
  const served = startServe({ url: fx.dev.url, agent, tag: "a", ...parkingCommand() });
  fx.started.push(served);
  await served.waitFor(/holder/);
  return served;
}

function eventOf(d: Delivery): WebhookEvent {
  return webhookEventSchema.parse(JSON.parse(d.body));
}

async function webhookReport(agent: string): Promise<WebhookReport> {
  return (await getJson<{ webhook: WebhookReport }>(`${fx.dev.url}/agents/${agent}/presence`)).webhook;
}

describe("webhooks", () => {
  it("a served message that exits 75 parks, and the receiver gets a signed message.parked event with its preview, attempts and link", async () => {
    const hook = await receiver();
    const agent = uniqueAgent("hooked");
    await setWebhook(agent, { url: hook.url, secret: SECRET });
    await servedParking(agent);
    const id = await postMessage(fx.dev.url, agent, "approve the deploy of v2");
    const [delivery] = await hook.waitFor((got) => got.length >= 1);
    expect(delivery!.headers["content-type"]).toBe("application/json");
    expect(delivery!.headers["baton-event-type"]).toBe("message.parked");
    expect(delivery!.headers["webhook-timestamp"]).toMatch(/^\d{10}$/);
    expect(delivery!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verified(SECRET, delivery!)).toEqual(JSON.parse(delivery!.body));
    expect(() => verified(`whsec_${Buffer.alloc(32, 9).toString("base64")}`, delivery!)).toThrow(/No matching signature/);
    const event = eventOf(delivery!);
    expect(event).toEqual({
      id: delivery!.headers["webhook-id"], type: "message.parked", created_at: expect.any(Number), account: "webhooks", agent,
      link: `${fx.dev.url}/#agent=${agent}&message=${id}`,
      message: {
        id, text_preview: "approve the deploy of v2", text_truncated: false, attempts: 1, park_deadline: null,
        question: { text: null, choices: [], on_deadline: "fail" },
      },
    });
    await expect.poll(() => webhookReport(agent)).toMatchObject({ configured: "agent", host: new URL(hook.url).host, pending: 0, delivered: 1, last_status: 200 });
  });

  it("a receiver that answers 500 twice gets the same event id a third time; then the outbox is empty and presence shows it delivered", async () => {
    const hook = await receiver([500, 500]);
    const agent = uniqueAgent("retried");
    await setWebhook(agent, { url: hook.url, secret: SECRET });
    await servedParking(agent);
    await postMessage(fx.dev.url, agent, "needs a person");
    const got = await hook.waitFor((g) => g.length >= 3);
    expect(new Set(got.map((d) => d.headers["webhook-id"])).size).toBe(1);
    expect(new Set(got.map((d) => d.body)).size).toBe(1);
    for (const d of got) expect(verified(SECRET, d)).toMatchObject({ type: "message.parked" });
    // Backoff: about 1 s, then about 2 s.
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(900);
    expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(1900);
    await expect.poll(() => webhookReport(agent)).toMatchObject({ pending: 0, delivered: 1, failed_attempts: 2, dropped: 0, last_status: 200, next_retry_at: null });
    expect(hook.got).toHaveLength(3);
    // /metrics counts them by result (from the agent's report to its directory, which follows the change).
    await expect.poll(async () => {
      const res = await fetch(`${fx.dev.url}/metrics`, { headers: authHeaders() });
      const families = agentMetrics(await res.text(), agent);
      return ["delivered", "failed", "dropped"].map((result) => sampleValue(families, "baton_webhook_deliveries_total", { result }))
        .concat(sampleValue(families, "baton_webhook_pending_events"));
    }).toEqual([1, 2, 0, 0]);
  });

  it("agent.no_holder reaches the receiver N seconds after the holder left, once per outage", async () => {
    const hook = await receiver();
    const agent = uniqueAgent("orphan");
    await setWebhook(agent, { url: hook.url, secret: SECRET, no_holder_after_seconds: 1 });
    const served = await servedParking(agent);
    const stoppedAt = Date.now();
    await served.stop();
    const [delivery] = await hook.waitFor((got) => got.length >= 1);
    const event = eventOf(delivery!);
    expect(event).toMatchObject({ type: "agent.no_holder", agent, after_seconds: 1, link: `${fx.dev.url}/#agent=${agent}` });
    expect(verified(SECRET, delivery!)).toMatchObject({ type: "agent.no_holder" });
    expect(delivery!.at - stoppedAt).toBeGreaterThanOrEqual(1000);
    if (event.type !== "agent.no_holder") throw new Error("unreachable");
    expect(event.no_holder_since).toBeGreaterThanOrEqual(stoppedAt - 1000);
    // Once per outage: ten more thresholds pass on the agent's clock, with the alarms they make due; nothing more is queued.
    await expect.poll(() => webhookReport(agent)).toMatchObject({ pending: 0, delivered: 1 });
    await advanceClock(fx.dev.url, 10_000, { agent }, token());
    expect(await webhookReport(agent)).toMatchObject({ pending: 0, delivered: 1 });
    expect(hook.got).toHaveLength(1);
  });

  it("after a rotation the new and the old secret both verify each delivery, until the old one's expiry", async () => {
    const hook = await receiver();
    const agent = uniqueAgent("rotated");
    await setWebhook(agent, { url: hook.url, secret: SECRET });
    const res = await fetch(`${fx.dev.url}/agents/${agent}/webhook`, { method: "PUT", headers: authHeaders(), body: JSON.stringify({ url: hook.url, rotate_secret: true }) });
    const view = webhookViewSchema.parse(await res.json());
    expect(view.secret).toMatch(/^whsec_/);
    expect(view.old_secret_expires_at).toBeGreaterThan(Date.now() + 86_000_000);
    await servedParking(agent);
    await postMessage(fx.dev.url, agent, "rotated");
    const [delivery] = await hook.waitFor((got) => got.length >= 1);
    expect(delivery!.headers["webhook-signature"]).toMatch(/^v1,\S+ v1,\S+$/);
    expect(verified(view.secret!, delivery!)).toMatchObject({ type: "message.parked" });
    expect(verified(SECRET, delivery!)).toMatchObject({ type: "message.parked" });
  });

  it("baton webhook set, show, test and rm: a webhook configured, tried with a verified webhook.test and removed without curl, for an agent and for the account", async () => {
    const hook = await receiver([200, 500]);
    const agent = uniqueAgent("cli");
    const set = await baton(["webhook", "set", hook.url, agent, "--no-holder-after", "30", "--json"]);
    expect(set.code, set.stderr).toBe(0);
    const view = webhookViewSchema.parse(JSON.parse(set.stdout));
    expect(view).toMatchObject({ scope: "agent", agent, url: hook.url, no_holder_after_seconds: 30 });
    const secret = view.secret!;
    expect(secret).toMatch(/^whsec_/);
    const shown = await baton(["webhook", "show", agent]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`the webhook of agent ${agent}: ${hook.url}`);
    expect(shown.stdout).not.toContain(secret.slice(6));
    const tried = await baton(["webhook", "test", agent]);
    expect(tried.code, tried.stderr).toBe(0);
    expect(tried.stdout).toMatch(new RegExp(`^sent webhook.test evt_[0-9a-f]{32} to ${hook.url}: answered 200\n$`));
    expect(verified(secret, hook.got[0]!)).toMatchObject({ type: "webhook.test", agent, account: "webhooks", link: `${fx.dev.url}/#agent=${agent}` });
    expect(hook.got[0]!.headers["baton-event-type"]).toBe("webhook.test");
    // The receiver answers 500 now: the test says so and exits 1; then 200 again, and --json prints the result.
    const refused = await baton(["webhook", "test", agent]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/sent webhook.test evt_\w+ to .* \(the webhook of agent .*\): the receiver answered 500/);
    const json = await baton(["webhook", "test", agent, "--json"]);
    expect(json.code).toBe(0);
    expect(webhookTestResultSchema.parse(JSON.parse(json.stdout))).toMatchObject({ status: 200, delivered: true });
    const made = await baton(["webhook", "set", hook.url, agent, "--rotate-secret"]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/secret +whsec_\S+\n  \(shown this once/);
    expect(made.stdout).toMatch(/previous secret +still signs beside the current one until/);
    expect((await baton(["webhook", "rm", agent])).stdout).toBe(`removed the webhook of agent ${agent}\n`);
    const gone = await baton(["webhook", "show", agent]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/has no webhook/);
    expect((await baton(["webhook", "test", agent])).code).toBe(1);
    // Without AGENT: the account's.
    const account = await baton(["webhook", "set", hook.url, "--secret", SECRET]);
    expect(account.code, account.stderr).toBe(0);
    expect(account.stdout).not.toMatch(/secret +whsec_/);
    try {
      const before = hook.got.length;
      expect((await baton(["webhook", "test"])).code).toBe(0);
      expect(verified(SECRET, hook.got[before]!)).toMatchObject({ type: "webhook.test", agent: null, link: `${fx.dev.url}/` });
    } finally {
      expect((await baton(["webhook", "rm"])).stdout).toBe("removed the account's webhook\n");
    }
  });

  it("baton webhook refuses bad input before sending anything: a bad URL, a plain secret, both --secret and --rotate-secret, a missing subcommand", async () => {
    for (const [args, says] of [
      [["webhook", "set", "ftp://x.example/", "a1"], /URL must be an http: or https: URL/],
      [["webhook", "set", "http://x.example/", "a1", "--secret", "plain-secret-of-some-length"], /--secret must be whsec_/],
      [["webhook", "set", "http://x.example/", "a1", "--secret", SECRET, "--rotate-secret"], /give --secret or --rotate-secret, not both/],
      [["webhook", "set", "http://x.example/", "a1", "--keep-old-secret", "1.5"], /--keep-old-secret must be a whole number/],
      [["webhook", "show", "Bad Name"], /bad agent name/],
      [["webhook"], /webhook needs a subcommand: set, show, rm or test/],
    ] as const) {
      const r = await baton([...args]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(says);
    }
    expect((await baton(["webhook", "show", "a1"])).code).toBe(1);
  });
});
