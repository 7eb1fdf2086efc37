// The agent's stored-output budget (BATON_OUTPUT_BYTES_PER_AGENT): past it, whole finished
// messages' output goes, the oldest first. Output of work still open (running, parked, queued
// again) is never dropped for it, so a live run's output is never cut or refused for history's sake;
// each open message is bounded by its own budget instead. Pure: the store reads and applies.

/** A finished message's stored output: its id (older first) and the bytes it keeps. */
export interface FinishedOutput {
  id: number;
  keptBytes: number;
}

/**
 * The finished messages whose output goes so that `totalKept` comes back within `budget`, from
 * `oldest` (oldest first; a page of them: the caller asks again while the answer says `more`).
 */
export function agentOutputDrops(oldest: readonly FinishedOutput[], totalKept: number, budget: number): { drop: number[]; more: boolean } {
  let over = totalKept - budget;
  const drop: number[] = [];
  for (const m of oldest) {
    if (over <= 0) break;
    drop.push(m.id);
    over -= m.keptBytes;
  }
  return { drop, more: over > 0 && drop.length === oldest.length && oldest.length > 0 };
}
