// Apply finds each connection an effect names by its id (objects/agent-apply.ts), over real
// sockets: a frame reaches the connection with that id and no other, and an effect for a
// connection that is gone does nothing.
import { describe, expect, it } from "vitest";
import { applyEffects, type ApplyParts } from "../../worker/objects/agent-apply.ts";
import { newConnState, type ConnState } from "../../worker/objects/connections.ts";
import { Outbound } from "../../worker/objects/outbound.ts";
import type { Effect } from "../../worker/rules/plan/effects.ts";

/** An accepted server socket with its state, and what its client receives. */
function pair(id: string): { socket: { ws: WebSocket; state: ConnState }; received: string[] } {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  server.accept();
  client.accept();
  const received: string[] = [];
  client.addEventListener("message", (e) => received.push(e.data as string));
  const state = newConnState(id, new Request("http://localhost/agents/a/serve?machine=m"), 0);
  if (state instanceof Response) throw new Error("the machine label was refused");
  return { socket: { ws: server, state }, received };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("applying effects by connection id", () => {
  // Frame, attach and close effects read no store: apply is given no parts but the outbound to send through.
  const parts = { outbound: new Outbound() } as ApplyParts;

  it("a frame goes to the connection with its id, and a frame for a gone connection goes nowhere", async () => {
    const a = pair("conn-a");
    const b = pair("conn-b");
    const effects: Effect[] = [
      { type: "frame", to: "conn-b", frame: { type: "pong" } },
      { type: "frame", to: "conn-gone", frame: { type: "error", code: "rate_limited", message: "x" } },
      { type: "attach", to: "conn-gone", patch: { cursor: 9 } },
      { type: "close", to: "conn-gone" },
    ];
    applyEffects(parts, effects, [a.socket, b.socket], 0);
    await settled();
    expect([a.received, b.received]).toEqual([[], ['{"type":"pong"}']]);
    expect([a.socket.ws.readyState, b.socket.ws.readyState]).toEqual([WebSocket.OPEN, WebSocket.OPEN]);
  });

  it("an attachment patch changes only the named connection", () => {
    const a = pair("conn-a");
    const b = pair("conn-b");
    applyEffects(parts, [{ type: "attach", to: "conn-a", patch: { cursor: 4 } }], [a.socket, b.socket], 0);
    expect([a.socket.state.cursor, b.socket.state.cursor]).toEqual([4, 0]);
  });
});
