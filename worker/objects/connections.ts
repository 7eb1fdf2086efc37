// Per-connection state kept in WebSocket attachments, so it survives hibernation. Each kind of
// connection has its own versioned shape, checked by a schema on every read: an attachment that
// does not match (another version, another object's kind) reads as null, never as a cast.
import * as z from "zod/mini";
import { CLOSE_CODES, errorResponse, LIMITS, MACHINE_LABEL, type ServerFrame } from "../wire/protocol.ts";

const count = z.int().check(z.nonnegative());
const time = z.number().check(z.nonnegative());
/**
 * A connection's id, minted when it is accepted (socket-object.ts) and kept in its attachment: it
 * names the same connection in every snapshot and across hibernation, as partyserver's `id` does.
 */
const connId = z.string().check(z.minLength(1), z.maxLength(64));

/** A serve connection of an agent object (version 2: its id added). */
export const serveAttachment = z.object({
  v: z.literal(2),
  id: connId,
  role: z.literal("serve"),
  /** Claim sequence, fixed at the first claim; null until the connection claims. */
  claimSeq: z.nullable(count),
  /** True once the connection released the lease: it stays connected but is no candidate. */
  released: z.boolean(),
  machine: z.string(),
  joinedAt: time,
  lastSeen: time,
  /** What this connection was last told, so frames are only sent on real changes. */
  toldHeld: z.nullable(z.boolean()),
  toldFence: z.nullable(count),
  /** Highest message id pushed to or acknowledged by this connection. */
  cursor: count,
  /** Messages this runner takes at once (`serve --concurrency`); absent means 1. */
  slots: z.optional(z.int().check(z.gte(1))),
  /** From the claim: preference (absent means 0) and the serve process's id across reconnects. */
  priority: z.optional(z.int()),
  runnerId: z.optional(z.string()),
  /** When its current claim began: a preferred runner counts its hysteresis from here, so release + claim starts it again. */
  readySince: z.optional(time),
  /** The runner said it is stopping (hello `stopping`): it is handed nothing new. */
  stopping: z.optional(z.boolean()),
});
export type ConnState = z.infer<typeof serveAttachment>;

/** A dashboard observer of the directory object (version 2: its id added): it only listens. */
export const observerAttachment = z.object({ v: z.literal(2), id: connId, role: z.literal("observer"), joinedAt: time });
export type ObserverState = z.infer<typeof observerAttachment>;

/** A new serve connection's state, labelled by its upgrade's `?machine=` (absent: "unknown"), or the 400 that refuses the label. */
export function newConnState(id: string, request: Request, now: number): ConnState | Response {
  const machine = new URL(request.url).searchParams.get("machine") || "unknown";
  if (machine.length > LIMITS.machineLabelChars || !MACHINE_LABEL.test(machine)) {
    return errorResponse(400, "bad_request", `machine labels are 1-${LIMITS.machineLabelChars} printable characters`);
  }
  return { v: 2, id, role: "serve", claimSeq: null, released: false, machine, joinedAt: now, lastSeen: now, toldHeld: null, toldFence: null, cursor: 0 };
}

/**
 * What each socket's attachment holds, as last read or written by this instance: a frame then
 * costs no deserialize and no schema pass. An evicted object starts with none and reads the
 * attachments again. Entries are flat records of primitives, handed out as copies.
 */
const attached = new WeakMap<WebSocket, object>();

/** Reads a socket's attachment through its schema: null when it is missing or of another shape. */
export function readAttachment<S>(schema: z.ZodMiniType<S>, ws: WebSocket): S | null {
  const known = attached.get(ws);
  if (known) return { ...known } as S;
  const parsed = schema.safeParse(ws.deserializeAttachment());
  if (!parsed.success) return null;
  attached.set(ws, { ...(parsed.data as object) });
  return parsed.data;
}

/** Stores a socket's state in its attachment, which survives hibernation (the runtime allows 2 KiB; ours is a few hundred bytes). */
export function writeAttachment<S>(ws: WebSocket, state: S): void {
  ws.serializeAttachment(state);
  attached.set(ws, { ...(state as object) });
}

export const writeConn: (ws: WebSocket, state: ConnState) => void = writeAttachment;

export function send(ws: WebSocket, frame: ServerFrame): void {
  sendText(ws, JSON.stringify(frame));
}

/** Sends a frame already written as text (a run copy, run-copy.ts). */
export function sendText(ws: WebSocket, text: string): void {
  try {
    ws.send(text);
  } catch {
    // The peer is already gone; its close event re-elects.
  }
}

/**
 * A code the server may send in a close frame. 1005 and 1006 only describe what happened
 * (no status, abnormal closure) and anything else outside the sendable ranges becomes `normal`.
 */
function sendableCloseCode(code: number): number {
  const sendable = code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
  return sendable ? code : CLOSE_CODES.normal;
}

/** The one way to close a socket: a sendable code, and no complaint when it is already closing. */
export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(sendableCloseCode(code), reason);
  } catch {
    // already closed: harmless
  }
}
