// When the webhook outbox must wake after this event: the events its message changes make (sent at
// once when a webhook keeps them and a delivery slot is free), and the agent.no_holder report of an
// outage a transition begins. The object sets one alarm for it with the rest (deadlines.ts), so
// nothing plans twice.
import { noHolderDueAt, outageAfter, statusChangeEvent } from "../webhooks.ts";
import type { Transition } from "../election.ts";
import type { AgentSnapshot, MessageChange } from "./types.ts";

/** Whether storing this change makes a webhook event (rules/webhooks.ts statusChangeEvent, or an escalation). */
export function makesWebhookEvent(c: MessageChange): boolean {
  if (c.kind === "taken_back" && c.escalate) return true;
  if (c.lease === null) return false;
  const m = c.lease;
  return statusChangeEvent(c.before, {
    id: m.id, status: m.status, text: "", attempts: m.attempts, expires_at: m.expiresAt, pending_ask: m.pendingAsk, error: null, question: null,
    on_deadline: m.onDeadline, superseded_by: c.kind === "superseded" ? c.by : null,
  }) !== null;
}

export function webhookWake(w: AgentSnapshot["webhooks"], changes: readonly MessageChange[], transition: Transition | null, holderLostAt: number, now: number): number | null {
  const outage = transition === null ? w.outage : outageAfter(w.outage, transition, holderLostAt);
  const times = [w.dueAt, noHolderDueAt(outage, w.noHolderAfterMs), w.sendsNow && changes.some(makesWebhookEvent) ? now : null];
  const known = times.filter((t): t is number => t !== null);
  return known.length ? Math.min(...known) : null;
}
