// Reconnect delays: one function of a few named options. The delay for attempt n is
// minTimeout * factor^n, times a random factor in [1, 2) when randomized, never above maxTimeout.

export interface BackoffOptions {
  /** Delay before the first retry, in ms (before jitter). */
  minTimeout: number;
  /** Upper bound of any delay, in ms. */
  maxTimeout: number;
  /** Growth per attempt. */
  factor: number;
  /** Multiply each delay by a random factor in [1, 2) so machines do not reconnect in lockstep. */
  randomize: boolean;
}

export const DEFAULT_BACKOFF: BackoffOptions = { minTimeout: 250, maxTimeout: 15_000, factor: 2, randomize: true };

/** Delay in ms before reconnect attempt `attempt` (0 = first retry); never above maxTimeout. */
export function reconnectDelay(attempt: number, opts: BackoffOptions = DEFAULT_BACKOFF): number {
  if (opts.minTimeout > opts.maxTimeout) throw new Error("backoff minTimeout must not exceed maxTimeout");
  const jitter = opts.randomize ? 1 + Math.random() : 1;
  return Math.min(Math.round(jitter * Math.max(opts.minTimeout, 1) * opts.factor ** attempt), opts.maxTimeout);
}
