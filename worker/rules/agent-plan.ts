// One event of an agent object, decided in one place. The object reads a snapshot (its lease, its
// live connections with their proven heartbeats, its controls, its open messages, its counters),
// passes it here with the event, and applies the plan it gets back: writes first, then frames.
// Nothing in here touches sockets, storage or the clock, and nothing calls back into the object.
//
//   frame / close / alarm / request ─▶ snapshot ─▶ planAgent ─▶ plan ─▶ apply (store, attach, send, alarm)
//
// The plan is made in phases, each a pure function in ./plan/ with its own table tests:
// event (the sender's change, cancels) → liveness → elect → tell → take back → dispatch → deadlines.
import { holdsLease } from "./fencing.ts";
import { candidatesOf, elect, preferenceContext } from "./plan/elect.ts";
import { senderChange, workChange } from "./plan/event.ts";
import { liveness } from "./plan/liveness.ts";
import { tell } from "./plan/tell.ts";
import { takeBackDue } from "./plan/take-back.ts";
import { dispatch, eligibleRunners } from "./plan/dispatch.ts";
import { nextAlarm } from "./plan/deadlines.ts";
import { webhookWake } from "./plan/webhook-wake.ts";
import { decideControl, withControl, decidePolicy } from "./plan/controls.ts";
import { isOpen } from "./message-lease.ts";
import { mergePatches, positionOf, runnerOf, type AgentEvent, type AgentPlan, type AgentSnapshot, type ConnPatches, type MessageChange, type ServeConn } from "./plan/types.ts";
import { quietPlan, quietWritePlan } from "./plan/quiet-write.ts";
import { decideAnyWrite, type WriteVerdict } from "./plan/write-event.ts";
import { planEffects } from "./plan/effects.ts";
import { isReplyEvent, replyFrame } from "./plan/reply.ts";
import { errorFrame, LIMITS } from "../wire/protocol.ts";

export { runnerOf };
export type {
  AgentEvent, AgentPlan, AgentSnapshot, CancelPlan, Canceller, ConnId, ConnSnapshot, ControlsSnapshot, MessageChange, RevokeReason, ServeConn, TakeBack, Tell,
} from "./plan/types.ts";
export type { TargetMessage } from "./plan/person.ts";

/** A change that ends its message drops the uploads it never committed. */
function withBlobs(c: MessageChange): MessageChange {
  return c.lease !== null && c.lease.status !== c.before && !isOpen(c.lease) ? { ...c, dropUncommitted: true } : c;
}

/**
 * The frames answering the event's sender, by its id: a write's answer, a stale frame's refusal and
 * a new connection's welcome first, a release's answer after the lease news it causes.
 */
function repliesOf(s: AgentSnapshot, e: AgentEvent, written: WriteVerdict | null, released: boolean | null, fence: number): Pick<AgentPlan, "replies" | "lastReplies"> {
  if (e.type === "write" && e.from !== null && written?.frame) return { replies: [{ to: e.from, frame: written.frame }], lastReplies: [] };
  if (e.type === "stale_frame") return { replies: [{ to: e.from, frame: errorFrame("lease_expired", "no heartbeat within the TTL; reconnect and claim again") }], lastReplies: [] };
  if (e.type === "opened") return { replies: [{ to: e.from, frame: { type: "welcome", agent: e.agent, heartbeat_ttl_ms: s.ttlMs, limits: LIMITS } }], lastReplies: [] };
  if (e.type === "release") return { replies: [], lastReplies: [{ to: e.from, frame: { type: "result", op: "release", req: e.req, released: released ?? false, fence } }] };
  return { replies: [], lastReplies: [] };
}

/** The `i`-th run key the object drew for this event; it draws one per slot a hand-out could fill, so running out is a bug. */
function runKeyOf(s: AgentSnapshot, i: number): string {
  const key = s.runKeys[i];
  if (key === undefined) throw new Error(`the snapshot carries ${s.runKeys.length} run keys and the plan hands out more`);
  return key;
}

/**
 * An event about a connection that is no longer live (it is closing) has nothing of its own to
 * change, so it is `work`. A write's change still stands; its answer, like a stale frame's, is
 * addressed to its sender and goes nowhere (apply drops a frame to a gone connection).
 */
function withLiveSender(s: AgentSnapshot, e: AgentEvent): AgentEvent {
  if (e.type !== "claim" && e.type !== "release" && e.type !== "hello" && e.type !== "sync" && e.type !== "opened") return e;
  return positionOf(s.conns.map((c) => c.conn), e.from) < 0 ? { type: "work" } : e;
}

/** The plan of one event, with its effects in the order apply runs them (./plan/effects.ts). */
export function planAgent(s: AgentSnapshot, event: AgentEvent): AgentPlan {
  // A reply event reads and changes nothing: its one frame (the object applies ./plan/reply.ts replyEffects to the same end without a snapshot).
  const plan = isReplyEvent(event)
    ? quietPlan(s, { changes: [], write: null, replies: [{ to: event.from, frame: replyFrame(event) }] })
    : decide(s, withLiveSender(s, event));
  return { ...plan, effects: planEffects(s, plan) };
}

function decide(s: AgentSnapshot, e: AgentEvent): Omit<AgentPlan, "effects"> {
  const { now, ttlMs } = s;
  // A runner's write is decided first, at its token (or the serve fence), over the rows it carries.
  const written = e.type === "write" ? decideAnyWrite(e.write, { lease: s.lease, policy: s.work.policy, journalBudget: s.work.journalBudget }, now) : null;
  const quietWrite = written && e.type === "write" ? quietWritePlan(s, e.from, written) : null;
  if (quietWrite) return quietWrite;
  // A control or a policy update is stored by this plan and holds for it already.
  const control = e.type === "control" ? decideControl(e.route, e.body, s.controls, s.lease.holderMachine, now) : null;
  const controls = withControl(s.controls, control?.change ?? null);
  const decided = e.type === "policy" ? decidePolicy(s.work.policy, e.update) : null;
  const policy = decided?.ok ? decided.policy : s.work.policy;
  const patches: ConnPatches = new Map();
  const conns = (): ServeConn[] => s.conns.map((c, i) => ({ ...c.conn, ...patches.get(i) }));
  const heartbeats = s.conns.map((c) => c.heartbeat);

  const sender = senderChange(conns(), s.lease, s.claimCounter, e, now);
  mergePatches(patches, sender.patches);
  const work = workChange(s.work.open, e, s.work.journalBudget, now, policy, written?.change ?? null);

  const alive = liveness(conns(), heartbeats, s.lease, now, ttlMs);
  mergePatches(patches, alive.patches);

  const candidates = candidatesOf(conns(), heartbeats, alive.live, controls.drained);
  const elected = elect(candidates, sender.lease, work.open.values(), controls, e, alive.holderLostAt !== null, now);
  const lease = elected.lease;
  const leaseChanged = sender.leaseChanged || elected.transition !== null;

  const told = tell(conns(), heartbeats, alive.live, candidates, lease, sender.forceTell);
  mergePatches(patches, told.patches);

  const view = conns();
  const connected = new Map(alive.live.filter((i) => view[i]!.claimSeq !== null).map((i) => [runnerOf(view[i]!), i]));
  const eligible = eligibleRunners(view, alive.live, lease, policy);
  const taken = takeBackDue(work.open, connected, eligible, work.cancelling, policy, now, { due: s.work.due, budget: s.work.journalBudget });
  const given = dispatch(taken.open, view, eligible, candidates, lease, controls, policy, taken.avoid, s.tokenCounter, now);

  const changes = [
    ...work.changes, ...taken.changes, ...work.ends,
    ...given.handOuts.map((h, i): MessageChange => ({
      kind: "hand_out", id: h.lease.id, before: taken.open.get(h.lease.id)!.status, lease: h.lease, to: h.to, fence: lease.fence, machine: view[h.to]!.machine, runKey: runKeyOf(s, i),
    })),
  ].map(withBlobs);
  const holderLostAt = alive.holderLostAt ?? now;
  // A posted message is shown to every connection that does not run it; a question for a person to none (a sync replays it as history).
  const posted = work.post?.ok && !work.post.insert.forPerson ? work.post.insert.id : undefined;
  const runner = given.handOuts.find((h) => h.lease.id === posted)?.to;
  const copies = posted === undefined ? [] : s.conns.flatMap((_, to) => (to === runner ? [] : [{ to, id: posted }]));

  const holder = alive.live.find((i) => holdsLease(view[i]!, lease));
  const alarm = nextAlarm({
    now, ttlMs, scanMs: s.scanMs, liveHeartbeats: alive.live.map((i) => heartbeats[i]!), holderHeartbeat: holder === undefined ? undefined : heartbeats[holder],
    open: given.open.values(), parkDeadline: s.work.parkDeadline, candidates,
    ownDeadlines: [...s.ownDeadlines, webhookWake(s.webhooks, changes, elected.transition, holderLostAt, now)],
    preference: preferenceContext(controls, lease.holderClaim, false, now), alarmAt: s.alarmAt,
  });

  // A scan that found everyone alive and moved nothing changed nothing anybody watches.
  // A write that moved no message (a checkpoint, a refusal) is answered and changes nothing either.
  const moved = changes.some((c) => c.lease !== null);
  // A post its on_busy policy refused stored nothing.
  // A refused write changes the refusal counts /metrics shows with presence.
  const refused = written?.refused ?? null;
  const quiet = e.type === "alarm" || e.type === "stale_frame" || (e.type === "write" && refused === null && !moved) || (e.type === "post" && !work.post?.ok)
    || (control !== null && control.change === null)
    // A history page changes what presence shows only when the connection's cursor moved.
    || (e.type === "sync" && sender.patches.get(positionOf(view, e.from))?.cursor === undefined);
  // A heartbeat, a step or a message checkpoint moves no message: presence stays as it was.
  const presenceChanged = !quiet || leaseChanged || alive.close.length > 0 || moved;

  return {
    lease, leaseChanged, transition: elected.transition, holderLostAt, holderRunner: elected.holderRunner,
    claimCounter: sender.claimCounter, tokenCounter: given.tokenCounter, patches, close: alive.close, tells: told.tells,
    takeBacks: taken.takeBacks, handOuts: given.handOuts, released: sender.released, cancel: e.type === "cancel" ? taken.cancels[0]! : null,
    cancels: taken.cancels, superseded: work.superseded, changes, person: work.person, post: work.post, control,
    policy: decided?.ok ? decided.policy : null, policyRefusal: decided?.ok === false ? decided.message : null, copies,
    refused, agentCheckpoint: written?.agentCheckpoint ?? null, write: written, replay: e.type === "sync" ? { to: e.from, after: e.after, last: e.last, count: e.count, more: e.more, ...(e.req === undefined ? {} : { req: e.req }) } : null,
    ...repliesOf(s, e, written, sender.released, lease.fence), alarm, presenceChanged,
  };
}
