// withSessionLease(session, fn): holds a session lease for exactly as long as fn runs. Acquires
// (or waits), renews at a third of the TTL on its own timer, aborts fn's signal the moment the
// lease is lost or can no longer be proven by the shared LeaseClock, and releases at the end.
import { LIMITS } from "../worker/wire/protocol.ts";
import { leaseGrantSchema, leaseCheckSchema, leaseReleasedSchema, type LeaseGrant } from "../worker/wire/http-responses.ts";
import { reconnectDelay, type BackoffOptions } from "./backoff.ts";
import { CoordinatorError, LeaseHeldError, LeaseLostError, UnreachableError } from "./errors.ts";
import { requestJson, type Connection } from "./http.ts";
import { LeaseClock } from "./lease-clock.ts";
import { systemClock } from "./core/clock.ts";
import { routePath } from "../worker/wire/routes.ts";

export interface SessionLease {
  readonly session: string;
  /** This holder's id: the capability that renews and releases. Keep it private. */
  readonly runId: string;
  /** Grows with every grant on this session: attach it to your writes. */
  readonly fence: number;
  /** The fence as a fixed-width string that sorts like the number (16 digits). */
  readonly fenceToken: string;
  /** When the coordinator expires the lease unless renewed (ms since the epoch, its clock); moves on each renewal. */
  readonly expiresAt: number;
  /** Aborted (with a LeaseLostError) the moment the lease is lost or cannot be proven any more. */
  readonly signal: AbortSignal;
  /** Asks the coordinator whether this fence is still the current holder's. */
  check(): Promise<boolean>;
  /**
   * Reports that the coordinator refused a write under this fence (baton-client/langgraph calls
   * it): the lease counts as lost, its signal aborts with `error`, and withSessionLease throws it.
   */
  refused(error: LeaseLostError): void;
}

export type SessionLeaseEvent =
  | { type: "waiting"; session: string; reason: "held" | "unreachable"; detail: string }
  | { type: "acquired"; session: string; runId: string; fence: number; fenceToken: string; expiresAt: number }
  | { type: "lost"; session: string; reason: "refused" | "lapsed" }
  | { type: "released"; session: string; released: boolean };

export interface SessionLeaseOptions extends Connection {
  /** Lease TTL in seconds (default 30); renewed every third of it. */
  ttlSeconds?: number;
  /** Wait while another run holds the lease (or the coordinator is unreachable) instead of failing. */
  wait?: boolean;
  /** With `wait`, give up after this many ms (LeaseHeldError). */
  waitTimeoutMs?: number;
  /** Aborting it aborts the lease's signal; the lease is released once fn settles. */
  signal?: AbortSignal;
  onEvent?: (event: SessionLeaseEvent) => void;
}

const WAIT_BACKOFF: BackoffOptions = { minTimeout: 100, maxTimeout: 2000, factor: 2, randomize: true };

/**
 * Runs fn while holding the session lease and returns what it returns. Blocks until the lease is
 * granted (or, without `wait`, throws LeaseHeldError at once). Throws LeaseLostError when the
 * lease ended before fn did, even if fn then returned: work done after that point is not fenced.
 * Throws CoordinatorError or UnreachableError when no grant could be had.
 */
export async function withSessionLease<T>(session: string, fn: (lease: SessionLease) => Promise<T> | T, options: SessionLeaseOptions): Promise<T> {
  const runId = crypto.randomUUID();
  const ttlSeconds = options.ttlSeconds ?? LIMITS.leaseTtlSeconds.default;
  const event = (e: SessionLeaseEvent) => options.onEvent?.(e);
  const { grant, sentAt } = await acquire(options, session, runId, ttlSeconds, event);
  event({ type: "acquired", session, runId, fence: grant.fence, fenceToken: grant.fence_token, expiresAt: grant.expires_at });

  const clock = new LeaseClock(grant.ttl_seconds * 1000);
  clock.confirmed(sentAt, systemClock.now());
  clock.hold(systemClock.now());
  const controller = new AbortController();
  let lost: LeaseLostError | null = null;
  let expiresAt = grant.expires_at;
  let finished = false;
  let renewTimer: ReturnType<typeof setTimeout> | undefined;
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;

  const lose = (reason: "refused" | "lapsed", error?: LeaseLostError): void => {
    if (lost || finished) return;
    lost = error ?? (reason === "refused"
      ? new LeaseLostError(`the coordinator refused to renew the lease on ${session}`, "lease_lost")
      : new LeaseLostError(`the lease on ${session} could not be renewed before it expired`, "lapsed"));
    clearTimeout(renewTimer);
    clearTimeout(deadlineTimer);
    event({ type: "lost", session, reason });
    controller.abort(lost);
  };
  const armDeadline = (): void => {
    clearTimeout(deadlineTimer);
    const deadline = clock.deadline;
    if (deadline === null) return lose("lapsed");
    deadlineTimer = setTimeout(() => {
      if (!clock.valid(systemClock.now())) lose("lapsed");
      else armDeadline();
    }, Math.max(0, deadline - systemClock.now()));
  };
  const renewEveryMs = (): number => (grant.ttl_seconds * 1000) / 3;
  const renew = async (): Promise<void> => {
    const sent = systemClock.now();
    try {
      const renewed = await requestJson(options, "POST", routePath("/leases/{session}/renew", { session }), leaseGrantSchema, {
        body: { run_id: runId }, timeoutMs: Math.max(1, (clock.deadline ?? sent) - sent),
      });
      if (lost || finished) return;
      clock.setTtl(renewed.ttl_seconds * 1000);
      expiresAt = renewed.expires_at;
      clock.confirmed(sent, systemClock.now());
      armDeadline();
    } catch (err) {
      if (err instanceof CoordinatorError && err.code === "lease_lost") return lose("refused");
      // unreachable or a transient refusal: keep trying until the deadline decides
    }
    if (!lost && !finished) renewTimer = setTimeout(renew, Math.max(0, sent + renewEveryMs() - systemClock.now()));
  };
  armDeadline();
  renewTimer = setTimeout(renew, renewEveryMs());
  const onOuterAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", onOuterAbort, { once: true });

  const lease: SessionLease = {
    session, runId, fence: grant.fence, fenceToken: grant.fence_token, signal: controller.signal,
    get expiresAt() {
      return expiresAt;
    },
    refused: (error) => {
      // A refusal says more than a lapse seen first on the local clock: it is what fn's caller gets.
      if (lost && !finished) lost = error;
      else lose("refused", error);
    },
    check: async () => (await requestJson(options, "POST", routePath("/leases/{session}/check", { session }), leaseCheckSchema, { body: { run_id: runId, fence: grant.fence } })).current,
  };
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await fn(lease) };
  } catch (error) {
    outcome = { ok: false, error };
  }
  finished = true;
  clearTimeout(renewTimer);
  clearTimeout(deadlineTimer);
  options.signal?.removeEventListener("abort", onOuterAbort);
  if (lost) throw lost;
  const released = await requestJson(options, "POST", routePath("/leases/{session}/release", { session }), leaseReleasedSchema, { body: { run_id: runId }, timeoutMs: 5000 })
    .then((r) => r.released, () => false);
  event({ type: "released", session, released });
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** The grant and the monotonic time its request was sent. */
async function acquire(
  options: SessionLeaseOptions, session: string, runId: string, ttlSeconds: number, event: (e: SessionLeaseEvent) => void,
): Promise<{ grant: LeaseGrant; sentAt: number }> {
  const started = systemClock.now();
  for (let attempt = 0; ; attempt++) {
    const sentAt = systemClock.now();
    let blocker: LeaseHeldError | UnreachableError;
    try {
      const grant = await requestJson(options, "POST", routePath("/leases/{session}/acquire", { session }), leaseGrantSchema, {
        body: { run_id: runId, ttl_seconds: ttlSeconds },
      });
      return { grant, sentAt };
    } catch (err) {
      if (err instanceof CoordinatorError && err.code === "lease_held") {
        const expiresAt = err.details.expires_at;
        blocker = new LeaseHeldError(session, typeof expiresAt === "number" ? expiresAt : null);
      } else if (err instanceof UnreachableError) {
        blocker = err;
      } else {
        throw err;
      }
    }
    const waited = systemClock.now() - started;
    const timedOut = options.waitTimeoutMs !== undefined && waited >= options.waitTimeoutMs;
    if (!options.wait || timedOut || options.signal?.aborted) {
      throw blocker;
    }
    if (attempt === 0) {
      event(blocker instanceof LeaseHeldError
        ? { type: "waiting", session, reason: "held", detail: blocker.message }
        : { type: "waiting", session, reason: "unreachable", detail: blocker.message });
    }
    const remaining = options.waitTimeoutMs === undefined ? Infinity : options.waitTimeoutMs - waited;
    await new Promise((r) => setTimeout(r, Math.min(reconnectDelay(attempt, WAIT_BACKOFF), remaining)));
  }
}
