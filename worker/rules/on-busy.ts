// What a new message does while its group is busy: the agent's on_busy policy as a pure rule over
// the open messages of the new message's group. Messages without a group form one group in
// `single` mode; in `pool` mode they are independent work that runs side by side, so the policy
// leaves them alone (they queue). The agent object asks before it stores the message, then applies
// the verdict through one plan.
//
//   queue      as before: it waits its turn
//   reject     refused (409 busy, naming the message that holds the group) while one is queued or running; nothing is stored
//   interrupt  the running message of the group is cancelled ("interrupted by message N") and the new one runs next; queued older ones stay queued
//   replace    queued, never-started messages of the group end `superseded` (by N); a running one finishes;
//              with a debounce, the new message is held that long, so a burst becomes one run, but
//              never past the ceiling counted from the burst's first message (debounceUntil)
import { triesOf, type MessageLease } from "./message-lease.ts";
import { enter, LIFECYCLE } from "./message-lifecycle.ts";
import type { OnBusy, PolicyMode } from "../wire/enums.ts";
import { LIMITS } from "../wire/protocol.ts";

export type { OnBusy };

export interface BusyPolicy {
  mode: PolicyMode;
  onBusy: OnBusy;
  /** With replace: how long a new message is held before it may run (null: not held), and at most after its burst's first (null: the default). */
  debounceMs: number | null;
  debounceMaxMs: number | null;
}

export type BusyVerdict =
  /**
   * Store the new message; cancel `interrupt` (running), supersede `supersede` (queued, never
   * started); hold it until `holdUntil` (null: not held), `heldSince` the burst's first post (null:
   * no debounce); `first`: it runs before older queued ones of its group.
   */
  | { action: "store"; interrupt: MessageLease[]; supersede: MessageLease[]; holdUntil: number | null; heldSince: number | null; first: boolean }
  | { action: "refuse"; code: "busy"; holder: number; message: string };

/**
 * What of the group a policy decides on, read whole (never a window of it, however long the queue):
 * each status's open messages of the group (oldest first), only the never-started ones, or only the
 * oldest of each status. Questions for a person are never read: they are never busy nor make a group busy.
 */
export interface BusyRead {
  statuses: readonly ("queued" | "running")[];
  neverStarted: boolean;
  oldestOnly: boolean;
}

/** What decideOnBusy needs to read of the post's group, or null when it will act on nothing there (queue; a pool's ungrouped work). */
export function busyRead(policy: BusyPolicy, groupName: string | null): BusyRead | null {
  if (groupName === null && policy.mode === "pool") return null;
  switch (policy.onBusy) {
    case "queue":
      return null;
    case "reject":
      return { statuses: ["queued", "running"], neverStarted: false, oldestOnly: true };
    case "interrupt":
      return { statuses: ["running"], neverStarted: false, oldestOnly: false };
    case "replace":
      return { statuses: ["queued"], neverStarted: true, oldestOnly: false };
  }
}

const store = (): BusyVerdict => ({ action: "store", interrupt: [], supersede: [], holdUntil: null, heldSince: null, first: false });

/** `group`: the messages of the new message's group that busyRead asked for, as stored. */
export function decideOnBusy(policy: BusyPolicy, group: readonly MessageLease[], groupName: string | null, now: number): BusyVerdict {
  // A pool runs ungrouped messages in parallel: one of them is no reason to refuse, cancel or replace another.
  if (groupName === null && policy.mode === "pool") return store();
  const named = groupName === null ? "the agent (messages without a group) is" : `group ${JSON.stringify(groupName)} is`;
  switch (policy.onBusy) {
    case "queue":
      return store();
    case "reject": {
      const holder = group.filter((m) => m.status === "queued" || m.status === "running").sort((a, b) => a.id - b.id)[0];
      if (!holder) return store();
      return { action: "refuse", code: "busy", holder: holder.id, message: `${named} busy: message ${holder.id} is ${holder.status} (on_busy reject); nothing was stored` };
    }
    case "interrupt": {
      // The message that interrupted its group runs next, before older queued ones (which stay queued).
      const interrupt = group.filter((m) => m.status === "running");
      return { action: "store", interrupt, supersede: [], holdUntil: null, heldSince: null, first: interrupt.length > 0 };
    }
    case "replace": {
      const supersede = group.filter((m) => m.status === "queued" && triesOf(m) === 0);
      if (policy.debounceMs === null || policy.debounceMs <= 0) return { action: "store", interrupt: [], supersede, holdUntil: null, heldSince: null, first: false };
      // The burst began with the first held message this one ends the line of.
      // A loop, not Math.min(...): the group is read whole, and a spread of ~130k arguments throws.
      const heldSince = supersede.reduce((since, m) => Math.min(since, m.heldSince ?? now), now);
      return { action: "store", interrupt: [], supersede, holdUntil: debounceUntil(policy, heldSince, now), heldSince, first: false };
    }
  }
}

/** The ceiling over a burst: debounceMaxMs, else LIMITS.debounceMaxMs.defaultTimesDebounce times the debounce. */
export function debounceCeilingMs(policy: Pick<BusyPolicy, "debounceMs" | "debounceMaxMs">): number | null {
  if (policy.debounceMs === null || policy.debounceMs <= 0) return null;
  return policy.debounceMaxMs ?? LIMITS.debounceMaxMs.defaultTimesDebounce * policy.debounceMs;
}

/**
 * Until when a message posted at `now` is held: the debounce, but never past the ceiling counted
 * from the burst's first post, so a steady trickle still runs (null: not held, it may run at once).
 */
export function debounceUntil(policy: Pick<BusyPolicy, "debounceMs" | "debounceMaxMs">, heldSince: number, now: number): number | null {
  const ceiling = debounceCeilingMs(policy);
  if (ceiling === null) return null;
  const until = Math.min(now + policy.debounceMs!, heldSince + ceiling);
  return until > now ? until : null;
}

/** A queued message that never started, replaced by a newer one of its group: final, never runs. */
export function supersede(m: MessageLease): MessageLease | null {
  if ("stays" in (LIFECYCLE[m.status].supersede ?? {}) || triesOf(m) !== 0) return null;
  return enter(m, "supersede", { ...m, status: "superseded" as const, runner: null, expiresAt: null, capAt: null, retryAt: null, onDeadline: null, parkMs: null });
}
