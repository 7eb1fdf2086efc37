// Where the serve lease should be, when runners differ in priority, can be drained, or the
// coordinator just restarted. Pure: the agent object passes candidates and `now`.
//
// Soft lease: a holder keeps the lease against equal or lower priorities forever. It moves on
// purpose only at a safe point (the holder runs nothing, and the agent is not paused):
//   - `preferred`: a candidate of higher priority has been connected and heartbeating for the
//     whole hysteresis period. A flapping preferred runner restarts that period at every
//     reconnect, so it cannot move the lease more than once per period.
//   - `drained`: the holder was drained; it finishes its run, then the next candidate takes over.
//   - `stopping`: the holder's serve is shutting down (hello `stopping`); it finishes its run, then a
//     candidate that is not stopping takes over. A stopping runner wins an election only when no
//     candidate that is not stopping is there, and is never preferred.
// After a restart the lease is kept for the previous holder's runner for a grace period, so a
// deploy does not reshuffle agents across machines.

export interface RankedCandidate {
  claimSeq: number;
  runner: string;
  priority: number;
  /** Server time since which this candidate has been connected and heartbeating without a gap. */
  readySince: number;
  drained: boolean;
  /** Its serve is shutting down (hello `stopping`): last in line among the candidates that are not drained. */
  stopping?: boolean;
}

export interface PreferenceContext {
  /** Claim sequence of the current holder, if it is still a live connection. */
  holderClaim: number | null;
  /** The holder is running a message: nothing moves on purpose now. */
  holderBusy: boolean;
  /** The agent is paused: the lease stays where it is, so nothing moves on purpose either. */
  paused: boolean;
  hysteresisMs: number;
  /** After a restart: the runner the lease is kept for, until `until`. */
  reserved: { runner: string; until: number } | null;
  now: number;
}

export type PreferenceReason = "preferred" | "drained" | "restored" | "stopping";

export interface PreferenceResult {
  winner: RankedCandidate | null;
  /** Set when the lease moves on purpose or is given back; null for ordinary elections. */
  reason: PreferenceReason | null;
}

/** Higher priority first, then the lowest claim sequence (etcd's oldest-revision rule). */
function better(a: RankedCandidate, b: RankedCandidate): boolean {
  return a.priority !== b.priority ? a.priority > b.priority : a.claimSeq < b.claimSeq;
}

function best(cands: readonly RankedCandidate[]): RankedCandidate | null {
  let out: RankedCandidate | null = null;
  for (const c of cands) if (out === null || better(c, out)) out = c;
  return out;
}

/** The candidates the lease may go to: not drained, and not stopping unless every one of them is. */
function electable(candidates: readonly RankedCandidate[]): { eligible: RankedCandidate[]; staying: RankedCandidate[] } {
  const notDrained = candidates.filter((c) => !c.drained);
  const staying = notDrained.filter((c) => !c.stopping);
  return { eligible: staying.length > 0 ? staying : notDrained, staying };
}

/** Candidates are the live, claiming, unreleased connections; staleness is decided before this. */
export function electPreferred(candidates: readonly RankedCandidate[], ctx: PreferenceContext): PreferenceResult {
  const holder = candidates.find((c) => c.claimSeq === ctx.holderClaim) ?? null;
  const { eligible, staying } = electable(candidates);
  if (holder === null) {
    if (ctx.reserved && ctx.now < ctx.reserved.until) {
      const back = candidates.find((c) => !c.drained && c.runner === ctx.reserved!.runner) ?? null;
      if (back === null) return { winner: null, reason: null };
      // The previous runner came back stopping: the lease goes where an ordinary election puts it.
      if (!back.stopping || staying.length === 0) return { winner: back, reason: "restored" };
    }
    return { winner: best(eligible), reason: null };
  }
  if (ctx.holderBusy || ctx.paused) return { winner: holder, reason: null };
  if (holder.drained) {
    // Draining the last runner leaves the agent without a holder: its messages wait, visibly.
    return { winner: best(eligible), reason: "drained" };
  }
  if (holder.stopping && staying.length > 0) return { winner: best(staying), reason: "stopping" };
  const ready = staying.filter((c) => c.priority > holder.priority && ctx.now - c.readySince >= ctx.hysteresisMs);
  const preferred = best(ready);
  return preferred ? { winner: preferred, reason: "preferred" } : { winner: holder, reason: null };
}

/**
 * Place in line: 0 for the holder, then standbys by priority and claim sequence (the order the
 * lease would take them in), stopping runners after them, and drained runners after every candidate.
 */
export function linePlace(candidates: readonly RankedCandidate[], claimSeq: number, holderClaim: number | null): number {
  if (claimSeq === holderClaim) return 0;
  const me = candidates.find((c) => c.claimSeq === claimSeq);
  const others = candidates.filter((c) => c.claimSeq !== holderClaim && c.claimSeq !== claimSeq && !c.drained);
  if (!me || me.drained) return others.length + 1;
  const ahead = (c: RankedCandidate) => (c.stopping === true) !== (me.stopping === true) ? !c.stopping : better(c, me);
  return 1 + others.filter(ahead).length;
}

/** When a preferred candidate becomes ready to take over, so the object can set an alarm for it. */
export function nextPreferenceMoment(candidates: readonly RankedCandidate[], ctx: PreferenceContext): number | null {
  const holder = candidates.find((c) => c.claimSeq === ctx.holderClaim);
  if (!holder) return ctx.reserved && ctx.now < ctx.reserved.until ? ctx.reserved.until : null;
  if (ctx.paused) return null;
  let earliest: number | null = null;
  for (const c of candidates) {
    if (c.drained || c.stopping || c.priority <= holder.priority) continue;
    const at = c.readySince + ctx.hysteresisMs;
    if (at > ctx.now && (earliest === null || at < earliest)) earliest = at;
  }
  return earliest;
}
