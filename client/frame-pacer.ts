// Paces a connection's requests into the coordinator's frame rate (LIMITS.framesPerSecond per
// connection, less room for pings and acks sent outside requests), in call order: a burst of
// quick steps waits for room instead of being refused with rate_limited.
import { LIMITS } from "../worker/wire/protocol.ts";

const RATE_WINDOW_MS = 1000;
const PACED_REQUESTS = LIMITS.framesPerSecond - 10;

export class FramePacer {
  /** When each of the last second's requests went out, and the requests waiting for room (in call order). */
  private sentAt: number[] = [];
  private readonly waiting: (() => void)[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly now: () => number) {}

  /** Runs `send` once it fits the rate window (at once when it does). */
  paced(send: () => void): void {
    this.waiting.push(send);
    this.drain();
  }

  /** The connection is gone: the window starts afresh, and every waiting send runs now (and finds no connection). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.sentAt = [];
    for (const send of this.waiting.splice(0)) send();
  }

  private drain(): void {
    if (this.timer) return;
    while (this.waiting.length > 0) {
      const now = this.now();
      while (this.sentAt.length > 0 && this.sentAt[0]! <= now - RATE_WINDOW_MS) this.sentAt.shift();
      if (this.sentAt.length >= PACED_REQUESTS) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.drain();
        }, this.sentAt[0]! + RATE_WINDOW_MS - now);
        return;
      }
      this.sentAt.push(now);
      this.waiting.shift()!();
    }
  }
}
