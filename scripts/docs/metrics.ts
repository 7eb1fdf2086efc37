// docs/reference/metrics.md from the metric families GET /metrics builds (worker/rules/metrics-families.ts):
// name, type, labels and help exactly as the scrape carries them. docs/metrics.md is the guide.
import { agentFamilies, sessionLeaseFamilies } from "../../worker/rules/metrics-families.ts";
import { EMPTY_COUNTERS, type AgentMetrics } from "../../worker/rules/metrics.ts";
import type { Family } from "../../worker/rules/metrics-text.ts";
import { generatedHeader, markdownTable } from "./markdown.ts";

export const METRICS_PAGE = "docs/reference/metrics.md";

/** One agent with one of everything, so every family shows its labels. */
function sampleAgent(): AgentMetrics {
  const { leaderlessSince: _, ...counters } = EMPTY_COUNTERS;
  return {
    agent: "a", reported_at: 0, connections: 1, holders: 1, standbys: 0, fence: 1,
    counters: { ...counters, transitions: { claimed: 1 }, refusals: { stale_fence: 1 } },
    messages: { byStatus: { queued: 1 }, posted: 1, deliveries: 1, redeliveries: 0, cancelled: 0 },
    webhooks: { delivered: 0, failed: 0, dropped: 0, pending: 0 },
    schedules: { fired: 1, skipped: { paused: 1 }, lateness: { buckets: counters.gapSeconds.buckets, count: 0, sum: 0 } },
  } as AgentMetrics;
}

function labels(family: Family): string {
  const names = new Set<string>();
  for (const sample of family.samples) for (const name of Object.keys(sample.labels ?? {})) names.add(name);
  if (family.type === "histogram") names.add("le");
  return [...names].map((n) => `\`${n}\``).join(", ");
}

export function metricsPage(): string {
  const families = [...agentFamilies([sampleAgent()]), ...sessionLeaseFamilies({ active: 0, expired: 0 })];
  return [
    generatedHeader("scripts/docs/metrics.ts", "the metric families in worker/rules/metrics-families.ts"),
    "# Metrics reference",
    "",
    "`GET /metrics` (scope `read`) answers with these families for the token's account, in the",
    "Prometheus text format. Where the figures come from, what is not promised, and alerts:",
    "[docs/metrics.md](../metrics.md).",
    "",
    ...markdownTable(["metric", "type", "labels", "help"], families.map((f) => [`\`${f.name}\``, f.type, labels(f), f.help])),
    "",
  ].join("\n");
}
