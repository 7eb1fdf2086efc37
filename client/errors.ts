// What can go wrong when talking to a coordinator, as named error classes a caller can test with
// instanceof. Messages are sentences for people; `code` is the coordinator's error code when it
// gave one.
import type { ErrorCode } from "../worker/wire/protocol.ts";

/** The coordinator answered, and refused. */
export class CoordinatorError extends Error {
  override readonly name = "CoordinatorError";
  constructor(
    message: string,
    /** The HTTP status, or 0 for a refusal on the WebSocket. */
    readonly status: number,
    readonly code: ErrorCode | null,
    /** Further fields of the refusal, e.g. `expires_at` of a held lease. */
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }
}

/** No answer: connection refused, DNS failure, timeout, or a body that is not the coordinator's. */
export class UnreachableError extends Error {
  override readonly name = "UnreachableError";
  constructor(message: string, readonly reason: string) {
    super(message);
  }
}

/** Another run holds the session lease (and waiting was not asked for, or timed out). */
export class LeaseHeldError extends Error {
  override readonly name = "LeaseHeldError";
  constructor(readonly session: string, readonly expiresAt: number | null) {
    super(expiresAt === null
      ? `the lease on ${session} is held by another run`
      : `the lease on ${session} is held by another run until ${new Date(expiresAt).toISOString()}`);
  }
}

/**
 * The lease ended before the work did: the coordinator refused a renewal or a fenced write
 * (`stale_fence`, `not_holder`, `lease_lost`, `lease_expired`, `stale_token`), took the message
 * back (`revoked`: its run timeout passed), or the local clock could no longer prove the lease. Work done under it must be treated as not done.
 */
export class LeaseLostError extends Error {
  override readonly name: string = "LeaseLostError";
  constructor(message: string, readonly code: ErrorCode | "lapsed" | "stopped" | "revoked") {
    super(message);
  }
}

/**
 * A person cancelled the message (`baton cancel`, the dashboard's Stop, POST …/cancel): the reason
 * `ctx.signal` aborted. `by` is the name of the token that cancelled, `reason` what its person said.
 * The message is `cancelled` for good; nothing this run writes any more is kept.
 */
export class MessageCancelledError extends LeaseLostError {
  override readonly name: string = "MessageCancelledError";
  constructor(readonly id: number, readonly by: string, readonly reason: string | null) {
    super(`message ${id} was cancelled by ${by}${reason ? `: ${reason}` : ""}`, "cancelled");
  }
}

/**
 * Thrown by `ctx.ask` once the message is parked with its question: the run ends here, and the
 * handler runs again from the top when a person answers (then `ask` returns the answer).
 */
export class WaitingForPersonError extends Error {
  override readonly name = "WaitingForPersonError";
  constructor(readonly id: number, readonly question: string) {
    super(`message ${id} waits for a person: ${question}`);
  }
}
