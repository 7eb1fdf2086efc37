// Who may write: a pure check over the stored lease and the writer's claim. A write carries the
// fence it believes current; anything but the current holder with the current fence is refused.
import type { LeaseRecord } from "./election.ts";
import type { ErrorCode } from "../wire/protocol.ts";

export interface Writer {
  claimSeq: number | null;
  released: boolean;
}

export type WriteVerdict = { ok: true } | { ok: false; code: Extract<ErrorCode, "stale_fence" | "not_holder">; message: string };

export function checkFencedWrite(lease: LeaseRecord, writer: Writer, fence: number): WriteVerdict {
  if (fence !== lease.fence) {
    return { ok: false, code: "stale_fence", message: `fence ${fence} is not the current fence ${lease.fence}` };
  }
  const holds = writer.claimSeq !== null && !writer.released && writer.claimSeq === lease.holderClaim;
  if (!holds) return { ok: false, code: "not_holder", message: "this connection does not hold the lease" };
  return { ok: true };
}
