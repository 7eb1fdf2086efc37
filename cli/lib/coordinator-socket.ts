// One serve connection to the coordinator that keeps itself alive: reconnects with backoff,
// sends heartbeats on its own timer (a third of the TTL, independent of any running command),
// and reports when each ping was sent once its pong arrives, for the client-side lease clock.
import { EventEmitter } from "node:events";
import WebSocket from "ws";
import { reconnectDelay, DEFAULT_BACKOFF, type BackoffOptions } from "./backoff.ts";
import { wsUrl } from "./config.ts";
import { parseServerFrame, PING_TEXT, PONG_TEXT, type ClientFrame, type ServerFrame } from "../../worker/wire/protocol.ts";

export interface CoordinatorSocketOptions {
  url: string;
  token: string;
  agent: string;
  machine: string;
  backoff?: BackoffOptions;
  /** Heartbeat TTL assumed until the coordinator's welcome says otherwise. */
  fallbackTtlMs?: number;
  /** Monotonic clock; injectable for tests. */
  now?: () => number;
}

export type ReplyFrame = Extract<ServerFrame, { type: "result" } | { type: "error" }>;

interface SocketEvents {
  /** A reconnect is scheduled: `attempt` counts consecutive failures (1 = first retry). */
  reconnecting: [attempt: number, delayMs: number];
  /** Connected; `dialedAt` is when the handshake began (monotonic ms): the coordinator saw us no earlier. */
  open: [dialedAt: number];
  frame: [frame: ServerFrame];
  /** A pong arrived for the ping sent at `sentAt` (monotonic ms). */
  pong: [sentAt: number];
  closed: [code: number, reason: string];
  /** The coordinator refused us for a reason retrying cannot fix (bad token, bad agent name). */
  fatal: [message: string];
}

const FATAL_STATUSES = new Set([400, 401, 403, 404]);

export class CoordinatorSocket extends EventEmitter<SocketEvents> {
  private ws: WebSocket | null = null;
  private failures = 0;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private pingSentAt: number[] = [];
  private ttlMs: number;
  private readonly pending = new Map<string, { resolve: (f: ReplyFrame) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private reqCounter = 0;
  private readonly now: () => number;

  constructor(private readonly opts: CoordinatorSocketOptions) {
    super();
    this.ttlMs = opts.fallbackTtlMs ?? 60_000;
    this.now = opts.now ?? (() => performance.now());
  }

  get heartbeatTtlMs(): number {
    return this.ttlMs;
  }

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  start(): void {
    this.connect();
  }

  /** Sends a frame if the socket is open; returns false (and sends nothing) otherwise. */
  send(frame: ClientFrame): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  nextReq(): string {
    this.reqCounter += 1;
    return `r${this.reqCounter}`;
  }

  /**
   * Sends a frame carrying `req` and resolves with the result or error frame that answers it.
   * Rejects when the socket is not open, closes first, or nothing answers within `timeoutMs`.
   */
  request(frame: ClientFrame & { req: string }, timeoutMs = 10_000): Promise<ReplyFrame> {
    return new Promise((resolve, reject) => {
      if (!this.send(frame)) return reject(new Error("not connected"));
      const timer = setTimeout(() => {
        this.pending.delete(frame.req);
        reject(new Error(`no answer to ${frame.type} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(frame.req, { resolve, reject, timer });
    });
  }

  /** Drops the current connection at once and connects again (a fresh claim follows). */
  reconnectNow(): void {
    if (this.stopped) return;
    const ws = this.ws;
    this.detach(1000, "reconnecting");
    ws?.terminate();
    this.failures = 0;
    this.connect();
  }

  /** Closes for good: no more reconnects. Resolves once the socket is closed (or after 1 s). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
    ws.close(1000, "client exiting");
    const timer = setTimeout(() => ws.terminate(), 1000);
    await closed;
    clearTimeout(timer);
  }

  private connect(): void {
    this.retryTimer = null;
    const { url, token, agent, machine } = this.opts;
    const target = `${wsUrl(url)}/agents/${encodeURIComponent(agent)}/serve?machine=${encodeURIComponent(machine)}`;
    const dialedAt = this.now();
    const ws = new WebSocket(target, { headers: { authorization: `Bearer ${token}` }, handshakeTimeout: 10_000 });
    this.ws = ws;
    let heardFromServer = false;
    ws.on("open", () => {
      this.pingSentAt = [];
      this.restartHeartbeat();
      this.emit("open", dialedAt);
    });
    ws.on("message", (data, isBinary) => {
      if (ws !== this.ws || isBinary) return;
      if (!heardFromServer) {
        heardFromServer = true;
        this.failures = 0;
      }
      this.onText(data.toString());
    });
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => {
        const status = res.statusCode ?? 0;
        if (FATAL_STATUSES.has(status)) {
          this.stopped = true;
          this.emit("fatal", `coordinator refused the connection (${status}): ${describeBody(body)}`);
        }
        ws.terminate();
      });
    });
    ws.on("error", () => {
      // A close event follows; the reconnect is scheduled there.
    });
    ws.on("close", (code, reason) => {
      if (ws !== this.ws) return;
      this.detach(code, reason.toString());
      if (!this.stopped) this.scheduleReconnect();
    });
  }

  private onText(text: string): void {
    if (text === PONG_TEXT) return this.onPong();
    const frame = parseServerFrame(text);
    if (!frame) return;
    if (frame.type === "pong") return this.onPong();
    if (frame.type === "welcome" && frame.heartbeat_ttl_ms > 0) {
      this.ttlMs = frame.heartbeat_ttl_ms;
      this.restartHeartbeat();
    }
    if ((frame.type === "result" || frame.type === "error") && frame.req !== undefined) {
      const waiter = this.pending.get(frame.req);
      if (waiter) {
        this.pending.delete(frame.req);
        clearTimeout(waiter.timer);
        waiter.resolve(frame);
      }
    }
    this.emit("frame", frame);
  }

  private onPong(): void {
    const sentAt = this.pingSentAt.shift();
    if (sentAt !== undefined) this.emit("pong", sentAt);
  }

  private restartHeartbeat(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => this.heartbeat(), Math.max(1, Math.floor(this.ttlMs / 3)));
  }

  /** Sends a ping; a connection whose oldest ping went unanswered for a whole TTL is dead. */
  private heartbeat(): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    const now = this.now();
    const oldest = this.pingSentAt[0];
    if (oldest !== undefined && now - oldest > this.ttlMs) {
      ws.terminate();
      return;
    }
    this.pingSentAt.push(now);
    ws.send(PING_TEXT);
  }

  private detach(code: number, reason: string): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    this.pingSentAt = [];
    this.ws?.removeAllListeners("close");
    this.ws?.on("error", () => {});
    this.ws = null;
    for (const [req, waiter] of this.pending) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error("connection closed"));
      this.pending.delete(req);
    }
    this.emit("closed", code, reason);
  }

  private scheduleReconnect(): void {
    const delay = reconnectDelay(this.failures, this.opts.backoff ?? DEFAULT_BACKOFF);
    this.failures += 1;
    this.emit("reconnecting", this.failures, delay);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }
}

function describeBody(body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed.message === "string") return parsed.message;
  } catch {
    // not JSON
  }
  return body.slice(0, 200) || "no details";
}
