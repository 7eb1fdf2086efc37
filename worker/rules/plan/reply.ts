// Frames answered by one frame and nothing else: a ping's pong, and the refusals of a frame that is
// never planned (over its connection's rate, unparsable, a history page over the replay budget).
// Each is an event, answered by one frame effect to its sender, as every reply is. They read
// nothing and change nothing, so the object applies `replyEffects` without reading a snapshot: a
// flood of refused frames costs what it cost as direct sends (docs/architecture.md). Pure.
import { errorFrame, LIMITS } from "../../wire/protocol.ts";
import type { ErrorCode } from "../../wire/error-codes.ts";
import type { ServerFrame } from "../../wire/server-frames.ts";
import type { Effect } from "./effects.ts";
import type { AgentEvent, ConnId } from "./types.ts";

export type ReplyEvent =
  /** A `ping` frame written otherwise than PING_TEXT (that exact text is answered by the runtime and never reaches the object). */
  | { type: "ping"; from: ConnId }
  /** A frame over its connection's frames or characters per second (rules/frame-rate-limit.ts). */
  | { type: "rate_limited"; from: ConnId }
  /** A frame the wire refused (wire/client-frames.ts parseClientFrame), with the code it named. */
  | { type: "bad_frame"; from: ConnId; code: ErrorCode; message: string; req?: string }
  /** A `sync` whose page is over the replay budget (objects/work-desk.ts historyPage). */
  | { type: "sync_refused"; from: ConnId; retryAfterMs: number; req?: string };

const REPLY_TYPES: ReadonlySet<string> = new Set<ReplyEvent["type"]>(["ping", "rate_limited", "bad_frame", "sync_refused"]);

export function isReplyEvent(e: AgentEvent): e is ReplyEvent {
  return REPLY_TYPES.has(e.type);
}

/** The one frame that answers a reply event. */
export function replyFrame(e: ReplyEvent): ServerFrame {
  switch (e.type) {
    case "ping":
      return { type: "pong" };
    case "rate_limited":
      return errorFrame("rate_limited", `at most ${LIMITS.framesPerSecond} frames and ${LIMITS.frameCharsPerSecond} characters per second`);
    case "bad_frame":
      return errorFrame(e.code, e.message, e.req);
    case "sync_refused":
      return errorFrame("rate_limited", `sync replay budget exceeded; ask again in ${e.retryAfterMs} ms`, e.req);
  }
}

/** A reply event's whole plan, as effects: its frame to its sender (dropped by apply if the sender is gone). */
export function replyEffects(e: ReplyEvent): Effect[] {
  return [{ type: "frame", to: e.from, frame: replyFrame(e) }];
}
