// How the metrics are kept as JSON: an agent's lease counters (metrics-agent.ts) and the snapshot
// each agent reports to its directory (metrics-directory.ts), each read back through its codec.
import * as z from "zod/mini";
import type { AgentMetrics, LeaseCounters } from "../rules/metrics.ts";
import { StoredJson } from "../rules/stored-json.ts";

const counts = z.record(z.string(), z.number());
const histogram = z.object({ buckets: z.array(z.number()), count: z.number(), sum: z.number() });

/** Every field optional: counters saved before a field existed start it from empty. */
export const countersJson = new StoredJson<Partial<LeaseCounters>>("metrics_counters.counters", z.object({
  transitions: z.optional(counts), gapSeconds: z.optional(histogram), refusals: z.optional(counts), leaderlessSince: z.optional(z.nullable(z.number())),
}));

export const metricsJson = new StoredJson<AgentMetrics>("agent_metrics.snapshot", z.object({
  agent: z.string(), reported_at: z.number(), connections: z.number(), holders: z.number(), standbys: z.number(), fence: z.number(),
  counters: z.object({ transitions: counts, gapSeconds: histogram, refusals: counts }),
  messages: z.object({ byStatus: counts, posted: z.number(), deliveries: z.number(), redeliveries: z.number(), cancelled: z.optional(z.number()) }),
  webhooks: z.optional(z.object({ delivered: z.number(), failed: z.number(), dropped: z.number(), pending: z.number() })),
  schedules: z.optional(z.object({ fired: z.number(), skipped: counts, lateness: histogram })),
}));
