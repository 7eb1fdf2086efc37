// Webhook decisions as pure functions over plain data, the clock passed in: which event a
// message's status change makes, when an agent without a holder is reported, how long a failed
// delivery waits, when one is given up, the text a signature covers and which secrets sign. The outbox
// (objects/webhook-outbox.ts) stores and sends; everything it decides comes from here.
import { countsPeople, quorumOf } from "./quorum.ts";
import type { Transition } from "./election.ts";
import type { MessageStatus } from "./message-lease.ts";
import type { OnDeadline } from "../wire/enums.ts";
import { WEBHOOK_LIMITS, type WebhookEvent } from "../wire/webhooks.ts";
import { cancelJson, questionJson, type CancelRecord } from "./message-json.ts";

export const WEBHOOK = {
  /** The wait after the first failed attempt; it doubles after each one, up to maxRetryMs. */
  firstRetryMs: 1000,
  maxRetryMs: 10 * 60_000,
  /** An event not delivered this long after it was made is dropped at its next failed attempt. */
  giveUpMs: 24 * 3_600_000,
  /** Events kept per agent; one more pushes out (drops) the oldest. */
  maxPending: 1000,
  /** Events sent by one alarm at most (in parallel); the rest go on the next, at once. */
  batch: 20,
  /** One attempt waits this long for an answer. */
  timeoutMs: 10_000,
  /** An event being sent is not due again before this, so nothing sends it twice at once. */
  inFlightMs: 15_000,
  /** How long an agent object trusts what it fetched of its account's webhook. */
  accountCacheMs: 30_000,
} as const;

/** An event as the outbox keeps it before it is sent: what happened, without id, origin or link. */
export type WebhookFacts = WebhookEvent extends infer E ? (E extends WebhookEvent ? Omit<E, "id" | "created_at" | "account" | "agent" | "link"> : never) : never;

/** What a status change needs of the message row. */
export interface MessageFacts {
  id: number;
  status: MessageStatus;
  text: string;
  attempts: number;
  /** Of the hand-outs since a person's latest retry, those a stopping runner gave back unstarted (absent: none). */
  declined?: number;
  /** Hand-outs before a person's latest retry (absent or 0: never retried). */
  retried_after?: number;
  /** Park deadline while parked. */
  expires_at: number | null;
  pending_ask: string | null;
  error: string | null;
  /** While parked: the question (JSON of the stored question, null: none asked) and what its deadline does. */
  question: string | null;
  on_deadline: OnDeadline | null;
  /** Once cancelled: who and why (JSON of the stored cancel record, see message-store.ts). */
  cancel?: string | null;
  /** Once superseded (on_busy replace): the message that replaced it. */
  superseded_by?: number | null;
}

/** The question a parked message asks, as events carry it. */
export function questionFacts(m: Pick<MessageFacts, "question" | "on_deadline">): {
  text: string | null; choices: string[]; on_deadline: OnDeadline; quorum?: { needs: number; reject_needs: number; approvers: string[] | null };
} {
  // A corrupt stored question reads as none asked, as the message store reads it (objects/message-row.ts questionOf, which logs it).
  const asked = m.question === null || m.question === undefined ? null : questionJson.valueOr(m.question, null);
  // Events go on a decision only (parked, escalated, failed...): an answer that does not decide a question several people decide sends none.
  const quorum = asked === null ? null : quorumOf(asked);
  return {
    text: asked?.text ?? null, choices: asked?.choices ?? [], on_deadline: m.on_deadline ?? "fail",
    ...(quorum !== null && countsPeople(quorum) ? { quorum: { needs: quorum.needs, reject_needs: quorum.rejectNeeds, approvers: quorum.approvers === null ? null : [...quorum.approvers] } } : {}),
  };
}

/** A question's deadline passed with escalate: people are told again, and it waits until its new deadline. */
export function escalationEvent(m: MessageFacts): WebhookFacts {
  return { type: "message.escalated", message: { ...messagePart(m), park_deadline: m.expires_at, question: questionFacts(m) } };
}

function messagePart(m: MessageFacts) {
  return {
    id: m.id, text_preview: m.text.slice(0, WEBHOOK_LIMITS.previewChars), text_truncated: m.text.length > WEBHOOK_LIMITS.previewChars, attempts: m.attempts,
    ...(m.retried_after ? { retried_after: m.retried_after } : {}), ...(m.declined ? { declined: m.declined } : {}),
  };
}

/** The events a message's own change makes. */
export type MessageEventType = "message.parked" | "message.outcome_unknown" | "message.failed" | "message.superseded" | "message.cancelled" | "message.escalated";

/**
 * Which event a message's status change makes, or null: moving to parked is `message.parked`, or
 * `message.outcome_unknown` when an effect's outcome is unknown (one event, not both); moving to
 * failed is `message.failed`. Staying in a status makes nothing. Decided by the plan, from the lease.
 */
export function statusChangeType(before: MessageStatus | string, after: Pick<MessageFacts, "status" | "pending_ask" | "superseded_by">): MessageEventType | null {
  if (before === after.status) return null;
  if (after.status === "parked") return after.pending_ask === null ? "message.parked" : "message.outcome_unknown";
  if (after.status === "failed") return "message.failed";
  if (after.status === "superseded" && after.superseded_by) return "message.superseded";
  if (after.status === "cancelled" && (before === "queued" || before === "running" || before === "parked")) return "message.cancelled";
  return null;
}

/** The facts of an event the plan picked (statusChangeType, or an escalation), from the message's row as stored. */
export function messageEvent(type: MessageEventType, before: MessageStatus | string, after: MessageFacts): WebhookFacts {
  const message = messagePart(after);
  switch (type) {
    case "message.escalated":
      return escalationEvent(after);
    case "message.parked":
      return { type, message: { ...message, park_deadline: after.expires_at, question: questionFacts(after) } };
    case "message.outcome_unknown":
      return { type, message: { ...message, park_deadline: after.expires_at, waiting_on: after.pending_ask ?? "" } };
    case "message.failed":
      return { type, message: { ...message, error: after.error } };
    case "message.superseded":
      return { type, message: { ...message, superseded_by: after.superseded_by ?? 0 } };
    case "message.cancelled": {
      // A corrupt cancel record reads as unknown, as the message store reads it (objects/message-row.ts cancelOf).
      const record: Partial<CancelRecord> = (after.cancel === null || after.cancel === undefined ? null : cancelJson.valueOr(after.cancel, null)) ?? {};
      return { type, message: { ...message, reason: record.reason ?? null, by: record.token ?? "unknown", via: record.via ?? "unknown", was: before as "queued" | "running" | "parked" } };
    }
  }
}

/** The event a message's status change makes (statusChangeType), with its facts, or null. */
export function statusChangeEvent(before: MessageStatus | string, after: MessageFacts): WebhookFacts | null {
  const type = statusChangeType(before, { ...after, superseded_by: after.superseded_by ?? null });
  return type === null ? null : messageEvent(type, before, after);
}

/** `agent.no_holder` for an outage that lasted past its threshold (`at`: when it became due). */
export function noHolderEvent(outage: Outage, at: number): WebhookFacts {
  return { type: "agent.no_holder", no_holder_since: outage.since!, after_seconds: Math.round((at - outage.since!) / 1000) };
}

/** An agent's time without a holder: since when (null: it has one), and whether it was reported. */
export interface Outage {
  since: number | null;
  notified: boolean;
}

export const NO_OUTAGE: Outage = { since: null, notified: false };

/**
 * The outage after a lease transition: one begins when the lease is left with nobody (at the
 * moment the holder was lost, `lostAt`, for a silent one), and ends with the next grant.
 */
export function outageAfter(prev: Outage, t: Pick<Transition, "at" | "toClaim" | "fromClaim">, lostAt: number): Outage {
  if (t.toClaim !== null) return NO_OUTAGE;
  if (prev.since !== null) return prev;
  return { since: Math.min(lostAt, t.at), notified: false };
}

/** When `agent.no_holder` is due for this outage (null: no outage, already reported, or no threshold known). */
export function noHolderDueAt(o: Outage, afterMs: number | null): number | null {
  if (o.since === null || o.notified || afterMs === null) return null;
  return o.since + afterMs;
}

/** The wait after the `failedAttempts`-th failed attempt: 1 s, 2 s, 4 s ... at most 10 min. */
export function retryDelayMs(failedAttempts: number): number {
  return Math.min(WEBHOOK.maxRetryMs, WEBHOOK.firstRetryMs * 2 ** Math.max(0, failedAttempts - 1));
}

export type AttemptVerdict = { kind: "delivered" } | { kind: "retry"; at: number } | { kind: "dropped" };

/**
 * What follows one attempt (`attempts` counts it): a 2xx answer delivers the event; anything else
 * (another status, no answer) retries after the backoff, unless the event is a day old, when it is dropped.
 */
export function afterAttempt(event: { createdAt: number; attempts: number }, status: number | null, now: number): AttemptVerdict {
  if (status !== null && status >= 200 && status < 300) return { kind: "delivered" };
  if (now - event.createdAt >= WEBHOOK.giveUpMs) return { kind: "dropped" };
  return { kind: "retry", at: now + retryDelayMs(event.attempts) };
}

/** How many of the oldest pending events one more pushes out of the outbox. */
export function overBudget(pending: number, max: number = WEBHOOK.maxPending): number {
  return Math.max(0, pending + 1 - max);
}

/** The text a Standard Webhooks v1 signature covers: the event id, the Unix time in seconds, the exact body, joined by dots. */
export function signatureBase(id: string, t: number, body: string): string {
  return `${id}.${t}.${body}`;
}

/** The `webhook-signature` header: `v1,<base64 HMAC-SHA256 of signatureBase>` per live secret, separated by spaces. */
export function signatureHeader(base64Macs: readonly string[]): string {
  return base64Macs.map((mac) => `v1,${mac}`).join(" ");
}

/** A webhook's secrets: the current one, and the one it replaced while that still signs beside it. */
export interface WebhookSecrets {
  secret: string;
  oldSecret: string | null;
  oldSecretExpiresAt: number | null;
}

/** The secrets that sign a delivery at `now`: the current one first, then the replaced one until its expiry. */
export function liveSecrets(s: WebhookSecrets, now: number): string[] {
  return s.oldSecret !== null && s.oldSecretExpiresAt !== null && now < s.oldSecretExpiresAt ? [s.secret, s.oldSecret] : [s.secret];
}

/**
 * The secrets after a PUT: the given one; else a new one for a new webhook or on `rotate`; else
 * the current one, unchanged. A new secret keeps the current one signing beside it for `keepMs`
 * (0: not at all); `made` is the secret baton made, shown once in the answer.
 */
export function secretsAfterPut(
  prev: WebhookSecrets | null, put: { secret?: string; rotate?: boolean; keepMs: number }, now: number, make: () => string,
): WebhookSecrets & { made: string | null } {
  const made = put.secret === undefined && (prev === null || put.rotate === true) ? make() : null;
  const secret = put.secret ?? made ?? prev!.secret;
  if (prev === null) return { secret, oldSecret: null, oldSecretExpiresAt: null, made };
  if (secret === prev.secret) return { secret, oldSecret: prev.oldSecret, oldSecretExpiresAt: prev.oldSecretExpiresAt, made };
  return put.keepMs > 0 ? { secret, oldSecret: prev.secret, oldSecretExpiresAt: now + put.keepMs, made } : { secret, oldSecret: null, oldSecretExpiresAt: null, made };
}

/** Where an event sends a person: the dashboard at the agent, and at the message when there is one. */
export function eventLink(origin: string, agent: string, messageId: number | null): string {
  const base = `${origin.replace(/\/+$/, "")}/#agent=${encodeURIComponent(agent)}`;
  return messageId === null ? base : `${base}&message=${messageId}`;
}

/** The event as delivered: its facts with id, time, who it is about and the link. */
export function buildEvent(facts: WebhookFacts, at: { id: string; createdAt: number; account: string; agent: string; origin: string }): WebhookEvent {
  const messageId = "message" in facts ? facts.message.id : "message_id" in facts ? facts.message_id : null;
  return { id: at.id, created_at: at.createdAt, account: at.account, agent: at.agent, link: eventLink(at.origin, at.agent, messageId), ...facts } satisfies WebhookEvent;
}

/** The `webhook.test` event `baton webhook test` sends: no facts, a link to the agent (or the dashboard, for the account's). */
export function testEvent(at: { id: string; createdAt: number; account: string; agent: string | null; origin: string }): WebhookEvent {
  const link = at.agent === null ? `${at.origin.replace(/\/+$/, "")}/` : eventLink(at.origin, at.agent, null);
  return { id: at.id, created_at: at.createdAt, account: at.account, agent: at.agent, link, type: "webhook.test" } satisfies WebhookEvent;
}

/** The host a report may show of a webhook URL (never its path, query or credentials). */
export function webhookHost(url: string): string | null {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
}
