// Large values as pure rules. A value over the inline limit is uploaded to R2 by the run that made
// it and staged under that run's token; a journal write under the same, still current, token
// commits it. Uploads are budgeted per message in bytes and in count, reserved before a byte is
// stored, so no run can make a message cost more than the budget says, whatever it uploads.
//
//   (none) ──reserve──▶ uploading ──stored──▶ staged ──write under its token──▶ committed
//                            └── refused or failed: deleted     message pruned: all go to garbage

export type BlobState = "uploading" | "staged" | "committed";

export interface BlobRow {
  blob: string;
  token: number;
  bytes: number;
  state: BlobState;
}

export interface BlobBudget {
  bytes: number;
  count: number;
  perBlob: number;
}

export type ReserveDecision = { ok: true } | { ok: false; code: "too_large"; message: string };

/** May a run of this message reserve `bytes` more, given what the message's blobs hold already? */
export function decideReserve(existing: readonly Pick<BlobRow, "bytes">[], bytes: number, budget: BlobBudget): ReserveDecision {
  if (bytes > budget.perBlob) return { ok: false, code: "too_large", message: `a blob is at most ${budget.perBlob} bytes` };
  if (existing.length >= budget.count) return { ok: false, code: "too_large", message: `a message holds at most ${budget.count} blobs` };
  const used = existing.reduce((sum, b) => sum + b.bytes, 0);
  if (used + bytes > budget.bytes) return { ok: false, code: "too_large", message: `a message's blobs hold at most ${budget.bytes} bytes together` };
  return { ok: true };
}

/**
 * Why a write may not commit this blob under `token` (null: it may): only a staged blob of the same
 * token, and only once, so a blob belongs to one value and deleting that value's blob harms no other.
 */
export function commitRefusal(row: BlobRow | null, token: number): string | null {
  if (row === null) return "no such blob on this message";
  if (row.state === "uploading") return "the blob's upload has not finished";
  if (row.state === "committed") return "the blob is already committed to another value";
  if (row.token !== token) return "the blob was uploaded under another token";
  return null;
}
