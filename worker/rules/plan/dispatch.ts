// Phase 6 of a plan: queued messages handed out under fresh tokens (../message-lease.ts
// planDispatch), to the holder in single mode or any claimant in pool mode, within each runner's
// free slots. Paused, drained, stopping (its serve got SIGTERM) or handing on (the safe point) a
// runner takes nothing new.
import type { LeaseRecord } from "../election.ts";
import { isOpen, lease as leaseMessage, planDispatch, type MessageLease, type MessagePolicy } from "../message-lease.ts";
import { electPreferred } from "../preference.ts";
import { preferenceContext, type Ranked } from "./elect.ts";
import { runnerOf, type AgentPlan, type ControlsSnapshot, type ServeConn } from "./types.ts";

/** The live connections that may run messages now, by runner id, in claim order. */
export function eligibleRunners(conns: readonly ServeConn[], live: readonly number[], lease: LeaseRecord, policy: MessagePolicy): Map<string, number> {
  const eligible = live
    .filter((i) => conns[i]!.claimSeq !== null && !conns[i]!.released && (policy.mode === "pool" || conns[i]!.claimSeq === lease.holderClaim))
    .sort((x, y) => conns[x]!.claimSeq! - conns[y]!.claimSeq!);
  return new Map(eligible.map((i) => [runnerOf(conns[i]!), i]));
}

export interface Dispatch {
  open: Map<number, MessageLease>;
  handOuts: AgentPlan["handOuts"];
  tokenCounter: number;
}

/**
 * The safe point: a holder that should hand on (a preferred runner is ready, or it is drained)
 * takes nothing new, so it finishes what it runs and the lease can move.
 */
export function dispatch(
  open: ReadonlyMap<number, MessageLease>, conns: readonly ServeConn[], eligible: ReadonlyMap<string, number>, candidates: readonly Ranked[],
  lease: LeaseRecord, controls: ControlsSnapshot, policy: MessagePolicy, avoid: ReadonlyMap<number, string>, tokenCounter: number, now: number,
): Dispatch {
  const out: Dispatch = { open: new Map(open), handOuts: [], tokenCounter };
  const handingOn = lease.holderClaim !== null && electPreferred(candidates, preferenceContext(controls, lease.holderClaim, false, now)).winner?.claimSeq !== lease.holderClaim;
  const running = new Map<string, number>();
  for (const m of out.open.values()) if (m.status === "running") running.set(m.runner!, (running.get(m.runner!) ?? 0) + 1);
  const accepts = (c: ServeConn) => !controls.paused && !controls.drained.has(c.machine) && c.stopping !== true && (c.claimSeq !== lease.holderClaim || !handingOn);
  const slots = [...eligible.values()].map((i) => {
    const c = conns[i]!;
    return { id: runnerOf(c), free: accepts(c) ? (c.slots ?? 1) - (running.get(runnerOf(c)) ?? 0) : 0 };
  });
  for (const a of planDispatch([...out.open.values()].filter(isOpen), slots, policy, avoid, now)) {
    out.tokenCounter += 1;
    const leased = leaseMessage(out.open.get(a.id)!, a.runner, out.tokenCounter, now, policy);
    out.open.set(a.id, leased);
    out.handOuts.push({ lease: leased, to: eligible.get(a.runner)! });
  }
  return out;
}
