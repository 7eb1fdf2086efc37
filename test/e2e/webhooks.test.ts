// Webhooks against a real `wrangler dev` and a real receiver (node:http on a free loopback port):
// a message a served command parks (exit 75) arrives as a signed message.parked event that the
// README's Node verifier accepts; a receiver that answers 500 twice gets the same event a third
// time, after which the outbox is empty and presence says delivered; an agent left without a
// holder is reported once, N seconds later.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { verifyBatonSignature } from "../../examples/verify-webhook.mjs";
import { webhookEventSchema, type WebhookEvent, type WebhookReport } from "../../worker/wire/webhooks.ts";
import { authHeaders, getJson, postMessage, serveFixture, startServe, uniqueAgent } from "./serve-helpers.ts";
import { agentMetrics, sampleValue } from "./prometheus.ts";
import { freePort } from "./wrangler-dev.ts";

const fx = serveFixture();
const SECRET = "e2e-webhook-secret-0123456789";

interface Delivery {
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on 127.0.0.1: answers the queued statuses in turn (then 200) and keeps every request. */
async function receiver(statuses: number[] = []) {
  const port = await freePort();
  const got: Delivery[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      got.push({ at: Date.now(), headers: req.headers, body });
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  servers.push(server);
  return {
    url: `http://127.0.0.1:${port}/hooks/baton`,
    got,
    async waitFor(done: (got: Delivery[]) => boolean, timeoutMs = 20_000): Promise<Delivery[]> {
      const deadline = Date.now() + timeoutMs;
      while (!done(got)) {
        if (Date.now() > deadline) throw new Error(`the receiver never got what was expected: ${JSON.stringify(got.map((d) => d.body))}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return got;
    },
  };
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
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
    expect(verifyBatonSignature(SECRET, delivery!.headers["baton-signature"] as string, delivery!.body)).toBe(true);
    expect(verifyBatonSignature("not-the-secret-at-all", delivery!.headers["baton-signature"] as string, delivery!.body)).toBe(false);
    const event = eventOf(delivery!);
    expect(event).toEqual({
      id: delivery!.headers["baton-event-id"], type: "message.parked", created_at: expect.any(Number), account: "dev", agent,
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
    expect(new Set(got.map((d) => d.headers["baton-event-id"])).size).toBe(1);
    expect(new Set(got.map((d) => d.body)).size).toBe(1);
    for (const d of got) expect(verifyBatonSignature(SECRET, d.headers["baton-signature"] as string, d.body)).toBe(true);
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
    expect(verifyBatonSignature(SECRET, delivery!.headers["baton-signature"] as string, delivery!.body)).toBe(true);
    expect(delivery!.at - stoppedAt).toBeGreaterThanOrEqual(1000);
    if (event.type !== "agent.no_holder") throw new Error("unreachable");
    expect(event.no_holder_since).toBeGreaterThanOrEqual(stoppedAt - 1000);
    // Once per outage: nothing more while it lasts.
    await new Promise((r) => setTimeout(r, 2500));
    expect(hook.got).toHaveLength(1);
  });
});
