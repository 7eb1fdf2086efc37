// serve(agent, handler): joins the agent's serve line; while this process holds the serve lease,
// calls the handler once per message. Claims on every (re)connect; demotes itself (aborts the
// handler, posts nothing, reconnects with a new claim) as soon as its own clock says the lease
// ran out, which also covers a socket that died without a close. One implementation for the
// library and for `baton serve`.
import type { ServerFrame } from "../worker/wire/protocol.ts";
import { presenceSchema } from "../worker/wire/http-responses.ts";
import type { BackoffOptions } from "./backoff.ts";
import { LeaseLostError } from "./errors.ts";
import { LeaseClock } from "./lease-clock.ts";
import { probe, type Connection } from "./http.ts";
import { downloadBlob, uploadBlob } from "./run-journal.ts";
import { ServeLease, type LeaseView } from "./serve-lease.ts";
import { CoordinatorSocket } from "./socket.ts";
import { resolveWebSocket, type WebSocketConstructor } from "./websocket.ts";
import { traceHandler } from "./tracing.ts";
import { WorkLoop, type AgentMessage, type MessageHandler, type ServeEvent } from "./work-loop.ts";
import { routePath } from "../worker/wire/routes.ts";

export type ServeStatus = LeaseView | { kind: "reconnecting"; attempt: number; delayMs: number; reason: string };

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
  /** Every message this connection sees, held or not, before any handler runs. */
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

const FALLBACK_TTL_MS = 60_000;

/** Starts serving `agent`; returns at once. See ServeHandle for how it ends. */
export function serve(agent: string, handler: MessageHandler, options: ServeOptions): ServeHandle {
  const conn: Connection = { url: options.url, token: options.token, fetch: options.fetch };
  const lease = new ServeLease(FALLBACK_TTL_MS);
  // The connection itself, by this process's clock: a pool runner that is not the holder may act
  // on its messages only while the coordinator cannot yet have given up on the connection.
  const link = new LeaseClock(FALLBACK_TTL_MS);
  const slots = options.concurrency ?? 1;
  const now = () => performance.now();
  let status: ServeStatus = { kind: "connecting" };
  const claim = {
    type: "serve_lease", op: "claim", runner_id: options.runnerId ?? crypto.randomUUID(),
    ...(options.priority === undefined ? {} : { priority: options.priority }),
  } as const;
  let cursor = options.cursor ?? 0;
  let syncEpoch = 0;
  /**
   * Replays missed history one page at a time: each sync is answered with one page and `more: true`
   * while there is another; over the coordinator's replay budget it is answered rate_limited and we
   * ask again a second later. A reconnect starts a new replay and ends this one.
   */
  const replayHistory = async (epoch: number): Promise<void> => {
    let after = cursor;
    while (epoch === syncEpoch && socket.isOpen) {
      const answer = await socket.request({ type: "sync", after, req: socket.nextReq() }).catch(() => null);
      if (answer === null) return;
      if (answer.type === "error") {
        if (answer.code !== "rate_limited") return;
        await new Promise((r) => setTimeout(r, 1000));
      } else if (answer.op === "sync" && answer.more) {
        after = answer.cursor;
      } else {
        return;
      }
    }
  };
  let claimSentAt = 0;
  let heardLease = false;
  let deadlineTimer: ReturnType<typeof setTimeout> | null = null;
  let stopping: Promise<void> | null = null;
  let settle: { resolve: () => void; reject: (e: Error) => void } = { resolve: () => {}, reject: () => {} };
  const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  const event = (e: ServeEvent) => options.onEvent?.(e);

  const report = (next: ServeStatus): void => {
    status = next;
    options.onStatus?.(next);
  };

  const mayAct = (): boolean => {
    if (lease.mayAct(now())) return true;
    if (lease.state.kind === "lapsed") demote();
    return false;
  };

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
      open(dialedAt) {
        lease.reset(socket.ttlMs);
        lease.acked(dialedAt, now());
        link.reset(socket.ttlMs);
        link.confirmed(dialedAt, now());
        link.hold(now());
        heardLease = false;
        claimSentAt = now();
        socket.send(slots === 1 ? claim : { ...claim, concurrency: slots });
        void replayHistory(++syncEpoch);
        report(lease.state);
      },
      frame: (frame) => onFrame(frame),
      pong(sentAt) {
        link.confirmed(sentAt, now());
        lease.acked(sentAt, now());
        afterLeaseChange();
      },
      closed() {
        clearDeadline();
        void work.stop(new LeaseLostError("the connection closed", "lapsed"));
        lease.reset(socket.ttlMs);
      },
      retrying: (attempt, delayMs, reason) => report({ kind: "reconnecting", attempt, delayMs, reason }),
      fatal(error) {
        stopping ??= shutdown(false).then(() => settle.reject(error));
      },
    },
  });

  const work = new WorkLoop({
    agent,
    handler: options.tracing === false ? handler : traceHandler(handler, { agent, machine: options.machine ?? "unknown" }),
    mayAct,
    mayRun: () => socket.isOpen && link.mayAct(now()),
    slots,
    fence: () => (lease.state.kind === "holder" ? lease.state.fence : -1),
    request: (frame) => socket.request(frame),
    nextReq: () => socket.nextReq(),
    event,
    blobs: {
      upload: async (proof, bytes) => (await uploadBlob(conn, proof, bytes)).blob,
      download: (id, blob) => downloadBlob(conn, agent, id, blob),
    },
  });

  function onFrame(frame: ServerFrame): void {
    switch (frame.type) {
      case "serve_lease": {
        if (!heardLease) {
          heardLease = true;
          lease.acked(claimSentAt, now());
        }
        const wasHolder = lease.state.kind === "holder";
        const view = lease.onLeaseFrame(frame, now());
        if (view.kind === "holder" && !wasHolder) work.setCheckpoint(frame.checkpoint);
        // Messages with their own tokens run on until the coordinator revokes them (pool mode).
        if (view.kind !== "holder") void work.stop(new LeaseLostError("the coordinator gave the lease to another connection", "not_holder"), true);
        afterLeaseChange();
        return;
      }
      case "message": {
        cursor = Math.max(cursor, frame.id);
        options.onMessage?.({
          id: frame.id, text: frame.text, attempt: frame.attempt, createdAt: frame.created_at,
          token: frame.token ?? null, resumeInput: frame.resume_input ?? null, group: frame.group ?? null,
          runKey: null, heartbeatTimeoutMs: frame.heartbeat_timeout_ms ?? null, resumeChoice: frame.resume_choice ?? null, traceparent: frame.traceparent ?? null,
        });
        if (frame.run) work.enqueue(frame);
        return;
      }
      case "revoked":
        work.revoke(frame.id, frame.token, frame.reason);
        return;
      case "cancel":
        work.cancel(frame.id, frame.token, frame.by, frame.reason);
        return;
      case "error":
        // Answers to our own requests are reported by the work loop.
        if (frame.req === undefined) event({ type: "coordinator_error", code: frame.code, message: frame.message });
        return;
      default:
        return;
    }
  }

  /** Reports the state and re-arms the local deadline; a lapsed lease demotes at once. */
  function afterLeaseChange(): void {
    const t = now();
    lease.valid(t);
    const view = lease.state;
    if (view.kind === "lapsed") return demote();
    // The connection itself lapsed by our clock (no pong for a TTL): the coordinator may already
    // have taken every message of ours back, so stop them all and rejoin.
    if (!link.valid(t)) return demote();
    if (!sameStatus(status, view)) report(view);
    clearDeadline();
    const deadline = lease.deadline === null ? link.deadline : Math.min(lease.deadline, link.deadline ?? Infinity);
    if (deadline !== null) deadlineTimer = setTimeout(afterLeaseChange, Math.max(0, deadline - t) + 1);
  }

  /** The local clock says the lease is gone: abort the handler, post nothing, rejoin as a new claimant. */
  function demote(): void {
    clearDeadline();
    report(lease.state);
    void work.stop(new LeaseLostError("the lease lapsed on the local clock", "lapsed"));
    socket.reconnectNow();
  }

  function clearDeadline(): void {
    if (deadlineTimer) clearTimeout(deadlineTimer);
    deadlineTimer = null;
  }

  async function shutdown(release: boolean): Promise<void> {
    clearDeadline();
    await work.stop(new LeaseLostError("serving stopped", "stopped"));
    if (release && socket.isOpen) {
      try {
        const answer = await socket.request({ type: "serve_lease", op: "release", req: socket.nextReq() }, 2000);
        if (answer.type === "result" && answer.op === "release" && answer.released) event({ type: "released" });
      } catch {
        // the coordinator notices the close instead
      }
    }
    await socket.stop();
  }

  const stop = (): Promise<void> => {
    stopping ??= shutdown(true).then(() => settle.resolve());
    return stopping;
  };
  if (options.signal?.aborted) void stop();
  options.signal?.addEventListener("abort", () => void stop(), { once: true });

  report(status);
  socket.start();
  return {
    get status() {
      return status;
    },
    stop,
    done,
  };
}

function sameStatus(a: ServeStatus, b: ServeStatus): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
