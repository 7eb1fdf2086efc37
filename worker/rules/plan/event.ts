// Phase 1 of a plan: what the event itself changes before anything else is looked at. A claim,
// release or hello changes its sender's attachment (and a holder's new label the lease); a cancel
// or a busy post ends messages, so their slots and groups are free for this very dispatch.
import { holdsLease } from "../fencing.ts";
import type { LeaseRecord } from "../election.ts";
import { cancel, type CancelVerdict } from "../message-cancel.ts";
import type { MessageLease } from "../message-lease.ts";
import { supersede } from "../on-busy.ts";
import type { MessagePolicy } from "../message-lease.ts";
import { inWindow, planPost, type PostPlan } from "./post.ts";
import { personAnswer, personResume, personRetry, type PersonRefusal } from "./person.ts";
import { positionOf, type AgentEvent, type AgentPlan, type Canceller, type ConnPatches, type MessageChange, type ServeConn } from "./types.ts";

export interface SenderChange {
  patches: ConnPatches;
  claimCounter: number;
  lease: LeaseRecord;
  leaseChanged: boolean;
  /** Every claimant must hear the lease again (the holder's machine label changed). */
  forceTell: boolean;
  /** The answer to a release: whether the sender held the lease (null for any other event). */
  released: boolean | null;
}

/** The event's own change to its sender (named by id, live: agent-plan.ts); a claim takes the next claim sequence unless it holds one. */
export function senderChange(conns: readonly ServeConn[], lease: LeaseRecord, claimCounter: number, e: AgentEvent, now: number): SenderChange {
  const patches: ConnPatches = new Map();
  const out: SenderChange = { patches, claimCounter, lease, leaseChanged: false, forceTell: false, released: null };
  const at = "from" in e ? positionOf(conns, e.from) : -1;
  if (at < 0) return out;
  const patch = (p: Partial<ServeConn>) => patches.set(at, { ...patches.get(at), ...p });
  const c = conns[at]!;
  if (e.type === "claim") {
    if (c.claimSeq === null || c.released) {
      out.claimCounter += 1;
      patch({
        claimSeq: out.claimCounter, released: false, readySince: now, toldHeld: null,
        ...(e.priority === undefined ? {} : { priority: e.priority }),
        ...(e.runnerId === undefined ? {} : { runnerId: e.runnerId }),
      });
    }
    // Saved even when the claim itself changes nothing (a re-claim with other slots).
    if (e.slots !== undefined && e.slots !== c.slots) patch({ slots: e.slots });
  } else if (e.type === "release") {
    out.released = holdsLease(c, lease);
    // A standby that releases leaves the line too (a stopping runner whose lease was handed on must never get it back).
    if (c.claimSeq !== null && !c.released) patch({ released: true });
  } else if (e.type === "sync") {
    // The cursor moves past what the connection says it knows and past the page it is shown.
    const before = c.cursor ?? 0;
    const cursor = Math.max(before, e.known, e.count > 0 ? e.last : 0);
    if (cursor !== before) patch({ cursor });
  } else if (e.type === "hello") {
    if (e.slots !== undefined && e.slots !== c.slots) patch({ slots: e.slots });
    if (e.stopping && c.stopping !== true) patch({ stopping: true });
    if (e.machine && e.machine !== c.machine) {
      patch({ machine: e.machine });
      // A holder's new label reaches the lease and every claimant.
      if (holdsLease(c, lease)) {
        out.lease = { ...lease, holderMachine: e.machine };
        out.leaseChanged = true;
        out.forceTell = true;
      }
    }
  }
  return out;
}

export interface Cancelling {
  target: MessageLease;
  by: Canceller;
  reason: string | null;
  verdict: CancelVerdict;
}

export interface WorkChange {
  /** The open messages as this event leaves them, by id. */
  open: Map<number, MessageLease>;
  cancelling: Cancelling[];
  superseded: AgentPlan["superseded"];
  /** The event's own message write (a runner's write, a person's input), stored before anything else. */
  changes: MessageChange[];
  /** The messages the event ends (cancels, supersedes), stored after the take-backs. */
  ends: MessageChange[];
  /** The answer to a person's input; null for any other event. */
  person: { ok: true } | PersonRefusal | null;
  /** A post's row and what it does to its group (null for any other event). */
  post: PostPlan | null;
}

/** A person's input, decided (./person.ts). */
function personVerdict(e: AgentEvent, budget: { steps: number; bytes: number }, now: number) {
  if (e.type === "answer") return personAnswer(e.target, e.id, e.reply, e.by, budget, now);
  if (e.type === "resume") return personResume(e.target, e.id, e.input, e.outcome, e.by, budget, now);
  if (e.type === "retry") return personRetry(e.target, e.id, e.by);
  return null;
}

/**
 * The event's own change to the messages, before anything else looks at them: a runner's write
 * (`written`, decided by ./write-event.ts) or a person's input moves one message; a post adds one (./post.ts);
 * a cancel or a busy post ends its messages (rules/message-cancel.ts, rules/on-busy.ts), so their
 * slots and groups are free for this very dispatch. `policy` is read only by a post.
 */
export function workChange(
  open: readonly MessageLease[], e: AgentEvent, budget: { steps: number; bytes: number } = { steps: 0, bytes: 0 }, now = 0, policy?: MessagePolicy,
  written: MessageChange | null = null,
): WorkChange {
  const out: WorkChange = { open: new Map(open.map((m) => [m.id, m])), cancelling: [], superseded: [], changes: [], ends: [], person: null, post: null };
  if (written !== null) out.changes.push(written);
  const verdict = personVerdict(e, budget, now);
  if (verdict !== null) {
    out.person = verdict.ok ? { ok: true } : verdict;
    if (verdict.ok) out.changes.push(verdict.change);
  }
  const posted = e.type === "post" && policy ? planPost(e.post, e.lastId, e.groupOpen, policy, now) : null;
  out.post = posted;
  if (posted?.ok) {
    if (posted.change) out.changes.push(posted.change);
    else if (inWindow(out.open.values(), posted.lease)) out.open.set(posted.lease.id, posted.lease);
  }
  // A moved message is dispatched (queued), watched (running, parked) or gone from the open ones.
  for (const c of out.changes) if (c.lease !== null) out.open.set(c.id, c.lease);
  if (e.type === "cancel") out.cancelling = [{ target: e.target, by: e.by, reason: e.reason, verdict: cancel(e.target) }];
  if (posted?.ok && e.type === "post") out.cancelling = posted.interrupt.map((t) => ({ target: t, by: e.by, reason: `interrupted by message ${posted.insert.id}`, verdict: cancel(t) }));
  for (const c of out.cancelling) {
    if (c.verdict.outcome !== "cancelled") continue;
    out.open.set(c.target.id, c.verdict.message);
    out.ends.push({ kind: "cancelled", id: c.target.id, before: c.target.status, lease: c.verdict.message, by: c.by, reason: c.reason });
  }
  if (!posted?.ok) return out;
  for (const t of posted.supersede) {
    const after = supersede(t);
    if (after === null) continue;
    out.superseded.push({ lease: after, by: posted.insert.id });
    out.open.set(t.id, after);
    out.ends.push({ kind: "superseded", id: t.id, before: t.status, lease: after, by: posted.insert.id });
  }
  return out;
}
