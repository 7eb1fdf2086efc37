// The metric families of GET /metrics, built from the snapshots the agents of one account last
// reported. Names follow Prometheus conventions: `baton_` prefix, `_total` on counters, base
// units in the name (`_seconds`). docs/metrics.md describes each one.
import { GAP_BUCKETS, type AgentMetrics } from "./metrics.ts";
import type { Family, Sample } from "./metrics-text.ts";

function perAgent(agents: readonly AgentMetrics[], value: (m: AgentMetrics) => number): Sample[] {
  return agents.map((m) => ({ labels: { agent: m.agent }, value: value(m) }));
}

function perAgentAndKey(agents: readonly AgentMetrics[], key: string, counts: (m: AgentMetrics) => Record<string, number>): Sample[] {
  return agents.flatMap((m) => Object.entries(counts(m))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, value]) => ({ labels: { agent: m.agent, [key]: k }, value })));
}

export function agentFamilies(agents: readonly AgentMetrics[]): Family[] {
  return [
    { name: "baton_agent_holders", type: "gauge", help: "Serve connections holding the agent's lease, as confirmed by the agent's own object: 1 with a holder, 0 without or when unconfirmed; anything but 1 for minutes deserves an alert.", samples: perAgent(agents, (m) => m.holders) },
    { name: "baton_agent_presence_confirmed", type: "gauge", help: "1 while the agent's own object keeps confirming what is shown of it (within 3 heartbeat TTLs), 0 when it stopped: the holder is then unknown.", samples: perAgent(agents, (m) => (m.confirmed === false ? 0 : 1)) },
    { name: "baton_agent_standbys", type: "gauge", help: "Claiming serve connections waiting in line behind the holder.", samples: perAgent(agents, (m) => m.standbys) },
    { name: "baton_agent_connections", type: "gauge", help: "Open serve connections of the agent.", samples: perAgent(agents, (m) => m.connections) },
    { name: "baton_agent_fence", type: "gauge", help: "The agent's current fence token; it grows by one with every new holder.", samples: perAgent(agents, (m) => m.fence) },
    {
      name: "baton_lease_transitions_total", type: "counter", help: "Lease transitions by reason (claimed, closed, stale, released, ...).",
      samples: perAgentAndKey(agents, "reason", (m) => m.counters.transitions),
    },
    {
      name: "baton_lease_gap_seconds", type: "histogram",
      help: "Leaderless time before each new holder: from the previous holder losing the lease (closed, released, or its heartbeat deadline passed) to the grant.",
      samples: agents.map((m) => ({
        labels: { agent: m.agent }, bounds: GAP_BUCKETS, counts: m.counters.gapSeconds.buckets,
        count: m.counters.gapSeconds.count, sum: m.counters.gapSeconds.sum,
      })),
    },
    {
      name: "baton_fence_rejections_total", type: "counter", help: "Writes (reply, ack, checkpoint, park) refused by the fence or a message token, by error code.",
      samples: perAgentAndKey(agents, "code", (m) => m.counters.refusals),
    },
    { name: "baton_messages", type: "gauge", help: "Messages stored now, by status.", samples: perAgentAndKey(agents, "status", (m) => m.messages.byStatus) },
    { name: "baton_messages_posted_total", type: "counter", help: "Messages posted to the agent.", samples: perAgent(agents, (m) => m.messages.posted) },
    { name: "baton_message_deliveries_total", type: "counter", help: "Hand-overs of a message to a holder to run (attempts).", samples: perAgent(agents, (m) => m.messages.deliveries) },
    { name: "baton_message_redeliveries_total", type: "counter", help: "Hand-overs of a message that had been handed over before (attempt 2 and later, the first after a person's retry too; one after a hand-out declined unstarted by a stopping runner is not).", samples: perAgent(agents, (m) => m.messages.redeliveries) },
    { name: "baton_messages_cancelled_total", type: "counter", help: "Messages cancelled by a person (POST …/cancel, baton cancel, the dashboard's Stop).", samples: perAgent(agents, (m) => m.messages.cancelled ?? 0) },
    {
      name: "baton_webhook_deliveries_total", type: "counter",
      help: "Webhook deliveries by result: delivered (a 2xx answer), failed (an attempt without one; retried), dropped (given up after 24 h, or pushed out of a full outbox).",
      samples: perAgentAndKey(agents.filter((m) => m.webhooks), "result", (m) => ({ delivered: m.webhooks!.delivered, failed: m.webhooks!.failed, dropped: m.webhooks!.dropped })),
    },
    { name: "baton_webhook_pending_events", type: "gauge", help: "Webhook events waiting in the agent's outbox for a 2xx answer.", samples: perAgent(agents.filter((m) => m.webhooks), (m) => m.webhooks!.pending) },
    { name: "baton_schedule_fires_total", type: "counter", help: "Schedule slots that posted their message (each slot once).", samples: perAgent(agents.filter((m) => m.schedules), (m) => m.schedules!.fired) },
    {
      name: "baton_schedule_skips_total", type: "counter", help: "Schedule slots skipped, by why: paused (the schedule or agent), missed (later than the late grace, catch-up), busy (on_busy reject). At least: a cron's long outage adds only the slots counted (a skip with count_at_least).",
      samples: perAgentAndKey(agents.filter((m) => m.schedules), "reason", (m) => m.schedules!.skipped),
    },
    {
      name: "baton_schedule_lateness_seconds", type: "histogram", help: "From a schedule slot's time (with its jitter) to its message posted, by the coordinator's clock.",
      samples: agents.filter((m) => m.schedules).map((m) => ({
        labels: { agent: m.agent }, bounds: GAP_BUCKETS, counts: m.schedules!.lateness.buckets, count: m.schedules!.lateness.count, sum: m.schedules!.lateness.sum,
      })),
    },
    { name: "baton_agent_last_report_timestamp_seconds", type: "gauge", help: "When the agent object last reported these figures (Unix time).", samples: perAgent(agents, (m) => m.reported_at / 1000) },
  ];
}

export interface SessionLeaseCounts {
  active: number;
  expired: number;
}

export function sessionLeaseFamilies(counts: SessionLeaseCounts | null): Family[] {
  if (counts === null) return [];
  return [{
    name: "baton_session_leases", type: "gauge",
    help: "Session leases of the account: active (unexpired) and expired (ran out without a release and not yet pruned).",
    samples: [{ labels: { state: "active" }, value: counts.active }, { labels: { state: "expired" }, value: counts.expired }],
  }];
}
