// Phase 2 of a plan: who is alive. A connection silent past its TTL is closed; a silent holder
// loses the lease at its own deadline, not when the scan ran. The holder's accepted auto ping is
// folded into its attachment, so its deadline moves on from there and never from a ping that came
// too late (provenAlive in ../election.ts).
import { isStale, type LeaseRecord } from "../election.ts";
import { holdsLease } from "../fencing.ts";
import type { ConnPatches, ServeConn } from "./types.ts";

export interface Liveness {
  live: number[];
  close: number[];
  /** When the holder went silent (its deadline), or null when it did not. */
  holderLostAt: number | null;
  patches: ConnPatches;
}

/** `heartbeats[i]`: connection i's last proof of life by the object's clock. */
export function liveness(conns: readonly ServeConn[], heartbeats: readonly number[], lease: LeaseRecord, now: number, ttlMs: number): Liveness {
  const out: Liveness = { live: [], close: [], holderLostAt: null, patches: new Map() };
  conns.forEach((c, i) => {
    const heartbeat = heartbeats[i]!;
    if (!isStale({ lastHeartbeat: heartbeat }, now, ttlMs)) {
      out.live.push(i);
      if (holdsLease(c, lease) && heartbeat > c.lastSeen) out.patches.set(i, { lastSeen: heartbeat });
      return;
    }
    if (holdsLease(c, lease)) out.holderLostAt = heartbeat + ttlMs;
    out.close.push(i);
  });
  return out;
}
