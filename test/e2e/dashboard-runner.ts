// A raw serve connection for the dashboard's end-to-end file (dashboard.test.ts): claims with a
// priority and runner id like `baton serve`, heartbeats, and answers or parks each message it runs,
// so the page has holders, standbys and replies to show.
import WebSocket from "ws";
import { DEV_TOKEN } from "./wrangler-dev.ts";

export interface ServeClient {
  machine: string;
  close(): Promise<void>;
}

export interface ClaimOptions {
  /** As `baton serve --priority`. */
  priority?: number;
  /** As the runner id each serve process sends, which a restarted coordinator gives the lease back to. */
  runnerId?: string;
}

/**
 * A raw serve connection that claims and heartbeats like `baton serve`; while it holds the lease it
 * answers each message it is told to run with `reply(text)`, when given, or parks it when that is null.
 */
export async function replyingServe(url: string, agent: string, machine: string, reply?: (text: string) => string | null, claim: ClaimOptions = {}): Promise<ServeClient> {
  const ws = new WebSocket(`${url.replace("http", "ws")}/agents/${agent}/serve?machine=${machine}`, {
    headers: { authorization: `Bearer ${DEV_TOKEN}` },
  });
  let fence = 0;
  const leased = new Promise<void>((resolve, reject) => {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { type: string; fence?: number; held?: boolean; id?: number; text?: string; run?: boolean; token?: number };
      if (frame.type === "welcome") {
        ws.send(JSON.stringify({ type: "serve_lease", op: "claim", priority: claim.priority, runner_id: claim.runnerId }));
      }
      if (frame.type === "serve_lease") {
        fence = frame.held ? frame.fence! : 0;
        resolve();
      }
      if (frame.type === "message" && frame.run && reply && fence > 0) {
        const text = reply(frame.text!);
        ws.send(JSON.stringify(text === null
          ? { type: "park", id: frame.id, token: frame.token }
          : { type: "reply", id: frame.id, token: frame.token, key: `${frame.id}:reply`, text }));
      }
    });
    ws.once("error", reject);
    ws.once("close", () => reject(new Error(`${machine} closed before its lease frame`)));
  });
  await leased;
  const heartbeat = setInterval(() => ws.send('{"type":"ping"}'), 5_000);
  const client: ServeClient = {
    machine,
    async close() {
      clearInterval(heartbeat);
      if (ws.readyState === WebSocket.CLOSED) return;
      const closed = new Promise((resolve) => ws.once("close", resolve));
      ws.close(1000, "done");
      await closed;
    },
  };
  return client;
}
