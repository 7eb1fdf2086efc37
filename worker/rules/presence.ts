// The presence report of one agent, built from plain data: who holds the lease, who waits, and how
// fresh each one is; and what the directory may still vouch for. Its shapes are the wire's
// (wire/server-frames.ts), which imports nothing from here.
import type { LeaseRecord, Transition } from "./election.ts";
import type { AgentControlsReport, DirectoryEntry, DirectoryWhoEntry, Presence, PresenceReport, WorkReport } from "../wire/server-frames.ts";
import type { WebhookReport } from "../wire/webhooks.ts";
import { holdsLease } from "./fencing.ts";

/** Characters of a message shown in presence. */
export const PREVIEW_CHARS = 80;

/** What presence needs of a connection: its attachment state plus its last heartbeat. */
export interface PresenceConn {
  claimSeq: number | null;
  released: boolean;
  machine: string;
  joinedAt: number;
  cursor: number;
  heartbeat: number;
  slots?: number;
  priority?: number;
  stopping?: boolean;
}

export interface PresenceMessage {
  id: number;
  status: string;
  attempts: number;
  created_at: number;
  text: string;
}

export function buildPresence(input: {
  agent: string;
  now: number;
  ttlMs: number;
  lease: LeaseRecord;
  conns: PresenceConn[];
  transitions: Transition[];
  recentMessages: PresenceMessage[];
  work: WorkReport;
  controls: AgentControlsReport;
  wakes: number;
  webhook: WebhookReport;
}): Presence {
  const drained = new Set(input.controls.drained.map((d) => d.machine));
  const { lease } = input;
  const candidates = input.conns.filter((c) => c.claimSeq !== null && !c.released && !drained.has(c.machine));
  const connections = input.conns
    .map((c) => ({
      claim_seq: c.claimSeq,
      held: holdsLease(c, lease),
      machine: c.machine,
      joined_at: c.joinedAt,
      heartbeat_age_seconds: Math.max(0, Math.round((input.now - c.heartbeat) / 100) / 10),
      cursor: c.cursor,
      slots: c.slots ?? 1,
      running: input.work.running.filter((r) => r.claim_seq !== null && r.claim_seq === c.claimSeq).length,
      priority: c.priority ?? 0,
      drained: drained.has(c.machine),
      ...(c.stopping ? { stopping: true } : {}),
    }))
    .sort((a, b) => (a.claim_seq ?? Infinity) - (b.claim_seq ?? Infinity));
  return {
    agent: input.agent,
    connection_count: input.conns.length,
    serve_candidates: candidates.length,
    serve_standbys: candidates.filter((c) => c.claimSeq !== lease.holderClaim).length,
    fence: lease.fence,
    holder: lease.holderClaim === null
      ? null
      : { claim_seq: lease.holderClaim, machine: lease.holderMachine ?? "unknown", since: lease.since ?? 0 },
    heartbeat_ttl_seconds: input.ttlMs / 1000,
    connections,
    transitions: input.transitions.map((t) => ({
      at: t.at, from_claim: t.fromClaim, to_claim: t.toClaim, from_machine: t.fromMachine, to_machine: t.toMachine, fence: t.fence, reason: t.reason,
    })),
    recent_messages: input.recentMessages.map((m) => ({
      id: m.id, status: m.status, attempts: m.attempts, created_at: m.created_at, preview: m.text.slice(0, PREVIEW_CHARS),
    })),
    work: input.work,
    controls: input.controls,
    wakes: input.wakes,
    webhook: input.webhook,
  };
}

/**
 * A directory entry as of `now`. Heartbeats after the report reach nobody (the runtime answers
 * them), so no age is shown, only the bound: each listed connection was heard within the TTL.
 * The entry is confirmed while its agent object keeps vouching for it (`confirmedUntil`).
 */
export function agedEntry(report: PresenceReport, confirmedUntil: number, now: number): DirectoryEntry {
  const connections = report.connections.map((c) => ({ ...c, heartbeat_age_seconds: null }));
  // An entry without connections claims no holder and nothing live, so there is nothing to go stale.
  const confirmed = report.connection_count === 0 || now <= confirmedUntil;
  return { ...report, connections, confirmed_until: confirmedUntil, confirmed };
}

/**
 * The directory lists an agent while it has connections or messages waiting (queued or parked):
 * an agent nobody serves with work piling up must be seen, not vanish.
 */
export function listedInDirectory(p: Pick<Presence, "connection_count" | "work">): boolean {
  return p.connection_count > 0 || p.work.counts.queued > 0 || p.work.counts.parked > 0;
}

/** A directory entry as `GET /agents?view=who` lists it: only what `baton who` prints. */
export function whoEntryOf(e: DirectoryEntry): DirectoryWhoEntry {
  const ids = (list: readonly { id: number }[]) => list.map(({ id }) => ({ id }));
  const { paused, paused_since, drained, reserved_until } = e.controls;
  return {
    agent: e.agent, fence: e.fence, holder: e.holder, serve_standbys: e.serve_standbys, heartbeat_ttl_seconds: e.heartbeat_ttl_seconds,
    connections: e.connections,
    work: {
      mode: e.work.mode, ...(e.work.policy_problem === undefined ? {} : { policy_problem: e.work.policy_problem }), counts: e.work.counts, running: ids(e.work.running),
      parked: e.work.parked.map(({ id, waiting_on }) => ({ id, waiting_on: waiting_on ?? null })), failed: ids(e.work.failed),
    },
    controls: { paused, paused_since, drained, reserved_until },
    confirmed_until: e.confirmed_until, confirmed: e.confirmed,
  };
}
