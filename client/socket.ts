// One coordinator WebSocket that keeps itself alive: reconnects with backoff (saying why each
// attempt failed), sends heartbeats on its own timer (a third of the TTL, whatever else is
// running), reports when each answered ping was sent (for the lease clock), drops a connection
// whose pings go unanswered for a whole TTL even if no close ever arrives, and matches answers
// to requests by `req`.
import type { ClientFrame, ServerFrame } from "../worker/wire/protocol.ts";
import { LIMITS, PING_TEXT, PONG_TEXT } from "../worker/wire/protocol.ts";
import { parseServerFrame } from "../worker/wire/server-frames.ts";
import type { ReplyFrame } from "./core/writes.ts";
import { FramePacer } from "./frame-pacer.ts";
import { systemClock } from "./core/clock.ts";
import type { ProbeResult } from "./http.ts";
import { DEFAULT_BACKOFF, reconnectDelay, type BackoffOptions } from "./backoff.ts";
import { openSocket, OPEN, type WebSocketConstructor, type WebSocketLike } from "./websocket.ts";

export type { ReplyFrame };


export interface SocketListener {
  /** Connected; `dialedAt` is when the attempt began: the coordinator saw us no earlier. */
  open?(dialedAt: number): void;
  frame?(frame: ServerFrame): void;
  /** A pong arrived for the ping sent at `sentAt`. */
  pong?(sentAt: number): void;
  closed?(): void;
  /** The next attempt is scheduled; `attempt` counts consecutive failures (1 = first retry). */
  retrying?(attempt: number, delayMs: number, reason: string): void;
  /** The coordinator refused for a reason retrying cannot fix; no more attempts are made. */
  fatal?(error: Error): void;
}

export interface SocketOptions {
  WebSocket: WebSocketConstructor;
  url: string;
  token: string;
  /** Path after the URL, e.g. /agents/reviewer/serve?machine=m1 */
  path: string;
  listener: SocketListener;
  /** Explains a failed attempt (by plain HTTP, which says more than a failed upgrade does). */
  probe: () => Promise<ProbeResult>;
  backoff?: BackoffOptions;
  /** Heartbeat TTL until the coordinator's welcome says otherwise. */
  ttlMs?: number;
  /** Give up on a connection attempt that has not opened after this long. */
  openTimeoutMs?: number;
  now?: () => number;
}

interface Pending {
  resolve: (frame: ReplyFrame) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class CoordinatorSocket {
  private ws: WebSocketLike | null = null;
  private failures = 0;
  private stopped = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private pingTimer: ReturnType<typeof setInterval> | null = null;
  private pingsSentAt: number[] = [];
  private ttl: number;
  private readonly pending = new Map<string, Pending>();
  private readonly pacer: FramePacer;
  private reqCounter = 0;
  /** The fence this connection holds, per the last serve_lease frame; null while it does not hold. */
  private heldFence: number | null = null;
  /**
   * The last connection dropped while it held the serve lease, and no serve_lease frame has been
   * heard since: retries are capped at the backoff's holderMaxTimeout, to be back within the
   * coordinator's restart grace.
   */
  private lostHolding = false;
  private readonly now: () => number;

  constructor(private readonly opts: SocketOptions) {
    this.ttl = opts.ttlMs ?? 60_000;
    this.now = opts.now ?? systemClock.now;
    this.pacer = new FramePacer(this.now);
  }

  get ttlMs(): number {
    return this.ttl;
  }

  get isOpen(): boolean {
    return this.ws?.readyState === OPEN;
  }

  start(): void {
    this.connect();
  }

  /**
   * Sends a frame if the socket is open; returns false (and sends nothing) otherwise. A frame over
   * LIMITS.frameBytes throws instead of going out: the coordinator would refuse it, and one over the
   * runtime's 32 MiB cap would drop the connection without any answer.
   */
  send(frame: ClientFrame): boolean {
    if (!this.ws || this.ws.readyState !== OPEN) return false;
    const text = JSON.stringify(frame);
    if (new TextEncoder().encode(text).byteLength > LIMITS.frameBytes) throw new Error(`${frame.type} frame exceeds ${LIMITS.frameBytes} bytes; not sent`);
    this.ws.send(text);
    return true;
  }

  nextReq(): string {
    this.reqCounter += 1;
    return `r${this.reqCounter}`;
  }

  /**
   * Sends a frame carrying `req`; resolves with the result or error frame answering it. Rejects
   * when the socket is not open, closes first, or nothing answers within `timeoutMs`.
   */
  request(frame: ClientFrame & { req: string }, timeoutMs = 10_000): Promise<ReplyFrame> {
    return new Promise((resolve, reject) => {
      this.pacer.paced(() => {
        if (!this.send(frame)) return reject(new Error("not connected"));
        const timer = setTimeout(() => {
          this.pending.delete(frame.req);
          reject(new Error(`no answer to ${frame.type} within ${timeoutMs} ms`));
        }, timeoutMs);
        this.pending.set(frame.req, { resolve, reject, timer });
      }, frame.type === "output" ? JSON.stringify(frame).length : 0);
    });
  }

  /** Drops the current connection at once and dials again (the owner claims anew on open). */
  reconnectNow(): void {
    if (this.stopped) return;
    this.detach();
    this.failures = 0;
    this.connect();
  }

  /** Closes for good: no more reconnects. Resolves once the socket is closed (or after 1 s). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const ws = this.ws;
    if (!ws) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      ws.onclose = () => {
        clearTimeout(timer);
        resolve();
      };
      try {
        ws.close(1000, "client exiting");
      } catch {
        resolve();
      }
    });
    this.detach();
  }

  private connect(): void {
    this.retryTimer = null;
    const dialedAt = this.now();
    const ws = openSocket(this.opts.WebSocket, this.opts.url, this.opts.path, this.opts.token);
    this.ws = ws;
    let opened = false;
    const openTimer = setTimeout(() => ws.close(), this.opts.openTimeoutMs ?? 10_000);
    ws.onopen = () => {
      clearTimeout(openTimer);
      opened = true;
      this.pingsSentAt = [];
      this.restartHeartbeat();
      this.opts.listener.open?.(dialedAt);
    };
    ws.onmessage = (event) => {
      if (ws !== this.ws || typeof event.data !== "string") return;
      this.failures = 0;
      this.onText(event.data);
    };
    ws.onerror = () => {
      // a close event follows; the next attempt is scheduled there
    };
    ws.onclose = () => {
      clearTimeout(openTimer);
      if (ws !== this.ws) return;
      this.detach();
      if (!this.stopped) void this.scheduleReconnect(opened);
    };
  }

  private onText(text: string): void {
    if (text === PONG_TEXT) return this.onPong();
    const frame = parseServerFrame(text);
    if (!frame) return;
    if (frame.type === "pong") return this.onPong();
    if (frame.type === "welcome") {
      this.ttl = frame.heartbeat_ttl_ms;
      this.restartHeartbeat();
    }
    if (frame.type === "serve_lease") {
      this.heldFence = frame.held ? frame.fence : null;
      this.lostHolding = false;
    }
    if ((frame.type === "result" || frame.type === "error") && frame.req !== undefined) {
      const waiter = this.pending.get(frame.req);
      if (waiter) {
        this.pending.delete(frame.req);
        clearTimeout(waiter.timer);
        waiter.resolve(frame);
      }
    }
    this.opts.listener.frame?.(frame);
  }

  private onPong(): void {
    const sentAt = this.pingsSentAt.shift();
    if (sentAt !== undefined) this.opts.listener.pong?.(sentAt);
  }

  private restartHeartbeat(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => this.heartbeat(), Math.max(1, Math.floor(this.ttl / 3)));
  }

  /** Sends a ping; a connection whose oldest ping went unanswered for a whole TTL is dropped. */
  private heartbeat(): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== OPEN) return;
    const now = this.now();
    const oldest = this.pingsSentAt[0];
    if (oldest !== undefined && now - oldest > this.ttl) {
      this.detach();
      if (!this.stopped) void this.scheduleReconnect(true, "heartbeats went unanswered");
      return;
    }
    this.pingsSentAt.push(now);
    // A holder's ping carries its fence, so the coordinator answers it itself and counts it as the
    // holder's proof of life; a standby's exact PING_TEXT is answered without waking the object.
    ws.send(this.heldFence === null ? PING_TEXT : JSON.stringify({ type: "ping", fence: this.heldFence }));
  }

  /** Forgets the current socket (closing it if needed) and fails its pending requests. */
  private detach(): void {
    if (this.heldFence !== null) this.lostHolding = true;
    this.heldFence = null;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    this.pingsSentAt = [];
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = null;
      ws.onerror = () => {};
      try {
        ws.close();
      } catch {
        // already closed
      }
    }
    for (const [req, waiter] of this.pending) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error("connection closed"));
      this.pending.delete(req);
    }
    // Requests still waiting for room find no connection and are refused as "not connected".
    this.pacer.flush();
    if (ws) this.opts.listener.closed?.();
  }

  private async scheduleReconnect(wasOpen: boolean, why?: string): Promise<void> {
    let reason = why ?? "the connection closed";
    if (!wasOpen) {
      const probe = await this.opts.probe();
      if (this.stopped) return;
      if (probe.fatal) {
        this.stopped = true;
        this.opts.listener.fatal?.(probe.error);
        return;
      }
      reason = probe.reason;
    }
    const delay = reconnectDelay(this.failures, this.opts.backoff ?? DEFAULT_BACKOFF, this.lostHolding);
    this.failures += 1;
    this.opts.listener.retrying?.(this.failures, delay, reason);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }
}
