// The Node entry's WebSocket offers no permessage-deflate: a server willing to compress (as
// wrangler dev's proxy is) gets no offer, so neither side keeps deflate state per connection.
import { WebSocketServer } from "ws";
import type { IncomingMessage } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { observe, type ObserveHandle } from "../../client/node.ts";

let wss: WebSocketServer | null = null;
let handle: ObserveHandle | null = null;
afterEach(async () => {
  await handle?.stop();
  await new Promise((r) => (wss ? wss.close(r) : r(null)));
  wss = handle = null;
});

describe("baton-client under Node", () => {
  it("opens its socket without offering permessage-deflate, even to a server that would accept it", async () => {
    wss = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: true });
    await new Promise((r) => wss!.once("listening", r));
    const upgrade = new Promise<{ request: IncomingMessage; extensions: string }>((resolve) => {
      wss!.once("connection", (ws, request) => resolve({ request, extensions: ws.extensions }));
    });
    const addr = wss.address();
    const port = typeof addr === "object" && addr ? addr.port : 0;
    handle = observe({ url: `http://127.0.0.1:${port}`, token: "t", onChange: () => {} });
    const { request, extensions } = await upgrade;
    expect(request.headers["sec-websocket-extensions"]).toBeUndefined();
    expect(extensions).toBe("");
  });
});
