// Fencing, shared by serve leases and session leases: who holds, how the fence grows, and who
// may write. Pure functions over plain data; the objects load the record and apply the verdict.
import type { ErrorCode } from "../wire/error-codes.ts";

/** A connection's claim on a serve lease, as its attachment records it. */
export interface Claim {
  claimSeq: number | null;
  released: boolean;
}

/** The one holder check: a connection holds when its live claim is the one the lease names. */
export function holdsLease(claim: Claim, lease: { holderClaim: number | null }): boolean {
  return claim.claimSeq !== null && !claim.released && claim.claimSeq === lease.holderClaim;
}

/** The fence a new holder gets: one more than the last ever handed out, so fences only grow. */
export function nextFence(lastFence: number): number {
  return lastFence + 1;
}

export type WriteVerdict = { ok: true } | { ok: false; code: Extract<ErrorCode, "stale_fence" | "not_holder">; message: string };

/**
 * The one write check: a write carries the fence it believes current, and only the current
 * holder writing with the current fence is accepted. A wrong fence is named first, since it
 * tells a former holder exactly what happened.
 */
export function checkWrite(current: { fence: number; holds: boolean }, presentedFence: number): WriteVerdict {
  if (presentedFence !== current.fence) {
    return { ok: false, code: "stale_fence", message: `fence ${presentedFence} is not the current fence ${current.fence}` };
  }
  if (!current.holds) return { ok: false, code: "not_holder", message: "this connection does not hold the lease" };
  return { ok: true };
}

/** The serve-lease write check: checkWrite with the holder check above. */
export function checkFencedWrite(lease: { fence: number; holderClaim: number | null }, writer: Claim, fence: number): WriteVerdict {
  return checkWrite({ fence: lease.fence, holds: holdsLease(writer, lease) }, fence);
}
