// The client library's side of a cancel, against a stand-in coordinator on a local socket: the
// cancel frame aborts the run's signal with a MessageCancelledError (who, why) and nothing is
// posted for it; a run that missed the frame (a coordinator restart between the record and the
// frame) stops at its next write, which the coordinator refuses as `cancelled`.
import { WebSocketServer, type WebSocket } from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { LeaseLostError, MessageCancelledError, serve, type ServeEvent } from "../../client/node.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A coordinator that holds the lease for its one client and hands out message 1 (token 11); `onFrame` answers the rest. */
async function standIn(onFrame: (ws: WebSocket, frame: Record<string, unknown>) => void) {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise((r) => wss.once("listening", r));
  const posted: Record<string, unknown>[] = [];
  let client: WebSocket | null = null;
  wss.on("connection", (ws) => {
    client = ws;
    ws.send(JSON.stringify({ type: "welcome", agent: "a", heartbeat_ttl_ms: 3000, limits: {} }));
    ws.on("message", (data) => {
      const frame = JSON.parse(data.toString()) as Record<string, unknown>;
      if (frame.type === "ping") return void ws.send('{"type":"pong"}');
      if (frame.type === "serve_lease") {
        ws.send(JSON.stringify({ type: "serve_lease", held: true, fence: 1, claim_seq: 1, position: 0, ttl_ms: 3000, holder: null }));
        ws.send(JSON.stringify({ type: "message", id: 1, text: "long", attempt: 1, created_at: 0, run: true, token: 11 }));
        return;
      }
      posted.push(frame);
      onFrame(ws, frame);
    });
  });
  cleanups.push(() => new Promise((r) => { for (const c of wss.clients) c.terminate(); wss.close(() => r(undefined)); }));
  const addr = wss.address();
  return { url: `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`, posted, client: () => client! };
}

function until(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = () => (check() ? resolve() : Date.now() > deadline ? reject(new Error(`never: ${what}`)) : void setTimeout(tick, 10));
    tick();
  });
}

describe("a cancelled run in the client library", () => {
  it("the cancel frame aborts ctx.signal with a MessageCancelledError naming who and why; nothing is posted for the run", async () => {
    const coordinator = await standIn(() => {});
    const reasons: unknown[] = [];
    const events: ServeEvent[] = [];
    let started = false;
    const s = serve("a", async (_m, ctx) => {
      started = true;
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      reasons.push(ctx.signal.reason);
      return "done anyway";
    }, { url: coordinator.url, token: "t", machine: "m", onEvent: (e) => events.push(e) });
    cleanups.push(() => s.stop());
    await until(() => started, "the run started");
    coordinator.client().send(JSON.stringify({ type: "cancel", id: 1, token: 11, reason: "wrong branch", by: "alice" }));
    await until(() => reasons.length === 1, "the signal aborted");
    expect(reasons[0]).toBeInstanceOf(MessageCancelledError);
    expect(reasons[0]).toMatchObject({ id: 1, by: "alice", reason: "wrong branch", code: "cancelled", message: "message 1 was cancelled by alice: wrong branch" });
    expect(events).toContainEqual({ type: "cancelled", id: 1, token: 11, by: "alice", reason: "wrong branch" });
    await new Promise((r) => setTimeout(r, 100));
    expect(coordinator.posted.filter((f) => f.type === "reply" || f.type === "fail")).toEqual([]);
  });

  it("a run that missed the frame stops at its next write, refused as cancelled", async () => {
    const coordinator = await standIn((ws, frame) => {
      if (frame.type === "heartbeat") ws.send(JSON.stringify({ type: "error", code: "cancelled", message: "message 1 was cancelled", req: frame.req }));
    });
    const reasons: unknown[] = [];
    const s = serve("a", async (_m, ctx) => {
      await ctx.heartbeat().catch(() => {});
      reasons.push(ctx.signal.aborted ? ctx.signal.reason : "still running");
      return "x";
    }, { url: coordinator.url, token: "t", machine: "m" });
    cleanups.push(() => s.stop());
    await until(() => reasons.length === 1, "the heartbeat answered");
    expect(reasons[0]).toBeInstanceOf(LeaseLostError);
    expect(reasons[0]).toMatchObject({ code: "cancelled" });
    await new Promise((r) => setTimeout(r, 100));
    expect(coordinator.posted.filter((f) => f.type === "reply")).toEqual([]);
  });
});
