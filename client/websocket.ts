// The WebSocket this library needs: the standard browser interface, nothing more, so the core runs
// wherever a WebSocket constructor exists (browsers, Workers, Deno, Node 22+). Node 20 has no
// global WebSocket; its entry point ("baton-client" under Node) passes the `ws` package's.
import { BATON_PROTOCOL, tokenProtocol } from "../worker/wire/token-protocol.ts";

export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

export const OPEN = 1;

/** The global WebSocket, or a clear error saying how to pass one. */
export function resolveWebSocket(given: WebSocketConstructor | undefined): WebSocketConstructor {
  if (given) return given;
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global) return global;
  throw new Error("no WebSocket here: pass the `WebSocket` option (on Node 20, import from \"baton-client\", whose Node entry passes `ws`)");
}

/** Opens a socket to `httpUrl` + `path`; the token travels as a subprotocol, which browsers allow. */
export function openSocket(ctor: WebSocketConstructor, httpUrl: string, path: string, token: string): WebSocketLike {
  const url = `${httpUrl.replace(/\/+$/, "").replace(/^http/, "ws")}${path}`;
  return new ctor(url, [BATON_PROTOCOL, tokenProtocol(token)]);
}
