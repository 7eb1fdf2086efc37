// Serve-lease rules as pure functions over plain data. The Durable Object loads candidates,
// calls these, and applies the result; nothing here touches sockets, storage or the clock.
import type { PreferenceReason } from "./preference.ts";
import { nextFence } from "./fencing.ts";

export interface Candidate {
  claimSeq: number;
  machine: string;
  /** Server time (ms) of the last sign of life: a heartbeat or any frame. */
  lastHeartbeat: number;
}

export interface LeaseRecord {
  fence: number;
  holderClaim: number | null;
  holderMachine: string | null;
  since: number | null;
}

/** Why the lease moved; the preference reasons (preferred, drained, restored) are in preference.ts. */
export type TransitionReason = "claimed" | "closed" | "stale" | "released" | PreferenceReason;

export interface Transition {
  at: number;
  fromClaim: number | null;
  toClaim: number | null;
  fromMachine: string | null;
  toMachine: string | null;
  fence: number;
  reason: TransitionReason;
}

export const EMPTY_LEASE: LeaseRecord = { fence: 0, holderClaim: null, holderMachine: null, since: null };

export function isStale(c: Pick<Candidate, "lastHeartbeat">, now: number, ttlMs: number): boolean {
  return now - c.lastHeartbeat > ttlMs;
}

/**
 * When a connection last proved it is alive, by the coordinator's clock. `seen` is when the object
 * itself last processed a frame from it (or last accepted a proof); `autoPing` is the runtime's
 * timestamp of its latest auto-answered ping, which moves whenever a ping arrives, however late.
 * A standby's auto ping always counts: it holds nothing, so nothing is revived. The holder's counts
 * only when it came no later than its deadline (`seen + ttlMs`): a ping after the deadline never
 * revives the lease, however late the object gets to look at it.
 */
export function provenAlive(seen: number, autoPing: number | null, holder: boolean, ttlMs: number): number {
  if (autoPing === null || autoPing <= seen) return seen;
  if (holder && autoPing > seen + ttlMs) return seen;
  return autoPing;
}

/**
 * Applies an election result. The fence grows by one exactly when the lease passes to a new
 * holder, and never otherwise; losing the holder without a successor keeps the fence.
 */
export function applyElection(
  prev: LeaseRecord,
  winner: Candidate | null,
  now: number,
  reason: TransitionReason,
): { lease: LeaseRecord; transition: Transition | null } {
  const toClaim = winner?.claimSeq ?? null;
  if (toClaim === prev.holderClaim) return { lease: prev, transition: null };
  const fence = winner === null ? prev.fence : nextFence(prev.fence);
  const lease: LeaseRecord = winner === null
    ? { fence, holderClaim: null, holderMachine: null, since: null }
    : { fence, holderClaim: winner.claimSeq, holderMachine: winner.machine, since: now };
  const transition: Transition = {
    at: now, fromClaim: prev.holderClaim, toClaim, fromMachine: prev.holderMachine, toMachine: winner?.machine ?? null, fence, reason,
  };
  return { lease, transition };
}

/** The earliest moment any candidate can become stale, or null when there is nobody to watch. */
export function nextStaleDeadline(conns: readonly Pick<Candidate, "lastHeartbeat">[], ttlMs: number): number | null {
  let earliest: number | null = null;
  for (const c of conns) {
    const deadline = c.lastHeartbeat + ttlMs + 1;
    if (earliest === null || deadline < earliest) earliest = deadline;
  }
  return earliest;
}

/**
 * When to look at the holder next. Its auto-answered pings count only up to its deadline, and the
 * object sees just the latest one, so it looks halfway there while that is still ahead (folding in a
 * ping with half a TTL to spare), and otherwise just past the deadline, where a silent holder expires.
 */
export function holderCheckAt(proven: number, now: number, ttlMs: number): number {
  const halfway = proven + Math.floor(ttlMs / 2);
  return halfway > now ? halfway : proven + ttlMs + 1;
}
