// Phase 7 of a plan: the next alarm. The earliest moment a connection can go stale (the holder
// looked at halfway, see holderCheckAt; capped by the scan interval), a message deadline, the
// object's own deadlines, or a preference move by the clock alone. An alarm already due earlier is
// left alone (it re-plans when it runs), so a frame costs no alarm write; with nothing to watch,
// none is left.
import { holderCheckAt, nextStaleDeadline } from "../election.ts";
import { nextMessageDeadline, type MessageLease } from "../message-lease.ts";
import { nextPreferenceMoment, type PreferenceContext } from "../preference.ts";
import type { Ranked } from "./elect.ts";
import type { AgentPlan } from "./types.ts";

export interface DeadlineInput {
  now: number;
  ttlMs: number;
  scanMs: number;
  /** Proven heartbeats of the live connections, and the holder's (undefined: no live holder). */
  liveHeartbeats: readonly number[];
  holderHeartbeat: number | undefined;
  open: Iterable<MessageLease>;
  parkDeadline: number | null;
  ownDeadlines: readonly (number | null)[];
  candidates: readonly Ranked[];
  preference: PreferenceContext;
  alarmAt: number | null;
}

function earliest(...times: (number | null)[]): number | null {
  const known = times.filter((t): t is number => t !== null);
  return known.length ? Math.min(...known) : null;
}

export function nextAlarm(d: DeadlineInput): AgentPlan["alarm"] {
  let stale = nextStaleDeadline(d.liveHeartbeats.map((h) => ({ lastHeartbeat: h })), d.ttlMs);
  if (d.holderHeartbeat !== undefined && stale !== null) stale = Math.min(stale, holderCheckAt(d.holderHeartbeat, d.now, d.ttlMs));
  const scan = stale === null ? null : Math.min(stale, d.now + d.scanMs);
  const deadline = earliest(scan, nextMessageDeadline([...d.open], d.now), d.parkDeadline, ...d.ownDeadlines);
  if (deadline === null) return d.alarmAt !== null ? "delete" : null;
  const moment = nextPreferenceMoment(d.candidates, d.preference);
  const at = Math.max(d.now + 1, moment === null ? deadline : Math.min(deadline, moment));
  return d.alarmAt !== null && d.alarmAt > d.now && d.alarmAt <= at ? null : { set: at };
}
