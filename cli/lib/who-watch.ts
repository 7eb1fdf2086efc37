// `baton who --watch`: follows the coordinator's observer socket (GET /observe: the whole
// directory, then each agent's presence as it changes) and redraws on every change; falls back
// to polling every second against a coordinator without that socket. Runs until interrupted.
import WebSocket from "ws";
import { reconnectDelay, DEFAULT_BACKOFF } from "./backoff.ts";
import { wsUrl, type Connection } from "./config.ts";
import { CLIError } from "./errors.ts";
import { parseServerFrame, type DirectoryEntry } from "../../worker/wire/protocol.ts";

export interface WatchOptions {
  conn: Connection;
  agent?: string;
  /** Renders the current reports (only AGENT's when one is named). */
  draw: (reports: DirectoryEntry[]) => void;
  /** Polling fallback: one refresh. */
  poll: () => Promise<void>;
  pollIntervalMs: number;
}

export async function watch(opts: WatchOptions): Promise<never> {
  const live = await followObserver(opts);
  if (live === "unsupported") {
    for (;;) {
      await opts.poll();
      await new Promise((r) => setTimeout(r, opts.pollIntervalMs));
    }
  }
  return new Promise<never>(() => {});
}

/** Connects (and reconnects with backoff) to /observe; "unsupported" when the coordinator has no such route. */
function followObserver(opts: WatchOptions): Promise<"following" | "unsupported"> {
  const agents = new Map<string, DirectoryEntry>();
  const draw = (): void => {
    const all = [...agents.values()].sort((a, b) => a.agent.localeCompare(b.agent));
    opts.draw(opts.agent ? all.filter((a) => a.agent === opts.agent) : all);
  };
  return new Promise((resolve, reject) => {
    let failures = 0;
    let settled = false;
    let giveUp = false;
    const connect = (): void => {
      const ws = new WebSocket(`${wsUrl(opts.conn.url)}/observe`, { headers: { authorization: `Bearer ${opts.conn.token}` } });
      ws.on("open", () => {
        failures = 0;
        if (!settled) resolve("following");
        settled = true;
      });
      ws.on("unexpected-response", (_req, res) => {
        ws.terminate();
        if (res.statusCode === 401) {
          giveUp = true;
          reject(new CLIError(`unauthorized: ${opts.conn.url} refused the token (run \`baton login\` or set BATON_TOKEN)`));
        } else if (!settled && (res.statusCode === 404 || res.statusCode === 426)) {
          giveUp = true;
          resolve("unsupported");
        }
      });
      ws.on("message", (data) => {
        const frame = parseServerFrame(data.toString());
        if (!frame) return;
        if (frame.type === "directory") {
          agents.clear();
          for (const entry of frame.agents) agents.set(entry.agent, entry);
        } else if (frame.type === "presence") {
          agents.set(frame.presence.agent, frame.presence);
        } else if (frame.type === "agent_gone") {
          agents.delete(frame.agent);
        } else {
          return;
        }
        draw();
      });
      ws.on("error", () => {});
      ws.on("close", () => {
        if (giveUp) return;
        if (failures === 0) process.stderr.write(`baton who: lost ${opts.conn.url}/observe; reconnecting\n`);
        const delay = reconnectDelay(failures, DEFAULT_BACKOFF);
        failures += 1;
        setTimeout(connect, delay);
      });
    };
    connect();
  });
}
