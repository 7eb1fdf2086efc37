// The webhook outbox's choices, pure over plain data and `now`: how many due events an alarm may
// claim, what a claimed batch does once the receiver is known (sent, put back, discarded, or
// refused without a POST), when the outbox must wake, and what one attempt's answer leaves
// (./webhooks.ts afterAttempt: delivered, retried after the backoff, given up after a day). The
// object (objects/agent-webhooks.ts, webhook-outbox.ts) only applies what these return.
import { afterAttempt, noHolderDueAt, WEBHOOK, type AttemptVerdict, type Outage } from "./webhooks.ts";

/** How soon claimed events wait again when the account's webhook could not be read. */
export const ACCOUNT_RETRY_MS = 5_000;

/** How many due events may be claimed now: WEBHOOK.batch in flight at most. */
export function claimRoom(sending: number): number {
  return Math.max(0, WEBHOOK.batch - sending);
}

/** Where a claimed batch goes: `answered` false when the account's webhook could not be read; `config` the receiver (null: none). */
export type DeliveryTarget<C> =
  | { answered: false }
  | { answered: true; config: C | null; refused: string | null };

export type DeliveryPlan<C> =
  /** Put back, due at `at`, no attempt counted: no receiver could be asked. */
  | { action: "postpone"; at: number }
  /** Forgotten: nobody is configured to receive them. */
  | { action: "discard" }
  /** Each counts as a failed attempt, sent nowhere: the receiver's URL is refused now. */
  | { action: "refuse"; error: string }
  | { action: "send"; config: C };

/** What a claimed batch does once the receiver is known. */
export function planDelivery<C>(target: DeliveryTarget<C>, now: number): DeliveryPlan<C> {
  if (!target.answered) return { action: "postpone", at: now + ACCOUNT_RETRY_MS };
  if (target.config === null) return { action: "discard" };
  if (target.refused !== null) return { action: "refuse", error: `not sent: ${target.refused}` };
  return { action: "send", config: target.config };
}

/** One attempt recorded: its verdict and how the delivery counters move. */
export function planAttempt(event: { createdAt: number; attempts: number }, status: number | null, now: number): {
  attempts: number; verdict: AttemptVerdict; counts: { delivered: number; failed: number; dropped: number };
} {
  const attempts = event.attempts + 1;
  const verdict = afterAttempt({ createdAt: event.createdAt, attempts }, status, now);
  const delivered = verdict.kind === "delivered" ? 1 : 0;
  return { attempts, verdict, counts: { delivered, failed: 1 - delivered, dropped: verdict.kind === "dropped" ? 1 : 0 } };
}

/**
 * When the outbox must wake: its next due event, or the no-holder report. While WEBHOOK.batch
 * deliveries are in flight no more can start now, so it wakes at its next time still ahead
 * (`nextAfterNow`), at the latest when the in-flight marks lapse.
 */
export function outboxWake(o: { sending: number; nextDue: number | null; nextAfterNow: number | null; outage: Outage; noHolderAfterMs: number | null }): number | null {
  const noHolder = noHolderDueAt(o.outage, o.noHolderAfterMs);
  const next = o.sending >= WEBHOOK.batch ? o.nextAfterNow : o.nextDue;
  return next === null ? noHolder : noHolder === null ? next : Math.min(next, noHolder);
}
