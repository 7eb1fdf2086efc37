// A raw serve connection for end-to-end tests: the `ws` package speaking baton's frames by hand
// (claim with a runner id, heartbeat like the client library, collect frames), for tests that
// need exact control over what a runner sends, against a real `wrangler dev`.
import WebSocket from "ws";
import { PING_TEXT } from "../../worker/wire/protocol.ts";
import { parseServerFrame } from "../../worker/wire/server-frames.ts";
import type { ServerFrame } from "../../worker/wire/protocol.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

export interface RawServe {
  frames: ServerFrame[];
  send(frame: unknown): void;
  next<T extends ServerFrame["type"]>(type: T, match?: (f: Extract<ServerFrame, { type: T }>) => boolean, timeoutMs?: number): Promise<Extract<ServerFrame, { type: T }>>;
  closed: Promise<number>;
  close(): void;
}

export async function rawServe(url: string, agent: string, machine: string): Promise<RawServe> {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/agents/${agent}/serve?machine=${encodeURIComponent(machine)}`, {
    headers: { authorization: `Bearer ${DEV_TOKEN}` },
    perMessageDeflate: false,
  });
  const frames: ServerFrame[] = [];
  const waiters = new Set<() => void>();
  let fence: number | null = null;
  const heartbeat = setInterval(() => {
    if (ws.readyState === WebSocket.OPEN) ws.send(fence === null ? PING_TEXT : JSON.stringify({ type: "ping", fence }));
  }, 300);
  const closed = new Promise<number>((resolve) => ws.once("close", (code) => {
    clearInterval(heartbeat);
    resolve(code);
  }));
  ws.on("message", (data) => {
    const frame = parseServerFrame(data.toString());
    if (!frame || frame.type === "pong") return;
    if (frame.type === "serve_lease") fence = frame.held ? frame.fence : null;
    frames.push(frame);
    for (const w of [...waiters]) w();
  });
  const sock: RawServe = {
    frames,
    closed,
    send: (frame) => ws.send(JSON.stringify(frame)),
    next(type, match, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const i = frames.findIndex((f) => f.type === type && (!match || match(f as never)));
          if (i < 0) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(frames.splice(i, 1)[0] as never);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${machine}: no ${type} frame within ${timeoutMs} ms; saw ${JSON.stringify(frames)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => {
      clearInterval(heartbeat);
      ws.close(1000);
    },
  };
  await sock.next("welcome");
  return sock;
}

/** Connects and claims as `baton serve` does (with a runner id); resolves with the first serve_lease frame. */
export async function rawRunner(url: string, agent: string, machine: string, runnerId: string) {
  const sock = await rawServe(url, agent, machine);
  sock.send({ type: "serve_lease", op: "claim", runner_id: runnerId });
  const lease = await sock.next("serve_lease");
  return { sock, lease };
}
