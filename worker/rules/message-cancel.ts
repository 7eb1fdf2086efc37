// Cancelling a message, as a pure rule over its lease record: a person (or a policy) stops it
// wherever it is. Queued and parked messages end at once and never run; a running one ends too,
// and its runner is named so the plan tells it to stop. `cancelled` is final: its token stays the
// message's, so every later write of the stopped run is refused as `cancelled` (checkMessageWrite),
// and no take-back, deadline, retry or redelivery ever moves it again.
import type { MessageLease } from "./message-lease.ts";
import { enter, LIFECYCLE } from "./message-lifecycle.ts";

export type CancelVerdict =
  /** Cancelled now; `stop`: the run that must stop (its runner and token), null when it was not running. */
  | { outcome: "cancelled"; message: MessageLease; stop: { runner: string; token: number } | null }
  /** Cancelled before: the first cancel stands, nothing changes. */
  | { outcome: "already"; message: MessageLease }
  /** It ended otherwise first (acknowledged, failed, rejected): too late to cancel. */
  | { outcome: "refused"; code: "message_finished"; message: string };

export function cancel(m: MessageLease): CancelVerdict {
  const next = LIFECYCLE[m.status].cancel;
  if (next !== null && "stays" in next) return { outcome: "already", message: m };
  if (next === null || "refuse" in next) {
    return { outcome: "refused", code: "message_finished", message: `message ${m.id} is ${m.status}: it ended before the cancel, so there is nothing to cancel` };
  }
  const stop = m.status === "running" && m.runner !== null ? { runner: m.runner, token: m.token } : null;
  const settled = { runner: null, expiresAt: null, capAt: null, retryAt: null, pendingAsk: null, onDeadline: null, parkMs: null };
  return { outcome: "cancelled", message: enter(m, "cancel", { ...m, ...settled, status: "cancelled" as const }), stop };
}
