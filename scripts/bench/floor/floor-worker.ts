// The floor probe of `npm run bench`: the least a Durable Object can do for a handoff under
// `wrangler dev`, behind the same assets routing as baton (see its wrangler.toml). Sockets join a room; a frame from one of them, or its close, makes the object
// write one SQLite row, set an alarm and send one frame to every other socket. Baton's graceful
// handoff and clean-close failover are measured against this in the same run. Never shipped:
// it has its own wrangler config and is served by its own `wrangler dev`. POST /write/{name} is
// the floor of a session-lease acquisition: one Worker request, one RPC to a warm object that
// writes one row. A `{"type":"write","req"}` frame is the floor of a journal write: parsed, one row,
// answered with its req on the same socket, so the client side of both is the same code. POST /sink reads a body and drops it: the floor of an upload.
// PUT /r2/{name} streams a body of its declared length into R2, as baton's upload does: the floor of an upload that keeps its bytes.
import { DurableObject } from "cloudflare:workers";

interface FloorEnv {
  ROOMS: DurableObjectNamespace<FloorRoom>;
  BLOBS: R2Bucket;
}

const HANDOFF_FRAME = '{"type":"held"}';
const ALARM_DELAY_MS = 60_000;
/** A journal write's floor: `{"type":"write","req":…}`, answered `{"type":"result","op":"write","req":…}` after one row. */
const WRITE_PREFIX = '{"type":"write"';

export class FloorRoom extends DurableObject<FloorEnv> {
  constructor(ctx: DurableObjectState, env: FloorEnv) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS handoffs (at INTEGER NOT NULL)");
  }

  fetch(): Response {
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /** The durable part of a handoff (one row, one alarm), then the news to everyone else. */
  private handOff(from: WebSocket): void {
    this.ctx.storage.sql.exec("INSERT INTO handoffs (at) VALUES (?)", Date.now());
    void this.ctx.storage.setAlarm(Date.now() + ALARM_DELAY_MS);
    for (const ws of this.ctx.getWebSockets()) {
      if (ws !== from && ws.readyState === WebSocket.OPEN) ws.send(HANDOFF_FRAME);
    }
  }

  webSocketMessage(ws: WebSocket, text: string | ArrayBuffer): void {
    if (typeof text === "string" && text.startsWith(WRITE_PREFIX)) {
      const { req } = JSON.parse(text) as { req?: string };
      this.ctx.storage.sql.exec("INSERT INTO handoffs (at) VALUES (?)", Date.now());
      ws.send(JSON.stringify({ type: "result", op: "write", req }));
      return;
    }
    this.handOff(ws);
  }

  webSocketClose(ws: WebSocket): void {
    this.handOff(ws);
  }

  alarm(): void {}

  write(): number {
    this.ctx.storage.sql.exec("INSERT INTO handoffs (at) VALUES (?)", Date.now());
    return 1;
  }
}

export default {
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    const [route, name] = new URL(request.url).pathname.split("/").filter(Boolean);
    if (route === "write" && name && request.method === "POST") {
      return Response.json({ written: await env.ROOMS.get(env.ROOMS.idFromName(name)).write() }, { status: 201 });
    }
    if (route === "rooms" && name && request.headers.get("upgrade") === "websocket") {
      return env.ROOMS.get(env.ROOMS.idFromName(name)).fetch(request);
    }
    if (route === "health") return new Response("ok");
    if (route === "sink" && request.method === "POST") return Response.json({ bytes: (await request.arrayBuffer()).byteLength });
    if (route === "r2" && name && request.method === "PUT" && request.body) {
      const bytes = Number(request.headers.get("content-length"));
      await env.BLOBS.put(name, request.body.pipeThrough(new FixedLengthStream(bytes)));
      return Response.json({ bytes }, { status: 201 });
    }
    return new Response("not found", { status: 404 });
  },
} satisfies ExportedHandler<FloorEnv>;
