// Per-connection budgets: frames and bytes per second, pure counters with the clock passed in, so
// they are tested exactly. In memory only: a hibernation resets them, which only ever forgives.

/** Fixed-window frame and byte counter per socket: a frame is allowed while both stay within the window's budget. */
export class FrameRateLimit {
  private readonly windows = new WeakMap<object, { start: number; count: number; bytes: number }>();
  constructor(private readonly perSecond: number, private readonly bytesPerSecond = Infinity) {}

  allow(ws: object, now: number, bytes = 0): boolean {
    let w = this.windows.get(ws);
    if (!w || now - w.start >= 1000) {
      w = { start: now, count: 0, bytes: 0 };
      this.windows.set(ws, w);
    }
    w.count += 1;
    w.bytes += bytes;
    return w.count <= this.perSecond && w.bytes <= this.bytesPerSecond;
  }
}

/**
 * A token bucket of bytes: holds up to `capacity`, refills at `perSecond`. `take` spends only when
 * the whole amount is there; otherwise it returns how long until it would be (ms) and spends nothing.
 */
export class ByteBucket {
  private tokens: number;
  private at: number | null = null;
  constructor(private readonly capacity: number, private readonly perSecond: number) {
    this.tokens = capacity;
  }

  take(bytes: number, now: number): { ok: true } | { ok: false; retryAfterMs: number } {
    if (this.at !== null) this.tokens = Math.min(this.capacity, this.tokens + ((now - this.at) * this.perSecond) / 1000);
    this.at = now;
    const need = Math.min(bytes, this.capacity);
    if (this.tokens >= need) {
      this.tokens -= need;
      return { ok: true };
    }
    return { ok: false, retryAfterMs: Math.ceil(((need - this.tokens) * 1000) / this.perSecond) };
  }

  /** Gives back what a taken amount did not use (a page came out smaller than reserved). */
  refund(bytes: number): void {
    this.tokens = Math.min(this.capacity, this.tokens + bytes);
  }
}

/** One ByteBucket per socket, created full on first use. */
export class BucketPerSocket {
  private readonly buckets = new WeakMap<object, ByteBucket>();
  constructor(private readonly capacity: number, private readonly perSecond: number) {}

  of(ws: object): ByteBucket {
    let b = this.buckets.get(ws);
    if (!b) {
      b = new ByteBucket(this.capacity, this.perSecond);
      this.buckets.set(ws, b);
    }
    return b;
  }
}
