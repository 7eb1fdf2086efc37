// observe(): follows the coordinator's observer socket (GET /observe): the account's whole
// directory on connect, then each agent's presence as it changes. Reconnects with backoff and
// says why each attempt failed; calls onChange with every agent currently connected.
import type { DirectoryEntry } from "../worker/wire/protocol.ts";
import { agentListSchema } from "../worker/wire/http-responses.ts";
import type { BackoffOptions } from "./backoff.ts";
import { probe, type Connection } from "./http.ts";
import { CoordinatorSocket } from "./socket.ts";
import { resolveWebSocket, type WebSocketConstructor } from "./websocket.ts";
import { routePath } from "../worker/wire/routes.ts";

export type ObserveStatus =
  | { kind: "connecting" }
  | { kind: "following" }
  | { kind: "reconnecting"; attempt: number; delayMs: number; reason: string };

export interface ObserveOptions extends Connection {
  WebSocket?: WebSocketConstructor;
  backoff?: BackoffOptions;
  /** Every agent with connections, sorted by name, after each change. */
  onChange: (agents: DirectoryEntry[]) => void;
  onStatus?: (status: ObserveStatus) => void;
}

export interface ObserveHandle {
  stop(): Promise<void>;
  /** Resolves after stop(); rejects when the coordinator refuses for good (e.g. a wrong token). */
  readonly done: Promise<void>;
}

export function observe(options: ObserveOptions): ObserveHandle {
  const agents = new Map<string, DirectoryEntry>();
  let pending = 0;
  const changed = (): void => options.onChange([...agents.values()].sort((a, b) => a.agent.localeCompare(b.agent)));
  let settle: { resolve: () => void; reject: (e: Error) => void } = { resolve: () => {}, reject: () => {} };
  const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  const socket = new CoordinatorSocket({
    WebSocket: resolveWebSocket(options.WebSocket),
    url: options.url,
    token: options.token,
    path: routePath("/observe"),
    probe: () => probe(options, routePath("/agents"), agentListSchema),
    backoff: options.backoff,
    listener: {
      open: () => options.onStatus?.({ kind: "following" }),
      frame(frame) {
        if (frame.type === "directory") {
          agents.clear();
          for (const entry of frame.agents) agents.set(entry.agent, entry);
          // The rest of the listing follows as presence frames: show it whole, not in pieces.
          pending = frame.rest ?? 0;
          if (pending > 0) return;
        } else if (frame.type === "presence") {
          agents.set(frame.presence.agent, frame.presence);
          if (pending > 0 && --pending > 0) return;
        } else if (frame.type === "agent_gone") {
          agents.delete(frame.agent);
        } else {
          return;
        }
        changed();
      },
      retrying: (attempt, delayMs, reason) => options.onStatus?.({ kind: "reconnecting", attempt, delayMs, reason }),
      fatal: (error) => settle.reject(error),
    },
  });
  options.onStatus?.({ kind: "connecting" });
  socket.start();
  return {
    async stop() {
      await socket.stop();
      settle.resolve();
    },
    done,
  };
}
