// Applies one plan of an agent object: runs its effects (../rules/plan/effects.ts) in the order
// the plan lists them, and nothing else. Each effect is one store call or one frame; what an
// effect needs beyond itself is read from what this very list stored (the row a change stored,
// for its webhook event's facts, its A2A pushes and its hand-out frame; the agent's checkpoint, for lease news).
// A connection is found by its id; an effect for one that is gone (closed since) does nothing.
// The output gate holds every frame until the writes it follows are durable; a frame of a
// transaction (a schedule fire) waits in `outbound` until it commits (outbound.ts).
import type { AgentPlan } from "../rules/agent-plan.ts";
import type { Effect } from "../rules/plan/effects.ts";
import { messageEvent } from "../rules/webhooks.ts";
import { CLOSE_CODES } from "../wire/protocol.ts";
import type { ServerFrame } from "../wire/server-frames.ts";
import type { AgentControls } from "./agent-controls.ts";
import type { AgentStore } from "./agent-store.ts";
import type { AgentWebhooks } from "./agent-webhooks.ts";
import { closeQuietly, send, writeConn, type ConnState } from "./connections.ts";
import type { Socket } from "./socket-object.ts";
import type { Retention, StoredMessage } from "./message-store.ts";
import type { AgentMetricsKeeper } from "./metrics-agent.ts";
import type { WorkDesk } from "./work-desk.ts";
import type { Clock } from "./clock.ts";
import type { Outbound } from "./outbound.ts";

export interface ApplyParts {
  desk: WorkDesk;
  store: AgentStore;
  metrics: AgentMetricsKeeper;
  webhooks: AgentWebhooks;
  controls: AgentControls;
  ctx: DurableObjectState;
  clock: Clock;
  retention: Retention;
  outbound: Outbound;
}

export interface Applied {
  /** A fetch of the account's webhook the outage needs (its threshold); true when it changed what is known. */
  accountWebhook: Promise<boolean> | null;
  /** Uploads became garbage: the object sweeps them. */
  sweep: boolean;
}

/** What the list has stored so far that a later effect of it reads. */
interface Stored {
  /** The posted row as it was posted (copies show it so), and each row a change stored, by id. */
  posted: StoredMessage | null;
  rows: Map<number, StoredMessage>;
  /** The row the last change stored with its lease (null: none, as an acknowledgement's). */
  last: StoredMessage | null;
  checkpoint: { value: unknown; fence: number } | null | undefined;
}

/** Runs a plan's effects (or a reply event's, rules/plan/reply.ts) over `conns`, the live connections they may name. */
export function applyEffects(p: ApplyParts, effects: readonly Effect[], conns: readonly Socket<ConnState>[], now: number): Applied {
  const applied: Applied = { accountWebhook: null, sweep: false };
  const stored: Stored = { posted: null, rows: new Map(), last: null, checkpoint: undefined };
  const byId = new Map(conns.map((c) => [c.state.id, c]));
  for (const e of effects) run(p, e, byId, now, applied, stored);
  return applied;
}

export function applyPlan(p: ApplyParts, plan: AgentPlan, conns: readonly Socket<ConnState>[], now: number): Applied {
  return applyEffects(p, plan.effects, conns, now);
}

function run(p: ApplyParts, e: Effect, byId: ReadonlyMap<string, Socket<ConnState>>, now: number, applied: Applied, stored: Stored): void {
  if ("to" in e) {
    const to = byId.get(e.to);
    if (to === undefined) return;
    // A patch of the connection's state is read by the next event of the same transaction: applied now.
    if (e.type === "attach") Object.assign(to.state, e.patch);
    else p.outbound.send(() => toConnection(p, e, to, stored));
    return;
  }
  const { messages, leases } = p.desk;
  switch (e.type) {
    case "store_post":
      applied.sweep ||= p.desk.storePost(e.insert, p.retention, now);
      return;
    case "store_controls":
      return p.controls.store(e.change);
    case "store_policy":
      return leases.policies.savePolicy(e.policy);
    case "store_lease":
      return p.store.saveLease(e.lease, e.transition);
    case "metric":
      if (e.metric.kind === "transition") return p.metrics.transition(e.metric.transition, e.metric.lostAt);
      return p.metrics.refused(e.metric.code, now);
    case "note_holder":
      return p.controls.noteHolder(e.runner, e.held);
    case "store_outage":
      applied.accountWebhook = p.webhooks.outageChanged(e.outage, e.askAccount, now) ?? applied.accountWebhook;
      return;
    case "store_agent_checkpoint":
      return messages.agentCheckpoint.save(e.value, e.fence, now);
    case "store_counters":
      p.store.saveClaimCounter(e.claimCounter);
      return leases.policies.saveTokenCounter(e.tokenCounter);
    case "read_posted":
      stored.posted = messages.get(e.id);
      return;
    case "store_change": {
      const c = e.change;
      const saved = leases.save(c, now);
      stored.last = saved;
      if (c.kind === "output") p.desk.appendOutput(c.id, c.output, now);
      if (e.marks.ended !== null || e.marks.began !== null) p.desk.output.mark(c.id, e.marks, now);
      if (saved !== null) {
        stored.rows.set(saved.id, saved);
        if (e.webhook !== null) p.webhooks.outbox.enqueue(messageEvent(e.webhook, c.before, saved), now);
      }
      applied.sweep ||= c.dropUncommitted === true;
      return;
    }
    case "queue_push": {
      // An acknowledgement stores its row without handing it back: the push reads it as stored.
      const row = stored.last?.id === e.id ? stored.last : messages.get(e.id);
      return p.webhooks.push.changed(e.id, row ? p.desk.view(row) : null, e.ends, now);
    }
    case "webhook":
      p.webhooks.outbox.enqueue(e.facts, now);
      return;
    case "alarm":
      if (e.alarm === "delete") void p.ctx.storage.deleteAlarm();
      else void p.ctx.storage.setAlarm(p.clock.alarmAt(e.alarm.set));
      return;
  }
}

/** An effect for one live connection, `to`. */
function toConnection(p: ApplyParts, e: Exclude<Extract<Effect, { to: string }>, { type: "attach" }>, to: Socket<ConnState>, stored: Stored): void {
  switch (e.type) {
    case "frame":
      return send(to.ws, e.frame);
    case "replay": {
      for (const m of e.count > 0 ? p.desk.messages.pages.range(e.after, e.last) : []) p.desk.push(to, m, false);
      return send(to.ws, { type: "result", op: "sync", req: e.req, cursor: e.last, more: e.more });
    }
    case "close":
      return closeQuietly(to.ws, CLOSE_CODES.heartbeatTimeout, "heartbeat timeout");
    case "tell": {
      const t = e.tell;
      if (t.held && stored.checkpoint === undefined) stored.checkpoint = p.desk.messages.agentCheckpoint.get();
      const checkpoint = t.held ? stored.checkpoint : null;
      const frame: ServerFrame = {
        type: "serve_lease", held: t.held, fence: t.fence, claim_seq: t.claimSeq, position: t.position, ttl_ms: e.ttlMs,
        holder: t.holder && { claim_seq: t.holder.claimSeq, machine: t.holder.machine, since: t.holder.since },
        ...(checkpoint ? { checkpoint: checkpoint.value, checkpoint_fence: checkpoint.fence } : {}),
      };
      return send(to.ws, frame);
    }
    case "message": {
      const row = e.run ? stored.rows.get(e.id) : stored.posted;
      if (row) p.desk.push(to, row, e.run);
      return;
    }
    case "save_attachment":
      return writeConn(to.ws, to.state);
  }
}
