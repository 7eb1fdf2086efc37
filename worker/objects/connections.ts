// Per-connection state kept in WebSocket attachments, so it survives hibernation, and the
// small socket helpers every object shares.
import type { ServerFrame } from "../wire/protocol.ts";

export type Role = "serve" | "observer";

export interface ConnState {
  v: 1;
  role: Role;
  /** Claim sequence, fixed at the first claim; null until the connection claims. */
  claimSeq: number | null;
  /** True once the connection released the lease: it stays connected but is no candidate. */
  released: boolean;
  machine: string;
  joinedAt: number;
  lastSeen: number;
  /** What this connection was last told, so frames are only sent on real changes. */
  toldHeld: boolean | null;
  toldFence: number | null;
  /** Highest message id pushed to or acknowledged by this connection. */
  cursor: number;
  /** Messages this runner takes at once (`serve --concurrency`); absent means 1. */
  slots?: number;
  /** From the claim: preference (absent means 0) and the serve process's id across reconnects. */
  priority?: number;
  runnerId?: string;
}

export function newConnState(role: Role, machine: string, now: number): ConnState {
  return { v: 1, role, claimSeq: null, released: false, machine, joinedAt: now, lastSeen: now, toldHeld: null, toldFence: null, cursor: 0 };
}

export function readConn(ws: WebSocket): ConnState | null {
  const raw = ws.deserializeAttachment() as ConnState | null;
  return raw && raw.v === 1 ? raw : null;
}

export function writeConn(ws: WebSocket, state: ConnState): void {
  ws.serializeAttachment(state);
}

/** Server time of the last heartbeat: the auto-response timestamp or the last frame, whichever is later. */
export function lastHeartbeat(ctx: DurableObjectState, ws: WebSocket, state: ConnState): number {
  const auto = ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
  return Math.max(auto, state.lastSeen);
}

export function send(ws: WebSocket, frame: ServerFrame): void {
  try {
    ws.send(JSON.stringify(frame));
  } catch {
    // The peer is already gone; its close event re-elects.
  }
}

/** Closes without complaint: sockets that are already closing throw, and that is harmless. */
export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // already closed
  }
}
