// What a plan does, as one ordered list of typed effects (Elm's `(Model, Cmd Msg)`): the writes
// first (a post's row, controls, policy, lease, metrics, the outage, counters, every message change
// with the webhook event it makes, the A2A pushes it queues and the marks of its output), then attachments, then frames to
// connections, then the alarm. objects/agent-apply.ts runs the list in order and decides nothing:
// every choice (which webhook event, the outage, a run key, an output mark) is made here. An
// effect names its connection by id (types.ts ConnId), never by position: apply finds the socket
// by it and drops an effect for a connection that is gone. Pure.
import type { LeaseRecord, Transition } from "../election.ts";
import type { MessagePolicy } from "../message-lease.ts";
import { noHolderDueAt, noHolderEvent, outageAfter, statusChangeType, type MessageEventType, type Outage, type WebhookFacts } from "../webhooks.ts";
import { endsTargets, pushedState } from "../a2a-push.ts";
import type { TaskState } from "../../wire/a2a.ts";
import type { ErrorCode } from "../../wire/error-codes.ts";
import type { ServerFrame } from "../../wire/server-frames.ts";
import type { ControlChange } from "./controls.ts";
import type { MessageChange } from "./message-change.ts";
import { outputMarks, type OutputMarks } from "./output.ts";
import type { PostInsert } from "./post.ts";
import type { AgentPlan, AgentSnapshot, ConnId, ServeConn, Tell } from "./types.ts";

export type Effect =
  /** A post's row, before every other write (its hand-out and the messages it ends name it). */
  | { type: "store_post"; insert: PostInsert }
  | { type: "store_controls"; change: ControlChange }
  | { type: "store_policy"; policy: MessagePolicy }
  /** The lease record, with the transition that moved it (null: only the holder's machine relabelled). */
  | { type: "store_lease"; lease: LeaseRecord; transition: Transition | null }
  | { type: "metric"; metric: { kind: "transition"; transition: Transition; lostAt: number } | { kind: "refused"; code: ErrorCode } }
  /** Who holds now, for the restart grace (agent-controls.ts noteHolder). */
  | { type: "note_holder"; runner: string | null; held: boolean }
  /** The agent's outage, changed; `askAccount`: its threshold may be the account's webhook's, which is fetched. */
  | { type: "store_outage"; outage: Outage; askAccount: boolean }
  | { type: "store_agent_checkpoint"; value: unknown; fence: number }
  | { type: "store_counters"; claimCounter: number; tokenCounter: number }
  /** The posted row as stored now, for the copies shown below (before its hand-out changes it). */
  | { type: "read_posted"; id: number }
  /**
   * One message change stored (rules/plan/message-change.ts), then the webhook event it makes (its
   * facts read from the row as stored) and its output's marks.
   */
  | { type: "store_change"; change: MessageChange; webhook: MessageEventType | null; marks: OutputMarks }
  /**
   * The change just stored moved its task's A2A state: one push per target of task `id` is queued
   * (its body read from the row as stored); `ends`: the final state, the targets' last.
   */
  | { type: "queue_push"; id: number; ends: boolean }
  /** An event that is not a message's (agent.no_holder). */
  | { type: "webhook"; facts: WebhookFacts }
  | { type: "attach"; to: ConnId; patch: Partial<ServeConn> }
  | { type: "frame"; to: ConnId; frame: ServerFrame }
  /** A page of history replayed to `to` (copies with no token), then its result. */
  | { type: "replay"; to: ConnId; after: number; last: number; count: number; more: boolean; req?: string }
  | { type: "close"; to: ConnId }
  /** Lease news; the holder's carries the agent's checkpoint as stored. */
  | { type: "tell"; to: ConnId; tell: Omit<Tell, "to">; ttlMs: number }
  /** A message frame: `run` its hand-out (the row this plan stored), else a copy of the posted row. */
  | { type: "message"; to: ConnId; id: number; run: boolean }
  /** The connection's attachment written back (its patches, its cursor moved by a message frame). */
  | { type: "save_attachment"; to: ConnId }
  | { type: "alarm"; alarm: { set: number } | "delete" };

/** The webhook event a change makes: a status change's, or an escalation's (rules/webhooks.ts). */
export function webhookOf(c: MessageChange): MessageEventType | null {
  if (c.kind === "taken_back" && c.escalate) return "message.escalated";
  if (c.lease === null) return null;
  return statusChangeType(c.before, { status: c.lease.status, pending_ask: c.lease.pendingAsk, superseded_by: c.kind === "superseded" ? c.by : null });
}

/** The A2A task state a change pushes to its task's targets (`tasks`: those with targets; rules/a2a-push.ts), or null. */
export function pushOf(c: MessageChange, tasks: ReadonlySet<number>): TaskState | null {
  // A declined attempt never started: whatever the task showed before its hand-out, it shows still.
  if (c.kind === "declined") return null;
  return c.lease !== null && tasks.has(c.id) ? pushedState(c.before, c.lease) : null;
}

/** The outage after this plan: a transition begins or ends one, and one past its threshold is reported once (agent.no_holder). */
function outageEffects(s: AgentSnapshot, transition: Transition | null, lostAt: number): Effect[] {
  const before = s.webhooks.outage;
  let outage = transition === null ? before : outageAfter(before, transition, lostAt);
  const out: Effect[] = [];
  const due = noHolderDueAt(outage, s.webhooks.noHolderAfterMs);
  let report: WebhookFacts | null = null;
  if (due !== null && s.now >= due) {
    report = noHolderEvent(outage, due);
    outage = { ...outage, notified: true };
  }
  // A transition during an unreported outage needs its threshold known (the account's webhook's, fetched when old).
  const askAccount = transition !== null && outage.since !== null && !outage.notified;
  if (askAccount || outage.since !== before.since || outage.notified !== before.notified) out.push({ type: "store_outage", outage, askAccount });
  if (report !== null && s.webhooks.keeps) out.push({ type: "webhook", facts: report });
  return out;
}

/** The plan's effects in the order apply runs them. */
export function planEffects(s: AgentSnapshot, p: Omit<AgentPlan, "effects">): Effect[] {
  const out: Effect[] = [];
  const idOf = (at: number): ConnId => s.conns[at]!.conn.id;
  if (p.post?.ok) out.push({ type: "store_post", insert: p.post.insert });
  if (p.control?.change) out.push({ type: "store_controls", change: p.control.change });
  if (p.policy) out.push({ type: "store_policy", policy: p.policy });
  if (p.leaseChanged) out.push({ type: "store_lease", lease: p.lease, transition: p.transition });
  if (p.transition) {
    out.push({ type: "metric", metric: { kind: "transition", transition: p.transition, lostAt: p.holderLostAt } });
    out.push({ type: "note_holder", runner: p.holderRunner, held: p.transition.toClaim !== null });
  }
  out.push(...outageEffects(s, p.transition, p.holderLostAt));
  if (p.refused !== null) out.push({ type: "metric", metric: { kind: "refused", code: p.refused } });
  if (p.agentCheckpoint) out.push({ type: "store_agent_checkpoint", value: p.agentCheckpoint.value, fence: p.agentCheckpoint.fence });
  if (p.claimCounter !== s.claimCounter || p.tokenCounter !== s.tokenCounter) {
    out.push({ type: "store_counters", claimCounter: p.claimCounter, tokenCounter: p.tokenCounter });
  }
  if (p.copies.length > 0) out.push({ type: "read_posted", id: p.copies[0]!.id });
  for (const c of p.changes) {
    const webhook = s.webhooks.keeps ? webhookOf(c) : null;
    out.push({ type: "store_change", change: c, webhook, marks: outputMarks(c, c.kind === "hand_out" ? c.machine : null) });
    const pushed = s.webhooks.push ? pushOf(c, s.webhooks.push.tasks) : null;
    if (pushed !== null) out.push({ type: "queue_push", id: c.id, ends: endsTargets(pushed) });
  }
  const touched = new Set<number>(p.patches.keys());
  for (const [at, patch] of p.patches) out.push({ type: "attach", to: idOf(at), patch });
  for (const r of p.replies) out.push({ type: "frame", to: r.to, frame: r.frame });
  if (p.replay) out.push({ type: "replay", ...p.replay });
  for (const at of p.close) out.push({ type: "close", to: idOf(at) });
  for (const t of p.takeBacks) {
    if (t.revoke) out.push({ type: "frame", to: idOf(t.revoke.to), frame: { type: "revoked", id: t.lease.id, token: t.revoke.token, reason: t.revoke.reason } });
  }
  for (const { stop, reason, by } of p.cancels) {
    if (stop) out.push({ type: "frame", to: idOf(stop.to), frame: { type: "cancel", id: stop.id, token: stop.token, reason, by: by.token } });
  }
  for (const { to, ...tell } of p.tells) out.push({ type: "tell", to: idOf(to), tell, ttlMs: s.ttlMs });
  for (const h of p.handOuts) {
    out.push({ type: "message", to: idOf(h.to), id: h.lease.id, run: true });
    touched.add(h.to);
  }
  for (const c of p.copies) {
    out.push({ type: "message", to: idOf(c.to), id: c.id, run: false });
    touched.add(c.to);
  }
  for (const at of touched) out.push({ type: "save_attachment", to: idOf(at) });
  for (const r of p.lastReplies) out.push({ type: "frame", to: r.to, frame: r.frame });
  if (p.alarm) out.push({ type: "alarm", alarm: p.alarm });
  return out;
}
