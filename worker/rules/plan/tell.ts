// Phase 4 of a plan: each claimant hears its own state (held, fence, place in line) only when it
// changed, or when the holder's label changed (`force`).
import { holdsLease } from "../fencing.ts";
import type { LeaseRecord } from "../election.ts";
import { linePlace } from "../preference.ts";
import type { Ranked } from "./elect.ts";
import type { ConnPatches, ServeConn, Tell } from "./types.ts";

export function tell(
  conns: readonly ServeConn[], heartbeats: readonly number[], live: readonly number[], candidates: readonly Ranked[], lease: LeaseRecord, force: boolean,
): { tells: Tell[]; patches: ConnPatches } {
  const tells: Tell[] = [];
  const patches: ConnPatches = new Map();
  for (const i of live) {
    const c = conns[i]!;
    if (c.claimSeq === null) continue;
    const held = holdsLease(c, lease);
    if (!force && c.toldHeld === held && (!held || c.toldFence === lease.fence)) continue;
    // A new holder's deadline runs from its latest proof as a standby, which the election found live.
    const lastSeen = held && c.toldHeld !== true ? Math.max(c.lastSeen, heartbeats[i]!) : c.lastSeen;
    patches.set(i, { toldHeld: held, toldFence: lease.fence, lastSeen });
    tells.push({
      to: i, held, fence: lease.fence, claimSeq: c.claimSeq,
      position: c.released ? -1 : linePlace(candidates, c.claimSeq, lease.holderClaim),
      holder: lease.holderClaim === null ? null : { claimSeq: lease.holderClaim, machine: lease.holderMachine ?? "unknown", since: lease.since ?? 0 },
    });
  }
  return { tells, patches };
}
