// The agent object's webhook outbox in its own SQLite: events wait here until a receiver answers
// 2xx, so they survive evictions and restarts (at least once; an event keeps its id on every
// retry). Enqueueing is one insert and never waits on the network; the object's alarm sends what
// is due (`send`) and records each answer. Also kept here: delivery counters for presence and
// /metrics, and the agent's current outage for `agent.no_holder`. Decisions are in
// ../rules/webhooks.ts.
import { planAttempt } from "../rules/webhook-outbox-plan.ts";
import { buildEvent, NO_OUTAGE, overBudget, WEBHOOK, type Outage, type WebhookFacts } from "../rules/webhooks.ts";
import { randomHex128 } from "./secrets.ts";
import { postSigned, type AttemptResult, type Sender } from "./webhook-delivery.ts";
import { signedHeaders } from "./webhook-signature.ts";
import { addMissingColumns, migrate, type Migration } from "./migrations.ts";
import * as z from "zod/mini";
import { WEBHOOK_EVENT_TYPES } from "../wire/webhooks.ts";
import { StoredJson } from "../rules/stored-json.ts";
import { reportCorrupt } from "./stored-read.ts";

export type { AttemptResult, Sender } from "./webhook-delivery.ts";

/** Where one A2A push goes (a2a-push.ts), copied into its outbox row. */
export interface PushDelivery {
  task: number;
  id: string;
  url: string;
  token: string;
  authorization: string | null;
}

/** A webhook event's facts: buildEvent adds its id, time and names; the type is what a reader relies on. */
const factsJson = new StoredJson<WebhookFacts>("webhook_outbox.facts", z.looseObject({ type: z.enum(WEBHOOK_EVENT_TYPES) }));
const targetJson = new StoredJson<PushDelivery>("webhook_outbox.target", z.object({
  task: z.number(), id: z.string(), url: z.string(), token: z.string(), authorization: z.nullable(z.string()),
}));

/** One pending event; `body` is fixed at its first attempt, so every retry sends the same bytes. */
export interface OutboxEvent {
  seq: number;
  eventId: string;
  type: string;
  createdAt: number;
  /** Null for a push (its body is fixed when it is queued). */
  facts: WebhookFacts | null;
  body: string | null;
  attempts: number;
  nextAt: number;
  /** A push to one task's target; null: an event for the agent's or account's webhook. */
  target: PushDelivery | null;
}

type OutboxRow = { seq: number; event_id: string; type: string; created_at: number; facts: string; body: string | null; attempts: number; next_at: number; target: string | null };

export interface DeliveryStats {
  delivered: number;
  failedAttempts: number;
  dropped: number;
  lastAttemptAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
}

/** Where and how an event is sent: the receiver's URL, the secrets that sign (rules/webhooks.ts liveSecrets), and the origin its link points to. */
export interface DeliveryTarget {
  url: string;
  secrets: readonly string[];
  origin: string;
  account: string;
  agent: string;
}

const OUTBOX_MIGRATIONS: Migration[] = [
  (sql) => {
    sql.exec(`CREATE TABLE IF NOT EXISTS webhook_outbox (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, type TEXT NOT NULL, created_at INTEGER NOT NULL,
      facts TEXT NOT NULL, body TEXT, attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL)`);
    sql.exec(`CREATE INDEX IF NOT EXISTS webhook_outbox_next ON webhook_outbox (next_at)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS webhook_stats (one INTEGER PRIMARY KEY CHECK (one = 1),
      delivered INTEGER NOT NULL DEFAULT 0, failed_attempts INTEGER NOT NULL DEFAULT 0, dropped INTEGER NOT NULL DEFAULT 0,
      last_attempt_at INTEGER, last_status INTEGER, last_error TEXT)`);
    sql.exec(`INSERT OR IGNORE INTO webhook_stats (one) VALUES (1)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS webhook_outage (one INTEGER PRIMARY KEY CHECK (one = 1), since INTEGER, notified INTEGER NOT NULL)`);
  },
  // 2: A2A pushes wait here beside webhook events, each with its own target.
  (sql) => addMissingColumns(sql, "webhook_outbox", { target: "TEXT" }),
];

export class WebhookOutbox {
  /** nextDue and outage as last read or written (undefined: not known); this class is their only writer, and every event's snapshot reads them. */
  private due: number | null | undefined = undefined;
  private outageNow: Outage | undefined = undefined;

  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "webhook_outbox", OUTBOX_MIGRATIONS);
  }

  /**
   * Queues one event, due at once; returns its id. A full outbox (WEBHOOK.maxPending) drops its
   * oldest events first and counts them as dropped.
   */
  enqueue(facts: WebhookFacts, now: number): string {
    this.makeRoom();
    const eventId = `evt_${randomHex128()}`;
    this.due = undefined;
    this.sql.exec(`INSERT INTO webhook_outbox (event_id, type, created_at, facts, next_at) VALUES (?, ?, ?, ?, ?)`,
      eventId, facts.type, now, factsJson.write(facts), now);
    return eventId;
  }

  /**
   * Queues one push to a task's target (copied, so a push queued before the target ended is still
   * sent), its body fixed now; the same budget as every event.
   */
  enqueuePush(type: string, body: string, target: PushDelivery, now: number): void {
    this.makeRoom();
    this.due = undefined;
    this.sql.exec(`INSERT INTO webhook_outbox (event_id, type, created_at, facts, body, next_at, target) VALUES (?, ?, ?, '{}', ?, ?, ?)`,
      `evt_${randomHex128()}`, type, now, body, now, targetJson.write(target));
  }

  /** A full outbox (WEBHOOK.maxPending) drops its oldest events for one more, counted as dropped. */
  private makeRoom(): void {
    const excess = overBudget(this.pending());
    if (excess === 0) return;
    this.sql.exec(`DELETE FROM webhook_outbox WHERE seq IN (SELECT seq FROM webhook_outbox ORDER BY seq LIMIT ?)`, excess);
    this.sql.exec(`UPDATE webhook_stats SET dropped = dropped + ?`, excess);
  }

  /** Forgets the pushes still waiting for one task's target (`id` null: every target of the task). */
  dropPushes(task: number, id: string | null): void {
    this.due = undefined;
    this.sql.exec(`DELETE FROM webhook_outbox WHERE target IS NOT NULL AND json_extract(target, '$.task') = ? AND (? IS NULL OR json_extract(target, '$.id') = ?)`, task, id, id);
  }

  /** Events waiting, pushes included. */
  pending(): number {
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM webhook_outbox`).one().n;
  }

  /** When the next event is due (null: none waits). */
  nextDue(): number | null {
    if (this.due === undefined) this.due = this.sql.exec<{ at: number | null }>(`SELECT MIN(next_at) AS at FROM webhook_outbox`).one().at ?? null;
    return this.due;
  }

  /** The first time an event is due after `now`: in-flight marks included (null: none). */
  nextDueAfter(now: number): number | null {
    return this.sql.exec<{ at: number | null }>(`SELECT MIN(next_at) AS at FROM webhook_outbox WHERE next_at > ?`, now).one().at ?? null;
  }

  /**
   * The events due now, oldest first, at most `limit`; each is held for WEBHOOK.inFlightMs, so
   * no other alarm sends it meanwhile, and an alarm cut short tries it again after that. A row
   * whose facts or target are corrupt is dropped (deleted, counted as dropped), never sent.
   */
  claimDue(now: number, limit: number = WEBHOOK.batch): OutboxEvent[] {
    this.due = undefined;
    const rows = this.sql.exec<OutboxRow>(
      `UPDATE webhook_outbox SET next_at = ? WHERE seq IN (SELECT seq FROM webhook_outbox WHERE next_at <= ? ORDER BY seq LIMIT ?) RETURNING *`,
      now + WEBHOOK.inFlightMs, now, limit,
    ).toArray();
    return rows.flatMap((r) => this.decode(r)).sort((a, b) => a.seq - b.seq);
  }

  private decode(r: OutboxRow): OutboxEvent[] {
    const target = r.target === null ? null : targetJson.read(r.target);
    // A push's body is fixed when queued; an event's facts are read until its first attempt fixes its body.
    const facts = target !== null || r.body !== null ? null : factsJson.read(r.facts);
    const corrupt = target?.ok === false ? target : facts?.ok === false ? facts : null;
    if (corrupt !== null) {
      reportCorrupt(corrupt.problem, `outbox event ${r.event_id} dropped`);
      this.sql.exec(`DELETE FROM webhook_outbox WHERE seq = ?`, r.seq);
      this.sql.exec(`UPDATE webhook_stats SET dropped = dropped + 1`);
      return [];
    }
    return [{
      seq: r.seq, eventId: r.event_id, type: r.type, createdAt: r.created_at, facts: facts?.ok ? facts.value : null, body: r.body,
      attempts: r.attempts, nextAt: r.next_at, target: target?.ok ? target.value : null,
    }];
  }

  /** Puts claimed events back, due at `at`, without counting an attempt (no receiver could be asked). */
  postpone(events: readonly OutboxEvent[], at: number): void {
    this.due = undefined;
    for (const e of events) this.sql.exec(`UPDATE webhook_outbox SET next_at = ? WHERE seq = ?`, at, e.seq);
  }

  /** Forgets claimed events nobody is configured to receive. */
  discard(events: readonly OutboxEvent[]): void {
    this.due = undefined;
    for (const e of events) this.sql.exec(`DELETE FROM webhook_outbox WHERE seq = ?`, e.seq);
  }

  /** Claimed events whose receiver may not be asked (its URL is refused now, `error` says why): each counts as a failed attempt, sent nowhere; `counted` as in record. */
  refuse(events: readonly OutboxEvent[], error: string, now: number, counted = true): void {
    for (const e of events) this.record(e, { status: null, error }, now, counted);
  }

  /** The event's body, built at its first attempt and kept, so every retry sends the same bytes. */
  bodyOf(e: OutboxEvent, target: DeliveryTarget): string {
    if (e.body !== null || e.facts === null) return e.body ?? "{}";
    const body = JSON.stringify(buildEvent(e.facts, {
      id: e.eventId, createdAt: e.createdAt, account: target.account, agent: target.agent, origin: target.origin,
    }));
    this.sql.exec(`UPDATE webhook_outbox SET body = ? WHERE seq = ?`, body, e.seq);
    return body;
  }

  /**
   * Sends each event once (in parallel, each bounded by WEBHOOK.timeoutMs) and records what
   * follows: delivered and gone, retried after the backoff, or dropped after a day.
   */
  async deliver(events: readonly OutboxEvent[], target: DeliveryTarget, send: Sender, now: () => number): Promise<void> {
    const bodies = events.map((e) => this.bodyOf(e, target));
    const results = await Promise.all(events.map(async (e, i) => {
      // The same body and event id every time; a fresh timestamp and signatures.
      const headers = await signedHeaders(e.eventId, e.type, bodies[i]!, target.secrets, now());
      return postSigned({ id: e.eventId, url: target.url, headers, body: bodies[i]! }, send);
    }));
    events.forEach((e, i) => this.record(e, results[i]!, now()));
  }

  /** Records one attempt's answer; `counted`: in the webhook's delivery figures (a push to a task's target is not). */
  record(e: OutboxEvent, result: AttemptResult, now: number, counted = true): void {
    const { attempts, verdict, counts } = planAttempt(e, result.status, now);
    this.due = undefined;
    if (counted) this.sql.exec(`UPDATE webhook_stats SET last_attempt_at = ?, last_status = ?, last_error = ?,
      delivered = delivered + ?, failed_attempts = failed_attempts + ?, dropped = dropped + ?`,
      now, result.status, result.error, counts.delivered, counts.failed, counts.dropped);
    if (verdict.kind === "retry") this.sql.exec(`UPDATE webhook_outbox SET attempts = ?, next_at = ? WHERE seq = ?`, attempts, verdict.at, e.seq);
    else this.sql.exec(`DELETE FROM webhook_outbox WHERE seq = ?`, e.seq);
  }

  stats(): DeliveryStats {
    const r = this.sql.exec<{ delivered: number; failed_attempts: number; dropped: number; last_attempt_at: number | null; last_status: number | null; last_error: string | null }>(
      `SELECT delivered, failed_attempts, dropped, last_attempt_at, last_status, last_error FROM webhook_stats`).one();
    return { delivered: r.delivered, failedAttempts: r.failed_attempts, dropped: r.dropped, lastAttemptAt: r.last_attempt_at, lastStatus: r.last_status, lastError: r.last_error };
  }

  outage(): Outage {
    if (this.outageNow === undefined) {
      const row = this.sql.exec<{ since: number | null; notified: number }>(`SELECT since, notified FROM webhook_outage`).toArray()[0];
      this.outageNow = row ? { since: row.since, notified: row.notified === 1 } : NO_OUTAGE;
    }
    return this.outageNow;
  }

  /** The outage as the plan decided it (rules/plan/effects.ts: a transition begins or ends one, agent.no_holder reports it). */
  saveOutage(o: Outage): void {
    this.sql.exec(`INSERT INTO webhook_outage (one, since, notified) VALUES (1, ?, ?)
      ON CONFLICT(one) DO UPDATE SET since = excluded.since, notified = excluded.notified`, o.since, o.notified ? 1 : 0);
    this.outageNow = o;
  }
}
