// The webhook outbox over an agent object's SQLite with a fake receiver (webhooks.test.ts has the
// configuration routes and the events that fill it): the same event id and body on every retry,
// backoff, 2xx delivers, a day-old event is dropped, a full outbox drops its oldest.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { WebhookOutbox, type OutboxEvent } from "../../worker/objects/webhook-outbox.ts";
import { hmacBase64 } from "../../worker/objects/webhook-signature.ts";
import { WEBHOOK } from "../../worker/rules/webhooks.ts";
import { webhookEventSchema } from "../../worker/wire/webhooks.ts";
import { stubFor, uniqueAgent } from "./helpers.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/** A receiver that answers with the given statuses in turn (then 200) and keeps each request. */
function fakeReceiver(statuses: number[]) {
  const seen: { url: string; headers: Record<string, string>; body: string }[] = [];
  const send = async (url: string, init: RequestInit) => {
    seen.push({ url, headers: init.headers as Record<string, string>, body: String(init.body) });
    return new Response("ok", { status: statuses.shift() ?? 200 });
  };
  return { seen, send };
}

const TARGET = { url: "https://hooks.example/baton", secrets: [SECRET], origin: "https://baton.example", account: "dev", agent: "reviewer" };

describe("the outbox", () => {
  it("an event keeps its id and body on every retry, waits 1 s then 2 s, is signed each time, and leaves the outbox at the first 2xx", async () => {
    const stub = stubFor(uniqueAgent());
    await runInDurableObject(stub, async (_instance, state) => {
      const outbox = new WebhookOutbox(state.storage.sql);
      const receiver = fakeReceiver([500, 503]);
      let now = 1_000_000;
      outbox.enqueue({ type: "message.parked", message: { id: 7, text_preview: "hi", text_truncated: false, attempts: 1, park_deadline: null } }, now);
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const due = outbox.claimDue(now);
        expect(due).toHaveLength(1);
        // Claimed: not due again while it is being sent.
        expect(outbox.claimDue(now)).toHaveLength(0);
        times.push(now);
        await outbox.deliver(due, TARGET, receiver.send, () => now);
        now = outbox.nextDue() ?? now;
      }
      expect(times.map((t) => t - times[0]!)).toEqual([0, 1000, 3000]);
      expect(new Set(receiver.seen.map((r) => r.headers["webhook-id"])).size).toBe(1);
      expect(new Set(receiver.seen.map((r) => r.body)).size).toBe(1);
      const event = webhookEventSchema.parse(JSON.parse(receiver.seen[0]!.body));
      expect(event).toMatchObject({ type: "message.parked", id: receiver.seen[0]!.headers["webhook-id"], agent: "reviewer", link: "https://baton.example/#agent=reviewer&message=7" });
      for (const r of receiver.seen) {
        expect(r.headers["content-type"]).toBe("application/json");
        expect(r.headers["baton-event-type"]).toBe("message.parked");
        const t = r.headers["webhook-timestamp"]!;
        expect(r.headers["webhook-signature"]).toBe(`v1,${await hmacBase64(SECRET, `${event.id}.${t}.${r.body}`)}`);
      }
      expect(outbox.pending()).toBe(0);
      expect(outbox.stats()).toMatchObject({ delivered: 1, failedAttempts: 2, dropped: 0, lastStatus: 200 });
    });
  });

  it("an event still refused a day after it was made is dropped and counted", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), async (_instance, state) => {
      const outbox = new WebhookOutbox(state.storage.sql);
      outbox.enqueue({ type: "agent.no_holder", no_holder_since: 0, after_seconds: 60 }, 0);
      const receiver = fakeReceiver([500, 500]);
      await outbox.deliver(outbox.claimDue(0), TARGET, receiver.send, () => 0);
      expect(outbox.pending()).toBe(1);
      const late = WEBHOOK.giveUpMs;
      await outbox.deliver(outbox.claimDue(late), TARGET, receiver.send, () => late);
      expect(outbox.pending()).toBe(0);
      expect(outbox.stats()).toMatchObject({ delivered: 0, failedAttempts: 2, dropped: 1 });
    });
  });

  it("a full outbox keeps the newest 1000 events: the oldest is dropped and counted", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), async (_instance, state) => {
      const outbox = new WebhookOutbox(state.storage.sql);
      const ids: string[] = [];
      for (let i = 0; i <= WEBHOOK.maxPending; i++) ids.push(outbox.enqueue({ type: "agent.no_holder", no_holder_since: i, after_seconds: 60 }, i));
      expect(outbox.pending()).toBe(WEBHOOK.maxPending);
      expect(outbox.stats().dropped).toBe(1);
      const kept = outbox.claimDue(Number.MAX_SAFE_INTEGER, WEBHOOK.maxPending).map((e: OutboxEvent) => e.eventId);
      expect(kept).not.toContain(ids[0]);
      expect(kept[0]).toBe(ids[1]);
    });
  });
});
