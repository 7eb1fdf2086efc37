// Data kept under a session lease: who may write it, which keys exist, what one list page holds.
// Pure functions over plain data and `now`; the lease shard loads the key's lease record, asks
// checkDataWrite, and writes only on ok — ownership is the run id and fence attached to the write.
import type { ErrorCode } from "../wire/error-codes.ts";
import { isLive, type SessionLeaseState } from "./session-lease.ts";

export type DataWriteVerdict =
  | { ok: true }
  | { ok: false; code: Extract<ErrorCode, "stale_fence" | "not_holder" | "lease_expired">; message: string };

/**
 * The one check for a write of lease data: accepted only from the run that holds the live lease
 * now, by the shard's clock, presenting that lease's fence. A fence that is not the latest is
 * named first (a later holder exists), then an ended lease, then a run that is not the holder.
 */
export function checkDataWrite(state: SessionLeaseState, runId: string, fence: number, now: number): DataWriteVerdict {
  if (fence !== state.lastFence) {
    return { ok: false, code: "stale_fence", message: `fence ${fence} is not the current fence ${state.lastFence}: a later run took the lease` };
  }
  const lease = state.lease;
  if (!isLive(lease, now)) {
    return { ok: false, code: "lease_expired", message: `the lease under fence ${fence} expired or was released; acquire it again` };
  }
  if (lease.runId !== runId) return { ok: false, code: "not_holder", message: "this run does not hold the lease" };
  return { ok: true };
}

/**
 * The half-open key range [from, to) that holds exactly the keys starting with `prefix`. Keys are
 * printable ASCII (LEASE_DATA_KEY), so byte order is character order and \x7f is above them all.
 */
export function prefixRange(prefix: string): { from: string; to: string } {
  return { from: prefix, to: `${prefix}\x7f` };
}

export interface ListedRow {
  key: string;
  bytes: number;
  /** Kept inline (its bytes are in the row), or in R2 (fetched by key). */
  inline: boolean;
}

/**
 * How many of `rows` (in list order, one more than a page may hold when more exist) one page
 * returns: at most `maxEntries`, and inline values of at most `maxBytes` in all, but always at
 * least one row, so a listing always moves on. `more` is whether rows are left after the page.
 */
export function pageSize(rows: readonly ListedRow[], maxEntries: number, maxBytes: number): { take: number; more: boolean } {
  let take = 0;
  let bytes = 0;
  for (const row of rows) {
    if (take === maxEntries) break;
    const cost = row.inline ? row.bytes : 0;
    if (take > 0 && bytes + cost > maxBytes) break;
    bytes += cost;
    take++;
  }
  return { take, more: take < rows.length };
}

/** What one session's data holds: keys, and bytes inline and in R2 together. */
export interface DataUsage {
  keys: number;
  bytes: number;
}

export type BudgetVerdict = { ok: true; usage: DataUsage } | { ok: false; code: Extract<ErrorCode, "too_large">; message: string };

/**
 * Whether replacing a key's value (`oldBytes` null: the key is new) with one of `newBytes` keeps
 * the session within its budget; a write that does not grow the data always passes, so a session
 * over its budget (the budget was lowered) can still be rewritten smaller and deleted.
 */
export function checkDataBudget(usage: DataUsage, oldBytes: number | null, newBytes: number, budget: DataUsage): BudgetVerdict {
  const next = { keys: usage.keys + (oldBytes === null ? 1 : 0), bytes: usage.bytes - (oldBytes ?? 0) + newBytes };
  if (next.keys > usage.keys && next.keys > budget.keys) {
    return { ok: false, code: "too_large", message: `a session's data holds at most ${budget.keys} keys` };
  }
  if (next.bytes > usage.bytes && next.bytes > budget.bytes) {
    return { ok: false, code: "too_large", message: `a session's data holds at most ${budget.bytes} bytes` };
  }
  return { ok: true, usage: next };
}
