// serve(agent, handler): joins the agent's serve line; while this process holds the serve lease,
// calls the handler once per message. Claims on every (re)connect; demotes itself (aborts the
// handler, posts nothing, reconnects with a new claim) as soon as its own clock says the lease
// ran out, which also covers a socket that died without a close. One implementation for the
// library and for `baton serve`: a thin shell that wires the socket, HTTP blobs and the system
// clock to the core that decides (client/core/serve-core.ts).
import { presenceSchema } from "../worker/wire/http-responses.ts";
import type { BackoffOptions } from "./backoff.ts";
import { systemClock } from "./core/clock.ts";
import type { AgentMessage, MessageHandler, ServeEvent } from "./core/handler.ts";
import { FALLBACK_TTL_MS, ServeCore, type ServeStatus } from "./core/serve-core.ts";
import type { CoreLink } from "./core/writes.ts";
import { probe, type Connection } from "./http.ts";
import { downloadBlob, uploadBlob } from "./run-journal.ts";
import { CoordinatorSocket } from "./socket.ts";
import { resolveWebSocket, type WebSocketConstructor } from "./websocket.ts";
import { traceHandler } from "./tracing.ts";
import { routePath } from "../worker/wire/routes.ts";

export type { ServeStatus };

export interface ServeOptions extends Connection {
  /** Label shown to others in `baton who` and the dashboard (default "unknown"). */
  machine?: string;
  /**
   * Preference (default 0): the lease moves to a runner of higher priority once it has been
   * connected for the coordinator's hysteresis period, when the holder runs no message.
   */
  priority?: number;
  /**
   * This process's id, sent with every claim so a restarted coordinator gives the lease back to
   * the runner that held it (default: a random UUID per serve() call). Keep it per process.
   */
  runnerId?: string;
  /** A WebSocket constructor; defaults to the global one (the Node entry passes `ws`). */
  WebSocket?: WebSocketConstructor;
  backoff?: BackoffOptions;
  /** Messages up to this id were already seen here: the coordinator sends only later ones (standbys keep history). */
  cursor?: number;
  /** Every status change: connecting, standby, holder, lapsed, reconnecting (with the reason). */
  onStatus?: (status: ServeStatus) => void;
  onEvent?: (event: ServeEvent) => void;
  /** Every message frame as it arrives (its run key is withheld: journals must not store it). */
  onMessage?: (message: AgentMessage) => void;
  /** Aborting it stops serving, as stop() does. */
  signal?: AbortSignal;
  /**
   * Messages this runner takes at once (default 1, which keeps them in order). In an agent's
   * `pool` mode every serving runner takes messages up to its slots; in `single` mode the holder does.
   */
  concurrency?: number;
  /**
   * Spans for each run, its steps, effects and asks, through `@opentelemetry/api` when it is
   * installed (default true; without the package nothing happens). See client/tracing.ts.
   */
  tracing?: boolean;
}

export interface ServeHandle {
  readonly status: ServeStatus;
  /**
   * Stops: aborts the running handler and waits for it to settle, releases the lease so a
   * standby takes over at once, and closes. Safe to call more than once.
   */
  stop(): Promise<void>;
  /** Resolves after stop(); rejects when the coordinator refuses us for good (bad token, bad name). */
  readonly done: Promise<void>;
}

/** Starts serving `agent`; returns at once. See ServeHandle for how it ends. */
export function serve(agent: string, handler: MessageHandler, options: ServeOptions): ServeHandle {
  const conn: Connection = { url: options.url, token: options.token, fetch: options.fetch };
  let stopping: Promise<void> | null = null;
  let settle: { resolve: () => void; reject: (e: Error) => void } = { resolve: () => {}, reject: () => {} };
  const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));

  const socket: CoordinatorSocket = new CoordinatorSocket({
    WebSocket: resolveWebSocket(options.WebSocket),
    url: conn.url,
    token: conn.token,
    path: `${routePath("/agents/{agent}/serve", { agent })}?machine=${encodeURIComponent(options.machine ?? "unknown")}`,
    // The serve path itself, so a token without the serve scope is told so (403) instead of retried.
    probe: () => probe(conn, routePath("/agents/{agent}/serve", { agent }), presenceSchema),
    backoff: options.backoff,
    ttlMs: FALLBACK_TTL_MS,
    listener: {
      open: (dialedAt) => core.opened(dialedAt),
      frame: (frame) => core.receive(frame),
      pong: (sentAt) => core.pong(sentAt),
      closed: () => void core.closed(),
      retrying: (attempt, delayMs, reason) => core.retrying(attempt, delayMs, reason),
      fatal(error) {
        stopping ??= shutdown(false).then(() => settle.reject(error));
      },
    },
  });

  const link: CoreLink = {
    get isOpen() {
      return socket.isOpen;
    },
    get ttlMs() {
      return socket.ttlMs;
    },
    send: (frame) => void socket.send(frame),
    request: (frame, timeoutMs) => socket.request(frame, timeoutMs),
    nextReq: () => socket.nextReq(),
    reconnectNow: () => socket.reconnectNow(),
  };

  const core = new ServeCore({
    agent,
    handler: options.tracing === false ? handler : traceHandler(handler, { agent, machine: options.machine ?? "unknown" }),
    link,
    clock: systemClock,
    runnerId: options.runnerId ?? crypto.randomUUID(),
    priority: options.priority,
    concurrency: options.concurrency,
    cursor: options.cursor,
    onStatus: options.onStatus,
    onEvent: options.onEvent,
    onMessage: options.onMessage,
    blobs: {
      upload: async (proof, bytes) => (await uploadBlob(conn, proof, bytes)).blob,
      download: (id, blob) => downloadBlob(conn, agent, id, blob),
    },
  });

  async function shutdown(release: boolean): Promise<void> {
    await core.stop(release);
    await socket.stop();
  }

  const stop = (): Promise<void> => {
    stopping ??= shutdown(true).then(() => settle.resolve());
    return stopping;
  };
  if (options.signal?.aborted) void stop();
  options.signal?.addEventListener("abort", () => void stop(), { once: true });

  socket.start();
  return {
    get status() {
      return core.status;
    },
    stop,
    done,
  };
}
