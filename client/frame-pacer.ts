// Paces a connection's requests into the coordinator's frame rate (LIMITS.framesPerSecond per
// connection and LIMITS.frameCharsPerSecond of text, less room for pings and acks sent outside
// requests), in call order: a burst of quick steps, or a chatty run's output, waits for room
// instead of being refused with rate_limited.
import { LIMITS } from "../worker/wire/protocol.ts";

const RATE_WINDOW_MS = 1000;
const PACED_REQUESTS = LIMITS.framesPerSecond - 10;
// Half the coordinator's budget: its window is fixed and counts arrivals, so frames sent evenly can
// land bunched (a stalled network, a busy host); a refused frame names no request and its run would
// wait out the request timeout.
const PACED_CHARS = LIMITS.frameCharsPerSecond / 2;

export class FramePacer {
  /** When each of the last second's requests went out, and the requests waiting for room (in call order). */
  private sentAt: { at: number; chars: number }[] = [];
  private sentChars = 0;
  private readonly waiting: { send: () => void; chars: number }[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly now: () => number) {}

  /** Runs `send` (a frame of `chars` characters) once it fits the rate window (at once when it does). */
  paced(send: () => void, chars = 0): void {
    this.waiting.push({ send, chars: Math.min(chars, PACED_CHARS) });
    this.drain();
  }

  /** The connection is gone: the window starts afresh, and every waiting send runs now (and finds no connection). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.sentAt = [];
    this.sentChars = 0;
    for (const w of this.waiting.splice(0)) w.send();
  }

  private drain(): void {
    if (this.timer) return;
    while (this.waiting.length > 0) {
      const now = this.now();
      while (this.sentAt.length > 0 && this.sentAt[0]!.at <= now - RATE_WINDOW_MS) this.sentChars -= this.sentAt.shift()!.chars;
      const next = this.waiting[0]!;
      if (this.sentAt.length >= PACED_REQUESTS || this.sentChars + next.chars > PACED_CHARS) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.drain();
        }, this.sentAt[0]!.at + RATE_WINDOW_MS - now);
        return;
      }
      this.sentAt.push({ at: now, chars: next.chars });
      this.sentChars += next.chars;
      this.waiting.shift()!.send();
    }
  }
}
