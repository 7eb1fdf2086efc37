// Reconnect delays: one function of a few named options. The delay for attempt n is
// minTimeout * factor^n, times a random factor in [1, 2) when randomized, never above maxTimeout,
// nor above holderMaxTimeout while the connection that dropped held the serve lease.

export interface BackoffOptions {
  /** Delay before the first retry, in ms (before jitter). */
  minTimeout: number;
  /** Upper bound of any delay, in ms. */
  maxTimeout: number;
  /** Growth per attempt. */
  factor: number;
  /** Multiply each delay by a random factor in [1, 2) so machines do not reconnect in lockstep. */
  randomize: boolean;
  /**
   * Upper bound, in ms, while the connection that dropped held the serve lease (default 4000).
   * A restarted coordinator keeps the lease for it only for its restart grace (10 s by default),
   * so it must not sleep through that in a long backoff; standbys have nothing to win back.
   */
  holderMaxTimeout?: number;
}

export const DEFAULT_HOLDER_MAX_TIMEOUT = 4000;

export const DEFAULT_BACKOFF: BackoffOptions = { minTimeout: 250, maxTimeout: 15_000, factor: 2, randomize: true };

/**
 * Delay in ms before reconnect attempt `attempt` (0 = first retry); never above maxTimeout, and
 * never above holderMaxTimeout when `wasHolder` (the dropped connection held the serve lease).
 */
export function reconnectDelay(attempt: number, opts: BackoffOptions = DEFAULT_BACKOFF, wasHolder = false): number {
  if (opts.minTimeout > opts.maxTimeout) throw new Error("backoff minTimeout must not exceed maxTimeout");
  const cap = wasHolder ? Math.min(opts.maxTimeout, opts.holderMaxTimeout ?? DEFAULT_HOLDER_MAX_TIMEOUT) : opts.maxTimeout;
  const jitter = opts.randomize ? 1 + Math.random() : 1;
  return Math.min(Math.round(jitter * Math.max(opts.minTimeout, 1) * opts.factor ** attempt), cap);
}
