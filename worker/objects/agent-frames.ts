// What a frame from a serve connection is to the plan: one event (rules/plan/types.ts), named by
// its sender's id. The wire parsed it (or refused it: a bad_frame event); a history page takes the
// replay budget here, before the plan, and one over it is a sync_refused event; a runner's write
// carries the rows it touches (work-desk.ts writeInput). Nothing is decided or sent here.
import type { AgentEvent } from "../rules/agent-plan.ts";
import type { ClientFrame, Parsed } from "../wire/protocol.ts";
import type { ConnState } from "./connections.ts";
import type { WorkDesk } from "./work-desk.ts";

/** The event of one parsed (or refused) frame from connection `state`. */
export function frameEvent(desk: WorkDesk, ws: WebSocket, state: ConnState, parsed: Parsed<ClientFrame>, now: number): AgentEvent {
  const from = state.id;
  if (!parsed.ok) return { type: "bad_frame", from, code: parsed.code, message: parsed.message, ...(parsed.req === undefined ? {} : { req: parsed.req }) };
  const frame = parsed.frame;
  const req = "req" in frame && frame.req !== undefined ? { req: frame.req } : {};
  switch (frame.type) {
    case "ping":
      return { type: "ping", from };
    case "hello":
      return { type: "hello", from, machine: frame.machine, slots: frame.concurrency, ...(frame.stopping ? { stopping: true as const } : {}) };
    case "serve_lease":
      if (frame.op === "claim") return { type: "claim", from, priority: frame.priority, runnerId: frame.runner_id, slots: frame.concurrency };
      return { type: "release", from, ...req };
    case "sync": {
      // History is replayed by the plan; a page over the replay budget is refused before it, as a frame over the rate.
      const page = desk.historyPage(ws, frame.after, now);
      if (!page.ok) return { type: "sync_refused", from, retryAfterMs: page.retryAfterMs, ...req };
      const { known, last, count, more } = page;
      return { type: "sync", from, after: frame.after, ...req, known, last, count, more };
    }
    default:
      return { type: "write", from, write: desk.writeInput(state, frame) };
  }
}

/**
 * A new message checkpoint drops the blob of the one it replaced, and an acknowledgement the
 * uploads it did not commit: the object deletes them now, not at the next alarm.
 */
export function leavesBlobs(parsed: Parsed<ClientFrame>): boolean {
  const type = parsed.ok ? parsed.frame.type : null;
  return type === "message_checkpoint" || type === "park" || type === "ack" || type === "reply";
}
