// Applies one plan of an agent object (../rules/agent-plan.ts) and decides nothing: writes first
// (a post's row, controls, policy, lease, transition, counters, a refusal's count, the agent's
// checkpoint, every message change in the plan's order, each one's webhook event from its status
// before and after), then attachments, then frames (replies, a history page, closes, revokes,
// cancels, lease news, hand-outs, copies, a release's answer), then the alarm. The output gate holds every frame until
// the writes it follows are durable.
import type { AgentPlan } from "../rules/agent-plan.ts";
import { escalationEvent } from "../rules/webhooks.ts";
import { CLOSE_CODES } from "../wire/protocol.ts";
import type { AgentControls } from "./agent-controls.ts";
import type { AgentStore } from "./agent-store.ts";
import type { AgentWebhooks } from "./agent-webhooks.ts";
import { closeQuietly, send, writeConn } from "./connections.ts";
import type { LiveConn } from "./agent-inputs.ts";
import type { Retention, StoredMessage } from "./message-store.ts";
import type { AgentMetricsKeeper } from "./metrics-agent.ts";
import { randomHex128 } from "./secrets.ts";
import type { WorkDesk } from "./work-desk.ts";
import type { Clock } from "./clock.ts";

export interface ApplyParts {
  desk: WorkDesk;
  store: AgentStore;
  metrics: AgentMetricsKeeper;
  webhooks: AgentWebhooks;
  controls: AgentControls;
  ctx: DurableObjectState;
  clock: Clock;
  ttlMs: number;
  retention: Retention;
}

export interface Applied {
  /** A fetch of the account's webhook the transition needs (its outage threshold); true when it changed what is known. */
  accountWebhook: Promise<boolean> | null;
  /** Uploads became garbage: the object sweeps them. */
  sweep: boolean;
}

export function applyPlan(p: ApplyParts, plan: AgentPlan, conns: readonly LiveConn[], now: number): Applied {
  const { messages, leases } = p.desk;
  let accountWebhook: Promise<boolean> | null = null;
  // A post's row first: every other change may name it (its hand-out, the messages it ends).
  let sweep = plan.post?.ok ? p.desk.storePost(plan.post.insert, p.retention, now) : false;
  if (plan.control?.change) p.controls.store(plan.control.change);
  if (plan.policy) leases.policies.savePolicy(plan.policy);
  if (plan.leaseChanged) p.store.saveLease(plan.lease, plan.transition);
  if (plan.transition) {
    p.metrics.transition(plan.transition, plan.holderLostAt);
    accountWebhook = p.webhooks.holderChanged(plan.transition, plan.holderLostAt, now);
    p.controls.noteHolder(plan.holderRunner, plan.transition.toClaim !== null);
  }
  if (plan.refused !== null) p.metrics.refused(plan.refused, now);
  if (plan.agentCheckpoint) messages.saveCheckpoint(plan.agentCheckpoint.value, plan.agentCheckpoint.fence, now);
  p.store.saveClaimCounter(plan.claimCounter);
  leases.policies.saveTokenCounter(plan.tokenCounter);
  // A posted message is shown to the other connections as it was posted, before its hand-out below.
  const posted = plan.copies.length > 0 ? messages.get(plan.copies[0]!.id) : null;
  const handedOut = new Map<number, StoredMessage>();
  for (const c of plan.changes) {
    const runner = c.kind === "hand_out" ? conns[c.to]! : null;
    const saved = leases.save(c, now, runner && { fence: plan.lease.fence, machine: runner.state.machine, runKey: randomHex128() });
    p.desk.saveOutput(c, runner?.state.machine ?? null, now);
    if (saved !== null) {
      if (c.kind === "taken_back" && c.escalate) p.webhooks.enqueue(escalationEvent(saved), now);
      else p.webhooks.messageChanged(c.before, saved, now);
      if (c.kind === "hand_out") handedOut.set(saved.id, saved);
    }
    sweep ||= c.dropUncommitted === true;
  }
  const changed = new Set<number>(plan.patches.keys());
  for (const [i, patch] of plan.patches) Object.assign(conns[i]!.state, patch);
  for (const r of plan.replies) send(conns[r.to]!.ws, r.frame);
  if (plan.replay) {
    const { to, after, last, count, more, req } = plan.replay;
    for (const m of count > 0 ? messages.range(after, last) : []) p.desk.push(conns[to]!, m, false);
    send(conns[to]!.ws, { type: "result", op: "sync", req, cursor: last, more });
  }
  for (const i of plan.close) closeQuietly(conns[i]!.ws, CLOSE_CODES.heartbeatTimeout, "heartbeat timeout");
  for (const t of plan.takeBacks) {
    if (t.revoke) send(conns[t.revoke.to]!.ws, { type: "revoked", id: t.lease.id, token: t.revoke.token, reason: t.revoke.reason });
  }
  for (const { stop, reason, by } of plan.cancels) if (stop) send(conns[stop.to]!.ws, { type: "cancel", id: stop.id, token: stop.token, reason, by: by.token });
  const checkpoint = plan.tells.some((t) => t.held) ? messages.checkpoint() : null;
  for (const t of plan.tells) {
    send(conns[t.to]!.ws, {
      type: "serve_lease", held: t.held, fence: t.fence, claim_seq: t.claimSeq, position: t.position, ttl_ms: p.ttlMs,
      holder: t.holder && { claim_seq: t.holder.claimSeq, machine: t.holder.machine, since: t.holder.since },
      ...(t.held && checkpoint ? { checkpoint: checkpoint.value, checkpoint_fence: checkpoint.fence } : {}),
    });
  }
  for (const h of plan.handOuts) {
    const stored = handedOut.get(h.lease.id);
    if (!stored) continue;
    p.desk.push(conns[h.to]!, stored, true);
    changed.add(h.to);
  }
  for (const c of plan.copies) {
    if (!posted) break;
    p.desk.push(conns[c.to]!, posted, false);
    changed.add(c.to);
  }
  for (const i of changed) writeConn(conns[i]!.ws, conns[i]!.state);
  for (const r of plan.lastReplies) send(conns[r.to]!.ws, r.frame);
  if (plan.alarm === "delete") void p.ctx.storage.deleteAlarm();
  else if (plan.alarm) void p.ctx.storage.setAlarm(p.clock.alarmAt(plan.alarm.set));
  return { accountWebhook, sweep };
}
