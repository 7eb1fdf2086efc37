// Session-lease rules as pure functions over a plain record and `now` (ms). The shard object
// loads a key's record, calls one of these, stores the returned record and answers; nothing here
// touches storage, the network or the clock.
import { LIMITS } from "../wire/protocol.ts";
import { checkWrite, nextFence } from "./fencing.ts";

/** What one (account, session) key remembers. `lastFence` survives every release and expiry. */
export interface SessionLeaseState {
  lastFence: number;
  lease: SessionLease | null;
}

export interface SessionLease {
  runId: string;
  fence: number;
  grantedAt: number;
  expiresAt: number;
  ttlSeconds: number;
}

export const DEFAULT_LEASE_TTL_SECONDS = LIMITS.leaseTtlSeconds.default;
export const EMPTY_SESSION_LEASE: SessionLeaseState = { lastFence: 0, lease: null };

/**
 * The record of a key its shard does not remember (never seen, or pruned after it idled out).
 * `fenceFloor` is at least every fence the shard ever handed out for a key it later forgot, so
 * the key's next grant is above any fence it had: fences only grow, even across pruning.
 */
export function forgottenKey(fenceFloor: number): SessionLeaseState {
  return fenceFloor === 0 ? EMPTY_SESSION_LEASE : { lastFence: fenceFloor, lease: null };
}

/**
 * Which of `shards` objects owns the (account, session) key: FNV-1a (32 bit) of both names,
 * modulo the count. Stable for a given count; a different count moves most keys elsewhere.
 */
export function shardOf(account: string, session: string, shards: number): number {
  let hash = 0x811c9dc5;
  const text = `${account}\u0000${session}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

/** Digits of a fence token: enough for every safe integer, so string order equals number order. */
const FENCE_TOKEN_DIGITS = 16;

/** The fence as a zero-padded decimal string: comparing two tokens as strings compares the fences. */
export function fenceToken(fence: number): string {
  return String(fence).padStart(FENCE_TOKEN_DIGITS, "0");
}

/** A lease is live strictly before its expiry instant; at `expiresAt` it is already gone. */
export function isLive(lease: SessionLease | null, now: number): lease is SessionLease {
  return lease !== null && now < lease.expiresAt;
}

export type AcquireResult =
  | { kind: "granted"; state: SessionLeaseState; lease: SessionLease }
  | { kind: "renewed"; state: SessionLeaseState; lease: SessionLease }
  | { kind: "held"; expiresAt: number };

/**
 * Grants the key when it is free or its lease has expired, with the next fence. The run that
 * already holds a live lease gets it renewed under the same fence. Anyone else is refused and
 * learns only when the live lease expires.
 */
export function acquire(state: SessionLeaseState, runId: string, ttlSeconds: number, now: number): AcquireResult {
  const current = state.lease;
  if (isLive(current, now)) {
    if (current.runId !== runId) return { kind: "held", expiresAt: current.expiresAt };
    const lease = extend(current, ttlSeconds, now);
    return { kind: "renewed", state: { ...state, lease }, lease };
  }
  const fence = nextFence(state.lastFence);
  const lease: SessionLease = { runId, fence, grantedAt: now, expiresAt: now + ttlSeconds * 1000, ttlSeconds };
  return { kind: "granted", state: { lastFence: fence, lease }, lease };
}

export type RenewResult =
  | { kind: "renewed"; state: SessionLeaseState; lease: SessionLease }
  | { kind: "lost" };

/**
 * Extends the run's lease only while it is live; an expired lease is never revived. Without a
 * TTL the lease keeps the one it was last granted or renewed with.
 */
export function renew(state: SessionLeaseState, runId: string, ttlSeconds: number | undefined, now: number): RenewResult {
  const current = state.lease;
  if (!isLive(current, now) || current.runId !== runId) return { kind: "lost" };
  const lease = extend(current, ttlSeconds ?? current.ttlSeconds, now);
  return { kind: "renewed", state: { ...state, lease }, lease };
}

/**
 * Ends the run's live lease and frees the key at once (the next acquire gets the next fence).
 * `released` is false when the run held nothing live: already released, expired, or another
 * run's lease, which stays untouched. An expired record is dropped either way.
 */
export function release(state: SessionLeaseState, runId: string, now: number): { released: boolean; state: SessionLeaseState } {
  const current = state.lease;
  if (isLive(current, now)) {
    if (current.runId !== runId) return { released: false, state };
    return { released: true, state: { ...state, lease: null } };
  }
  return { released: false, state: current === null ? state : { ...state, lease: null } };
}

/** True when `fence` belongs to the live lease (and to `runId`, when one is given). */
export function isCurrent(state: SessionLeaseState, fence: number, runId: string | undefined, now: number): boolean {
  const current = state.lease;
  const live = isLive(current, now);
  const holds = live && (runId === undefined || current.runId === runId);
  return checkWrite({ fence: live ? current.fence : state.lastFence, holds }, fence).ok;
}

function extend(lease: SessionLease, ttlSeconds: number, now: number): SessionLease {
  return { ...lease, expiresAt: now + ttlSeconds * 1000, ttlSeconds };
}
