// Raw serve connections for the scale scenario: many sockets in one process, each claiming the
// lease and heartbeating as the client library does (a holder's ping carries its fence; a
// standby's plain ping is answered by the runtime) and offering no compression, without a Node
// process per connection.
import WebSocket from "ws";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";

const PING = '{"type":"ping"}';

export interface Conn {
  agent: string;
  ws: WebSocket;
  held: boolean;
  closed: boolean;
  /** The close code, once closed. */
  closeCode: number | null;
  /** The fence of the last serve_lease frame this connection was told. */
  fence: number;
  /** Called each time this connection is told it holds. */
  onHeld: (() => void) | null;
}

/**
 * Opens a serve socket and claims; resolves on the welcome. The connection joins `into` at once,
 * so it is heartbeated from its first moment (opening thousands takes longer than a TTL).
 */
export function openConn(url: string, agent: string, machine: string, into: Conn[], timeoutMs = 120_000): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/agents/${agent}/serve?machine=${machine}`, {
      headers: { authorization: `Bearer ${DEV_TOKEN}` },
      // As client/node.ts: no permessage-deflate, whose state wrangler dev would hold per socket.
      perMessageDeflate: false,
    });
    const conn: Conn = { agent, ws, held: false, closed: false, closeCode: null, fence: 0, onHeld: null };
    into.push(conn);
    const timer = setTimeout(() => fail(new Error(`${agent}/${machine}: no welcome within ${timeoutMs} ms`)), timeoutMs);
    const fail = (e: Error): void => {
      clearTimeout(timer);
      ws.terminate();
      reject(e);
    };
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { type: string; held?: boolean; fence?: number };
      if (frame.type === "welcome") {
        clearTimeout(timer);
        ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
        resolve(conn);
      }
      if (frame.type === "serve_lease") {
        conn.held = frame.held === true;
        conn.fence = frame.fence ?? conn.fence;
        if (conn.held) conn.onHeld?.();
      }
    });
    ws.on("error", fail);
    ws.on("close", (code) => {
      conn.closed = true;
      conn.closeCode = code;
      conn.held = false;
      fail(new Error(`${agent}/${machine}: closed (${code}) before the welcome`));
    });
  });
}

/** Heartbeats every open connection every `everyMs`, as `client/socket.ts` does. */
export function heartbeat(conns: readonly Conn[], everyMs: number): { stop(): void } {
  const timer = setInterval(() => {
    for (const c of conns) {
      if (c.ws.readyState !== WebSocket.OPEN) continue;
      c.ws.send(c.held ? JSON.stringify({ type: "ping", fence: c.fence }) : PING);
    }
  }, everyMs);
  return { stop: () => clearInterval(timer) };
}

/** Runs `task` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await task(items[i]!);
    }
  }));
  return out;
}

export async function until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Open connections told they hold, one per agent at most if the coordinator is right. */
export function holders(conns: readonly Conn[]): Conn[] {
  return conns.filter((c) => c.held && !c.closed);
}

/** "N with 1006, M with 4008": how many connections closed, by close code. */
export function closeSummary(conns: readonly Conn[]): string {
  const byCode = new Map<number, number>();
  for (const c of conns) if (c.closeCode !== null) byCode.set(c.closeCode, (byCode.get(c.closeCode) ?? 0) + 1);
  return byCode.size === 0 ? "none" : [...byCode].map(([code, n]) => `${n} with ${code}`).join(", ");
}
