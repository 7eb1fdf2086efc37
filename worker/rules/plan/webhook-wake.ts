// When the webhook outbox must wake after this event: the events its message changes make (sent at
// once when a webhook keeps them and a delivery slot is free), the pushes they make to their
// tasks' A2A targets (rules/a2a-push.ts), and the agent.no_holder report of an
// outage a transition begins. The object sets one alarm for it with the rest (deadlines.ts), so
// nothing plans twice.
import { noHolderDueAt, outageAfter } from "../webhooks.ts";
import { pushOf, webhookOf } from "./effects.ts";
import type { Transition } from "../election.ts";
import type { AgentSnapshot, MessageChange } from "./types.ts";

/** Whether storing this change makes a webhook event (rules/webhooks.ts statusChangeEvent, or an escalation). */
export function makesWebhookEvent(c: MessageChange): boolean {
  return webhookOf(c) !== null;
}

/** Whether storing this change pushes to its task's targets (./effects.ts pushOf). */
export function makesPush(c: MessageChange, tasks: ReadonlySet<number>): boolean {
  return pushOf(c, tasks) !== null;
}

export function webhookWake(w: AgentSnapshot["webhooks"], changes: readonly MessageChange[], transition: Transition | null, holderLostAt: number, now: number): number | null {
  const outage = transition === null ? w.outage : outageAfter(w.outage, transition, holderLostAt);
  // A report already due is made by this very plan (./effects.ts), so it needs no wake of its own.
  const noHolder = noHolderDueAt(outage, w.noHolderAfterMs);
  const pushesNow = w.push !== undefined && w.push.sendsNow && changes.some((c) => makesPush(c, w.push!.tasks));
  const times = [w.dueAt, noHolder !== null && noHolder > now ? noHolder : null, (w.sendsNow && changes.some(makesWebhookEvent)) || pushesNow ? now : null];
  const known = times.filter((t): t is number => t !== null);
  return known.length ? Math.min(...known) : null;
}
