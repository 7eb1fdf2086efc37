// baton-client under Node: the same API, with the `ws` package as the WebSocket (Node 20 has no
// global one), unless the caller passes another.
import WebSocket from "ws";
import { observe as observeWith, type ObserveHandle, type ObserveOptions } from "./observe.ts";
import { serve as serveWith, type ServeHandle, type ServeOptions } from "./serve.ts";
import type { MessageHandler } from "./core/handler.ts";
import type { WebSocketConstructor } from "./websocket.ts";

export * from "./index.ts";

/**
 * `ws` without permessage-deflate. baton's frames are small JSON; a Worker accepts the extension
 * only under the web_socket_compression flag, which baton does not set, while wrangler dev's own
 * proxy layers accept it and then hold about 0.7 MB of deflate state per serve connection.
 */
class UncompressedWebSocket extends WebSocket {
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols, { perMessageDeflate: false });
  }
}

// ws implements the standard interface (on* handlers, string data for text frames); its own
// event types differ from the minimal ones declared here, hence the one conversion.
const NodeWebSocket = UncompressedWebSocket as unknown as WebSocketConstructor;

/** serve() with `ws` as the default WebSocket. */
export function serve(agent: string, handler: MessageHandler, options: ServeOptions): ServeHandle {
  return serveWith(agent, handler, { WebSocket: NodeWebSocket, ...options });
}

/** observe() with `ws` as the default WebSocket. */
export function observe(options: ObserveOptions): ObserveHandle {
  return observeWith({ WebSocket: NodeWebSocket, ...options });
}
