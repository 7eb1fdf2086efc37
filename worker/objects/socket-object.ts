// The one base that wires hibernatable sockets, extended by both socket objects (the agent
// coordinator and the agent directory). It accepts, tags, attaches and closes sockets; the
// subclasses only fill the hooks. Nothing about a connection lives in memory: its state is the
// socket's attachment, checked by a schema on every read, and the set of connections is
// `ctx.getWebSockets()`, so an evicted object wakes up knowing everything it knew. Time is read
// only through `this.now()` (clock.ts).
import type * as z from "zod/mini";
import { checkConfig, readConfig, type CoordinatorConfig } from "../config.ts";
import type { Env } from "../env.ts";
import { CLOSE_CODES, errorFrame, errorResponse, PING_TEXT, PONG_TEXT } from "../wire/protocol.ts";
import { BATON_PROTOCOL } from "../wire/token-protocol.ts";
import { ClockedObject } from "./clock.ts";
import { closeQuietly, readAttachment, send, writeAttachment } from "./connections.ts";

/** A live connection: the socket and the state read from its attachment. */
export interface Socket<S> {
  ws: WebSocket;
  state: S;
}

/** What every attachment carries: the connection's id (connections.ts), the same in every snapshot and after hibernation. */
export interface Identified {
  id: string;
}

/** What kind of socket an object holds: its tag, its attachment schema and how many may be open. */
export interface SocketKind<S extends Identified> {
  tag: string;
  schema: z.ZodMiniType<S>;
  max: number;
  /** Says the limit in words, for the 429: "at most 64 connections per agent". */
  limitMessage: string;
}

export abstract class SocketObject<S extends Identified> extends ClockedObject {
  /** The vars as validated once; with a bad var the defaults run and every request gets a 500. */
  protected readonly config: CoordinatorConfig;
  private readonly configProblem: string | null;

  protected abstract readonly kind: SocketKind<S>;
  /** Sockets this instance saw close or fail: never live again, even while the runtime still lists them. */
  private readonly ended = new WeakSet<WebSocket>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const verdict = checkConfig(env);
    this.config = verdict.ok ? verdict.config : readConfig({});
    this.configProblem = verdict.ok ? null : verdict.message;
    // Heartbeats are answered by the runtime itself, so they never wake the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING_TEXT, PONG_TEXT));
  }

  /** A 500 naming the bad var, or null when the configuration is fine. Requests check it first. */
  protected configRefusal(): Response | null {
    return this.configProblem === null ? null : errorResponse(500, "internal", this.configProblem);
  }

  /**
   * Accepts a WebSocket upgrade: 426 without one, 429 past the connection limit, otherwise the
   * socket is accepted under this object's tag with `initial` as its attachment, `onOpen` runs,
   * and the 101 echoes the `baton` subprotocol. `initial` may refuse with a Response instead. It is
   * given the connection's new id, minted here and nowhere else.
   */
  protected acceptSocket(request: Request, initial: (id: string) => S | Response, onOpen: (socket: Socket<S>) => void): Response {
    const refusal = this.configRefusal();
    if (refusal) return refusal;
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return errorResponse(426, "upgrade_required", "expected a WebSocket upgrade");
    }
    if (this.sockets().length >= this.kind.max) return errorResponse(429, "too_many_connections", this.kind.limitMessage);
    const state = initial(crypto.randomUUID());
    if (state instanceof Response) return state;
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, [this.kind.tag]);
    writeAttachment(server, state);
    onOpen({ ws: server, state });
    const offered = request.headers.get("sec-websocket-protocol")?.split(",").map((p) => p.trim()) ?? [];
    const headers: Record<string, string> = offered.includes(BATON_PROTOCOL) ? { "Sec-WebSocket-Protocol": BATON_PROTOCOL } : {};
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  /** Open connections of this object's kind, rebuilt from the runtime's socket list on every call. */
  protected sockets(): Socket<S>[] {
    const out: Socket<S>[] = [];
    for (const ws of this.ctx.getWebSockets(this.kind.tag)) {
      if (this.ended.has(ws) || ws.readyState === WebSocket.CLOSED || ws.readyState === WebSocket.CLOSING) continue;
      const state = readAttachment(this.kind.schema, ws);
      if (state !== null) out.push({ ws, state });
    }
    return out;
  }

  /** When the runtime last answered this socket's ping by itself, in this object's time; null if never. */
  protected lastAutoPing(ws: WebSocket): number | null {
    const at = this.ctx.getWebSocketAutoResponseTimestamp(ws);
    return at ? this.clock.fromRuntime(at.getTime()) : null;
  }

  /** A frame from a connection whose attachment checked out. */
  protected abstract onMessage(socket: Socket<S>, raw: string | ArrayBuffer): void | Promise<void>;
  /** A connection closed or failed; it is already excluded from `sockets()`. */
  protected abstract onClose(ws: WebSocket): void | Promise<void>;

  async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    const state = readAttachment(this.kind.schema, ws);
    if (state === null) {
      // A socket without a readable attachment cannot be trusted with anything: close it.
      send(ws, errorFrame("bad_frame", "this connection has no state this object can read; reconnect"));
      closeQuietly(ws, CLOSE_CODES.policy, "unreadable connection state");
      return;
    }
    await this.onMessage({ ws, state }, raw);
  }

  async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.ended.add(ws);
    closeQuietly(ws, code, "closing");
    await this.onClose(ws);
  }

  async webSocketError(ws: WebSocket): Promise<void> {
    this.ended.add(ws);
    await this.onClose(ws);
  }
}
