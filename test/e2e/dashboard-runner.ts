// A raw serve connection for the dashboard's end-to-end files (dashboard-lease, -messages, -layout,
// -connection): claims with a priority and runner id like `baton serve`, heartbeats, and answers or
// parks each message it runs, so the page has holders, standbys and replies to show.
import { afterAll } from "vitest";
import WebSocket from "ws";

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
export async function replyingServe(
  coordinator: { url: string; token: string }, agent: string, machine: string, reply?: (text: string) => string | null, claim: ClaimOptions = {},
): Promise<ServeClient> {
  const ws = new WebSocket(`${coordinator.url.replace("http", "ws")}/agents/${agent}/serve?machine=${machine}`, {
    headers: { authorization: `Bearer ${coordinator.token}` },
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

/** Raw runners on a file's coordinator and account (`coordinator` is read at each start), all closed after the file. */
export function rawRunners(coordinator: { readonly url: string; readonly token: string }) {
  const clients: ServeClient[] = [];
  const closeAll = () => Promise.all(clients.splice(0).map((c) => c.close())).then(() => {});
  afterAll(closeAll);
  return {
    /** A raw runner on `agent` (replyingServe), closed by closeAll or after the file. */
    async serve(agent: string, machine: string, reply?: (text: string) => string | null, claim: ClaimOptions = {}): Promise<ServeClient> {
      const client = await replyingServe(coordinator, agent, machine, reply, claim);
      clients.push(client);
      return client;
    },
    closeAll,
  };
}
