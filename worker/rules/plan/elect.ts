// Phase 3 of a plan: the election among live, claiming connections, with the preference rules
// (../preference.ts) and the safe point: a holder running a message keeps the lease.
import { applyElection, type LeaseRecord, type Transition, type TransitionReason } from "../election.ts";
import type { MessageLease } from "../message-lease.ts";
import { electPreferred, type PreferenceContext, type RankedCandidate } from "../preference.ts";
import type { AgentEvent, ControlsSnapshot, ServeConn } from "./types.ts";

export interface Ranked extends RankedCandidate {
  index: number;
  machine: string;
  heartbeat: number;
  runnerId: string | null;
}

const EVENT_REASON: Record<AgentEvent["type"], TransitionReason> = {
  start: "closed", closed: "closed", alarm: "stale", stale_frame: "stale", work: "claimed", claim: "claimed", release: "released", hello: "claimed", sync: "claimed",
  cancel: "claimed", post: "claimed", control: "claimed", policy: "claimed", answer: "claimed", resume: "claimed", retry: "claimed", write: "claimed",
  opened: "claimed",
  // Reply events (./reply.ts) never reach an election.
  ping: "claimed", rate_limited: "claimed", bad_frame: "claimed", sync_refused: "claimed",
};

/** The live connections that claim (and have not released), as election candidates. */
export function candidatesOf(conns: readonly ServeConn[], heartbeats: readonly number[], live: readonly number[], drained: ReadonlySet<string>): Ranked[] {
  const out: Ranked[] = [];
  for (const i of live) {
    const c = conns[i]!;
    if (c.claimSeq === null || c.released) continue;
    out.push({
      index: i, claimSeq: c.claimSeq, machine: c.machine, heartbeat: heartbeats[i]!, runnerId: c.runnerId ?? null,
      // An anonymous runner (an older client) is never recognised after a restart.
      runner: c.runnerId ?? `claim:${c.claimSeq}`,
      priority: c.priority ?? 0,
      readySince: c.readySince ?? c.joinedAt,
      drained: drained.has(c.machine),
      ...(c.stopping === true ? { stopping: true } : {}),
    });
  }
  return out;
}

export function preferenceContext(controls: ControlsSnapshot, holderClaim: number | null, holderBusy: boolean, now: number): PreferenceContext {
  return { holderClaim, holderBusy, paused: controls.paused, hysteresisMs: controls.hysteresisMs, reserved: controls.reserved, now };
}

export interface Election {
  lease: LeaseRecord;
  transition: Transition | null;
  /** The winner's runner id (null: nobody, or an anonymous runner). */
  holderRunner: string | null;
}

/**
 * Who holds after this event. `holderLostAt`: the holder went silent (liveness), which names the
 * reason of any move; otherwise the preference rule's reason, or the event's.
 */
export function elect(
  candidates: readonly Ranked[], lease: LeaseRecord, open: Iterable<MessageLease>, controls: ControlsSnapshot, e: AgentEvent, holderWentStale: boolean, now: number,
): Election {
  const claim = lease.holderClaim;
  const holderBusy = claim !== null && [...open].some((m) => m.status === "running" && m.runner === String(claim));
  const choice = electPreferred(candidates, preferenceContext(controls, claim, holderBusy, now));
  const winner = choice.winner === null ? null : candidates.find((c) => c.claimSeq === choice.winner!.claimSeq)!;
  const why: TransitionReason = holderWentStale ? "stale" : choice.reason ?? (claim === null ? "claimed" : EVENT_REASON[e.type]);
  const elected = applyElection(lease, winner && { claimSeq: winner.claimSeq, machine: winner.machine, lastHeartbeat: winner.heartbeat }, now, why);
  return { lease: elected.lease, transition: elected.transition, holderRunner: winner?.runnerId ?? null };
}
