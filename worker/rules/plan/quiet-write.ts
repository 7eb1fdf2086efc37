// A runner's write that moves no message (a step or effect record, a heartbeat, a message
// checkpoint): stored and answered, and nothing else planned. It proves nothing about anyone
// else's liveness and frees no slot, so liveness, election, take back and dispatch wait for the
// next event or the alarm, as they did before writes went through the plan; the write costs one
// durable write and its answer (the step record's bench goal). A reply event (./reply.ts) is
// planned the same way, with its one frame and no write.
import type { WriteVerdict } from "./write-event.ts";
import type { AgentPlan, AgentSnapshot, ConnId } from "./types.ts";
import type { ServerFrame } from "../../wire/server-frames.ts";

/** A plan that changes nothing of the agent: its lease, counters and connections stay; only `replies` and a write's own change go out. */
export function quietPlan(s: AgentSnapshot, over: Pick<AgentPlan, "changes" | "write" | "replies">): Omit<AgentPlan, "effects"> {
  return {
    lease: s.lease, leaseChanged: false, transition: null, holderLostAt: s.now, holderRunner: null,
    claimCounter: s.claimCounter, tokenCounter: s.tokenCounter, patches: new Map(), close: [], tells: [],
    takeBacks: [], handOuts: [], released: null, cancel: null, cancels: [], superseded: [],
    control: null, policy: null, policyRefusal: null, post: null, person: null, replay: null,
    agentCheckpoint: null, refused: null, lastReplies: [], copies: [], alarm: null, presenceChanged: false, ...over,
  };
}

/** The plan of a write (decided: `w`, from connection `from`) that moves no message, or null (planned in full). */
export function quietWritePlan(s: AgentSnapshot, from: ConnId | null, w: WriteVerdict): Omit<AgentPlan, "effects"> | null {
  const quiet = w.refused === null && w.agentCheckpoint === null && (w.change === null || w.change.lease === null);
  if (!quiet) return null;
  const replies: { to: ConnId; frame: ServerFrame }[] = from !== null && w.frame !== null ? [{ to: from, frame: w.frame }] : [];
  return quietPlan(s, { changes: w.change === null ? [] : [w.change], write: w, replies });
}
