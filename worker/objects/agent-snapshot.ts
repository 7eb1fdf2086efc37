// The snapshot one event of an agent object is planned over (../rules/plan/types.ts AgentSnapshot),
// read once from the stores, each of which answers from memory until its own next write.
import type { CoordinatorConfig } from "../config.ts";
import type { AgentEvent, AgentSnapshot } from "../rules/agent-plan.ts";
import { provenAlive, type LeaseRecord } from "../rules/election.ts";
import { holdsLease } from "../rules/fencing.ts";
import type { ConnState } from "./connections.ts";
import { randomHex128 } from "./secrets.ts";
import type { AgentControls } from "./agent-controls.ts";
import type { LiveConn } from "./agent-inputs.ts";
import type { AgentStore } from "./agent-store.ts";
import type { AgentWebhooks } from "./agent-webhooks.ts";
import { JOURNAL_BUDGET } from "./message-leases.ts";
import type { WorkDesk } from "./work-desk.ts";

export interface SnapshotParts {
  readonly desk: WorkDesk;
  readonly store: AgentStore;
  readonly controls: AgentControls;
  readonly webhooks: AgentWebhooks;
  readonly config: CoordinatorConfig;
}

/**
 * A connection's last proof of life (rules/election.ts provenAlive): its last frame, or its latest
 * auto ping (`autoPing`) unless that came after a holder's deadline. The plan folds a holder's proof in.
 */
export function heartbeatOf(state: ConnState, autoPing: number | null, lease: LeaseRecord, ttlMs: number): number {
  return provenAlive(state.lastSeen, autoPing, holdsLease(state, lease), ttlMs);
}

/**
 * How many run keys an event may give out: one per slot of every live connection, and the slots
 * the event itself may claim (a claim or hello names them); a hand-out only fills a free slot.
 */
export function runKeysFor(conns: readonly LiveConn[], event: AgentEvent): string[] {
  let slots = event.type === "claim" || event.type === "hello" ? event.slots ?? 0 : 0;
  for (const c of conns) slots += c.state.slots ?? 1;
  return Array.from({ length: slots }, () => randomHex128());
}

/** `own`: what the object keeps for itself (its deadlines, the alarm it set) and the run keys it drew. */
export function readSnapshot(p: SnapshotParts, now: number, conns: readonly LiveConn[], own: Pick<AgentSnapshot, "ownDeadlines" | "alarmAt" | "runKeys">): AgentSnapshot {
  const { messages, leases } = p.desk;
  const open = messages.openLeases(now);
  // A parked message whose passed deadline answers for a person is read as a person's input reads it.
  const due = new Map(open.filter((m) => m.status === "parked" && m.expiresAt !== null && now >= m.expiresAt && (m.onDeadline === "approve" || m.onDeadline === "reject"))
    .flatMap((m) => {
      const target = leases.target(m.id);
      return target ? [[m.id, target] as const] : [];
    }));
  return {
    now,
    ttlMs: p.config.heartbeatTtlMs,
    scanMs: p.config.presenceScanMs,
    lease: p.store.lease(),
    conns: conns.map((c) => ({ conn: c.state, heartbeat: c.heartbeat })),
    controls: p.controls.snapshot(now),
    work: { policy: leases.policies.policy(), open, parkDeadline: messages.parkDeadline(now), due, journalBudget: JOURNAL_BUDGET },
    webhooks: p.webhooks.snapshot(now),
    claimCounter: p.store.claimCounter(),
    tokenCounter: leases.policies.tokenCounter(),
    ...own,
  };
}
