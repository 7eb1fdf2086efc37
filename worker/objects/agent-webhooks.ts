// An agent object's webhooks: which webhook its events go to (its own, else its account's, which
// it asks the directory for by RPC: afresh for every delivery, so a change or removal applies to
// the next one; what it last heard decides only whether an event is kept), the one door events
// enter by (`enqueue`), the status changes and outages that make them, and the deliveries the
// alarm starts and never waits for. The agent object calls these few methods and nothing here
// calls back into it: a fetch of the account's webhook is a promise the object turns into an event.
import type { AgentSnapshot } from "../rules/agent-plan.ts";
import { liveSecrets, WEBHOOK, webhookHost, type Outage, type WebhookFacts } from "../rules/webhooks.ts";
import { claimRoom, outboxWake, planDelivery, type DeliveryTarget } from "../rules/webhook-outbox-plan.ts";
import type { WebhookConfigBody, WebhookReport, WebhookView } from "../wire/webhooks.ts";
import { WebhookConfigStore, webhookView, type WebhookConfig } from "./webhook-config.ts";
import { testRequest, type SignedRequest } from "./webhook-delivery.ts";
import { WebhookOutbox, type OutboxEvent, type Sender } from "./webhook-outbox.ts";
import { webhookTargetRefusal } from "../rules/webhook-exposure.ts";
import { A2APushTargets, deliverPushes } from "./a2a-push.ts";

/** What the agent object asks of its account's directory. */
export interface AccountWebhookSource {
  accountWebhook(): Promise<WebhookConfig | null>;
}

export class AgentWebhooks {
  readonly outbox: WebhookOutbox;
  /** A2A push targets of the agent's tasks: their pushes wait in the same outbox (a2a-push.ts). */
  readonly push: A2APushTargets;
  private readonly own: WebhookConfigStore;
  /** The account's webhook as last fetched (null: never fetched by this instance). */
  private account: { config: WebhookConfig | null; at: number } | null = null;
  private fetching: Promise<boolean> | null = null;
  /** Events claimed by this instance whose answers are not recorded yet (at most WEBHOOK.batch). */
  private sending = 0;

  /**
   * `clock`: the object's own (SocketObject.now), read by deliveries that finish after their event;
   * `allowPrivate`: BATON_WEBHOOK_ALLOW_PRIVATE is "true" (a stored URL is checked again at each delivery).
   */
  constructor(
    sql: SqlStorage, private readonly source: () => AccountWebhookSource | null, private readonly clock: () => number,
    private readonly post: Sender = (url, init) => fetch(url, init), private readonly allowPrivate = false,
  ) {
    this.own = new WebhookConfigStore(sql);
    this.outbox = new WebhookOutbox(sql);
    this.push = new A2APushTargets(sql, this.outbox);
  }

  /**
   * The one door for events: queued for delivery unless no webhook can receive it (none of the
   * agent's own and the account's, fetched within WEBHOOK.accountCacheMs, is none either).
   */
  enqueue(facts: WebhookFacts, now: number): void {
    if (this.keeps(now)) this.outbox.enqueue(facts, now);
  }

  /** Whether an event made now is kept: false when the agent has no webhook and, as fetched within WEBHOOK.accountCacheMs, neither has its account. */
  private keeps(now: number): boolean {
    return !(this.own.get() === null && this.account !== null && this.account.config === null && now - this.account.at < WEBHOOK.accountCacheMs);
  }

  /** What a plan needs to wake the outbox in time and keep its events: its next due event, whether an event made now is kept and sent at once, the outage. */
  snapshot(now: number): AgentSnapshot["webhooks"] {
    const keeps = this.keeps(now);
    const free = claimRoom(this.sending) > 0;
    return {
      dueAt: this.dueAt(now), sendsNow: keeps && free, keeps, outage: this.outbox.outage(), noHolderAfterMs: this.target()?.config.noHolderAfterMs ?? null,
      push: { tasks: this.push.tasks(), sendsNow: free },
    };
  }

  /**
   * The outage as the plan left it; `askAccount` (one begins unreported): the threshold must be
   * known, so the account's webhook is fetched, resolving true when it changed what is known.
   */
  outageChanged(outage: Outage, askAccount: boolean, now: number): Promise<boolean> | null {
    this.outbox.saveOutage(outage);
    return askAccount ? this.needAccount(now) : null;
  }

  /** Whether the agent's webhook or the account's (as last known) applies, and its no-holder threshold. */
  private target(): { scope: "agent" | "account"; config: WebhookConfig } | null {
    const own = this.own.get();
    if (own !== null) return { scope: "agent", config: own };
    return this.account?.config ? { scope: "account", config: this.account.config } : null;
  }

  /** After a restart: an outage still unreported needs the account's threshold when the agent has no webhook of its own (as an outage the plan begins). */
  resume(now: number): Promise<boolean> | null {
    const outage = this.outbox.outage();
    return outage.since !== null && !outage.notified ? this.needAccount(now) : null;
  }

  /**
   * When this object must wake for its webhooks: the next due event, or the no-holder report.
   * While WEBHOOK.batch deliveries are in flight no more can start now, so the outbox wakes at its
   * next time still ahead, at the latest when the in-flight marks lapse: the end of a delivery
   * plans sooner (AgentCoordinator.sendWebhooks), and after a restart mid-flight that wake sends
   * them again.
   */
  dueAt(now: number): number | null {
    // Only the time the rule reads is read: the next due event, or while no slot is free the next one still ahead.
    const full = claimRoom(this.sending) === 0;
    return outboxWake({
      sending: this.sending, nextDue: full ? null : this.outbox.nextDue(), nextAfterNow: full ? this.outbox.nextDueAfter(now) : null,
      outage: this.outbox.outage(), noHolderAfterMs: this.target()?.config.noHolderAfterMs ?? null,
    });
  }

  /**
   * Claims the events due now, as many as may still start (WEBHOOK.batch in flight at most): each
   * is marked in flight in the outbox (WEBHOOK.inFlightMs), so nothing sends it twice at once.
   */
  claimDue(now: number): OutboxEvent[] {
    const room = claimRoom(this.sending);
    if (room === 0) return [];
    const due = this.outbox.claimDue(now, room);
    this.sending += due.length;
    return due;
  }

  /**
   * Sends claimed events to the agent's webhook, else the account's, and records each answer.
   * Nobody deciding leases or deadlines waits for it: the alarm starts it and returns. Events due
   * while no webhook is configured are discarded; while the account's cannot be read, they wait.
   */
  async deliver(due: readonly OutboxEvent[], who: { account: string; agent: string }): Promise<void> {
    try {
      // A push goes to its task's target whatever webhook there is (or none).
      const events = due.filter((e) => e.target === null);
      const pushes = due.filter((e) => e.target !== null);
      await Promise.all([
        events.length > 0 ? this.send(events, who) : null,
        pushes.length > 0 ? deliverPushes(this.outbox, pushes, this.post, this.clock, this.allowPrivate) : null,
      ]);
    } finally {
      this.sending -= due.length;
    }
  }

  private async send(due: readonly OutboxEvent[], who: { account: string; agent: string }): Promise<void> {
    const plan = planDelivery(await this.receiver(), this.clock());
    switch (plan.action) {
      case "postpone":
        return this.outbox.postpone(due, plan.at);
      case "discard":
        return this.outbox.discard(due);
      case "refuse":
        return this.outbox.refuse(due, plan.error, this.clock());
      case "send": {
        const now = this.clock();
        const config = plan.config;
        return this.outbox.deliver(due, { url: config.url, secrets: liveSecrets(config, now), origin: config.origin, ...who }, this.post, this.clock);
      }
    }
  }

  /**
   * Who receives a delivery: the agent's own webhook, else the account's, asked afresh for every
   * delivery (a changed URL, a revoked secret or a removal applies to this one); with its URL
   * checked again against the exposure rules (one stored before they changed is refused).
   */
  private async receiver(): Promise<DeliveryTarget<WebhookConfig>> {
    let config = this.own.get();
    if (config === null) {
      const fetched = await this.fetchAccount();
      if (!fetched.answered) return { answered: false };
      config = fetched.config;
    }
    return { answered: true, config, refused: config === null ? null : webhookTargetRefusal(config.url, this.allowPrivate) };
  }

  /** Fetches the account's webhook when what is known is older than WEBHOOK.accountCacheMs (one fetch at a time). */
  private needAccount(now: number): Promise<boolean> | null {
    return this.own.get() === null ? this.refreshAccount(now) : null;
  }

  /** True when the fetch changed what is known (the first one always does). */
  private async refreshAccount(now: number): Promise<boolean> {
    if (this.account !== null && now - this.account.at < WEBHOOK.accountCacheMs) return false;
    this.fetching ??= this.fetchAccount().then((r) => r.changed).finally(() => (this.fetching = null));
    return this.fetching;
  }

  /**
   * Asks the directory now and keeps the answer; `answered` false when it could not be asked
   * (what was known stays, and the next need asks again). A delivery calls this itself rather
   * than join a fetch in flight, which may have started before a change.
   */
  private async fetchAccount(): Promise<{ answered: true; config: WebhookConfig | null; changed: boolean } | { answered: false; changed: false }> {
    const source = this.source();
    if (source === null) return { answered: false, changed: false };
    try {
      const before = JSON.stringify(this.account?.config ?? null);
      const config = await source.accountWebhook();
      const first = this.account === null;
      this.account = { config, at: this.clock() };
      return { answered: true, config, changed: first || JSON.stringify(config) !== before };
    } catch {
      return { answered: false, changed: false };
    }
  }

  // ---- The agent's own webhook (the Worker's routes call these through the object) ----

  view(agent: string, now: number): WebhookView | null {
    const own = this.own.get();
    return own === null ? null : webhookView(own, agent, now);
  }

  set(body: WebhookConfigBody, origin: string, agent: string, now: number): WebhookView {
    return this.own.put(body, origin, agent, now);
  }

  /** A signed `webhook.test` event for the agent's own webhook (null: it has none), for the Worker to send. */
  async testRequest(who: { account: string; agent: string }, now: number): Promise<SignedRequest | null> {
    const own = this.own.get();
    return own === null ? null : testRequest(own, who, now);
  }

  delete(): boolean {
    return this.own.delete();
  }

  /** What presence shows: which webhook, its host only, and how deliveries go. */
  report(): WebhookReport {
    const target = this.target();
    const s = this.outbox.stats();
    return {
      configured: target?.scope ?? null,
      host: target ? webhookHost(target.config.url) : null,
      pending: this.outbox.pending(),
      next_retry_at: this.outbox.nextDue(),
      last_attempt_at: s.lastAttemptAt,
      last_status: s.lastStatus,
      last_error: s.lastError,
      delivered: s.delivered,
      failed_attempts: s.failedAttempts,
      dropped: s.dropped,
    };
  }
}
