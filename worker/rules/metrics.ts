// Lease metrics as pure functions over plain data: what one agent counts (transitions by reason,
// the leaderless gap before each new holder, refused writes) and the snapshot it reports to its
// directory. Nothing here touches storage, sockets or the clock.
import type { Transition } from "./election.ts";

/** Upper bounds (seconds) of the leaderless-gap histogram; +Inf is implied. */
export const GAP_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600] as const;

export interface Histogram {
  /** Observations at or below each bound of GAP_BUCKETS (not cumulative; the formatter sums). */
  buckets: number[];
  count: number;
  sum: number;
}

export interface LeaseCounters {
  transitions: Record<string, number>;
  gapSeconds: Histogram;
  refusals: Record<string, number>;
  /** Coordinator time at which the lease was last left with no holder; the next grant ends that gap. */
  leaderlessSince: number | null;
}

export const EMPTY_COUNTERS: LeaseCounters = {
  transitions: {},
  gapSeconds: { buckets: GAP_BUCKETS.map(() => 0), count: 0, sum: 0 },
  refusals: {},
  leaderlessSince: null,
};

export function observe(h: Histogram, value: number): Histogram {
  const index = GAP_BUCKETS.findIndex((bound) => value <= bound);
  const buckets = h.buckets.slice();
  if (index >= 0) buckets[index] = (buckets[index] ?? 0) + 1;
  return { buckets, count: h.count + 1, sum: h.sum + value };
}

/**
 * Counts one lease transition. `lostAt` is when the previous holder stopped holding by the
 * coordinator's clock: the transition itself for a close or release, the holder's expiry deadline
 * (last heartbeat + TTL) for a silent one. A transition that gives the lease to a holder observes
 * the leaderless gap: from `lostAt` when it passes straight from one holder to the next, from the
 * moment the lease was left empty when it had none; the very first grant of an agent observes none.
 */
export function countTransition(c: LeaseCounters, t: Transition, lostAt: number): LeaseCounters {
  const transitions = { ...c.transitions, [t.reason]: (c.transitions[t.reason] ?? 0) + 1 };
  if (t.toClaim === null) {
    return { ...c, transitions, leaderlessSince: t.fromClaim === null ? c.leaderlessSince : Math.min(lostAt, t.at) };
  }
  const gapStart = t.fromClaim !== null ? Math.min(lostAt, t.at) : c.leaderlessSince;
  const gapSeconds = gapStart === null ? c.gapSeconds : observe(c.gapSeconds, Math.max(0, t.at - gapStart) / 1000);
  return { ...c, transitions, gapSeconds, leaderlessSince: null };
}

export function countRefusal(c: LeaseCounters, code: string): LeaseCounters {
  return { ...c, refusals: { ...c.refusals, [code]: (c.refusals[code] ?? 0) + 1 } };
}

/**
 * One message's redeliveries by baton_message_redeliveries_total's rule, read from its counts as
 * an agent from before metrics starts its tally (objects/metrics-agent.ts backfillTally): its
 * hand-outs not declined, but the first. The live count is one more while its latest hand-out is
 * a declined one not yet followed by another.
 */
export function redeliveriesOf(m: { attempts: number; declined?: number | undefined }): number {
  return Math.max(0, m.attempts - (m.declined ?? 0) - 1);
}

export interface MessageTally {
  /** Messages stored now, by status (acknowledged ones leave when history is pruned). */
  byStatus: Record<string, number>;
  posted: number;
  /** Hand-overs of a message to a holder (each one an attempt), and those after the first but for one right after a declined hand-out (objects/metrics-agent.ts). */
  deliveries: number;
  redeliveries: number;
  /** Messages cancelled (absent from older coordinators). */
  cancelled?: number;
}

export interface WebhookTally {
  delivered: number;
  failed: number;
  dropped: number;
  pending: number;
}

/** An agent's schedules: slots posted, slots skipped by why, and how late each post was (seconds, GAP_BUCKETS). */
export interface ScheduleTally {
  fired: number;
  skipped: Record<string, number>;
  lateness: Histogram;
}

/** The tally from its stored rows (`fired`, `skipped:WHY`, `late:I` per bucket, `late_count`, `late_sum`); null with no fire or skip yet. */
export function scheduleTallyOf(rows: readonly { key: string; value: number }[]): ScheduleTally | null {
  if (rows.length === 0) return null;
  const t: ScheduleTally = { fired: 0, skipped: {}, lateness: { buckets: GAP_BUCKETS.map(() => 0), count: 0, sum: 0 } };
  for (const { key, value } of rows) {
    if (key === "fired") t.fired = value;
    else if (key.startsWith("skipped:")) t.skipped[key.slice("skipped:".length)] = value;
    else if (key.startsWith("late:")) t.lateness.buckets[Number(key.slice("late:".length))] = value;
    else if (key === "late_count") t.lateness.count = value;
    else if (key === "late_sum") t.lateness.sum = value;
  }
  return t;
}

/** The rows one post `lateMs` after its slot adds to the tally. */
export function fireRows(lateMs: number): { key: string; value: number }[] {
  const seconds = lateMs / 1000;
  const bucket = GAP_BUCKETS.findIndex((bound) => seconds <= bound);
  return [{ key: "fired", value: 1 }, { key: "late_count", value: 1 }, { key: "late_sum", value: seconds }, ...(bucket >= 0 ? [{ key: `late:${bucket}`, value: 1 }] : [])];
}

/** What an agent reports to its directory; the directory answers /metrics from these alone. */
export interface AgentMetrics {
  agent: string;
  reported_at: number;
  connections: number;
  holders: number;
  standbys: number;
  fence: number;
  counters: Omit<LeaseCounters, "leaderlessSince">;
  messages: MessageTally;
  /** Webhook deliveries: events delivered, attempts that failed (retried), events dropped, events pending (absent from older coordinators). */
  webhooks?: WebhookTally;
  /** Schedules' fires, skips and lateness (absent from agents that never had a slot decided). */
  schedules?: ScheduleTally;
  /** Set by the directory at a scrape: false when the agent's object stopped confirming its snapshot. */
  confirmed?: boolean;
}

/** Equal fingerprints mean nothing new to report. */
export function metricsFingerprint(m: AgentMetrics): string {
  const { reported_at: _at, ...rest } = m;
  return JSON.stringify(rest);
}
