// Frames per second per connection: a pure counter with the clock passed in, so it is tested exactly.

/** Fixed-window frame counter per socket; in memory only, so a hibernation resets it, which is fine. */
export class FrameRateLimit {
  private readonly windows = new WeakMap<object, { start: number; count: number }>();
  constructor(private readonly perSecond: number) {}

  allow(ws: object, now: number): boolean {
    const w = this.windows.get(ws);
    if (!w || now - w.start >= 1000) {
      this.windows.set(ws, { start: now, count: 1 });
      return true;
    }
    w.count += 1;
    return w.count <= this.perSecond;
  }
}
