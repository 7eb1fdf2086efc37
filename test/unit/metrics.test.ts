// Lease metrics rules and the Prometheus text writer in plain Node; the writer's output is read
// back with a real Prometheus text-format parser from npm.
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { agentMetrics } from "../e2e/prometheus.ts";
import { describe, expect, it } from "vitest";
import type { Transition } from "../../worker/rules/election.ts";
import { agentFamilies } from "../../worker/rules/metrics-families.ts";
import { countRefusal, countTransition, EMPTY_COUNTERS, GAP_BUCKETS, observe, type AgentMetrics } from "../../worker/rules/metrics.ts";
import { formatFamilies } from "../../worker/rules/metrics-text.ts";

function transition(at: number, fromClaim: number | null, toClaim: number | null, reason: Transition["reason"], fence: number): Transition {
  return { at, fromClaim, toClaim, fromMachine: fromClaim ? `m${fromClaim}` : null, toMachine: toClaim ? `m${toClaim}` : null, fence, reason };
}

describe("lease counters", () => {
  it("the first grant of an agent counts a transition but observes no gap", () => {
    const c = countTransition(EMPTY_COUNTERS, transition(1000, null, 1, "claimed", 1), 1000);
    expect(c.transitions).toEqual({ claimed: 1 });
    expect(c.gapSeconds.count).toBe(0);
  });

  it("a straight handoff observes the time from the loss to the grant: zero for a close", () => {
    let c = countTransition(EMPTY_COUNTERS, transition(0, null, 1, "claimed", 1), 0);
    c = countTransition(c, transition(5000, 1, 2, "closed", 2), 5000);
    expect(c.gapSeconds.count).toBe(1);
    expect(c.gapSeconds.sum).toBe(0);
    expect(c.gapSeconds.buckets[0]).toBe(1);
  });

  it("a silent holder's gap runs from its heartbeat deadline to the grant", () => {
    let c = countTransition(EMPTY_COUNTERS, transition(0, null, 1, "claimed", 1), 0);
    c = countTransition(c, transition(10_300, 1, 2, "stale", 2), 10_000);
    expect(c.gapSeconds.sum).toBeCloseTo(0.3);
    expect(c.gapSeconds.buckets[GAP_BUCKETS.indexOf(0.5)]).toBe(1);
  });

  it("a lease left empty observes the whole empty stretch at the next grant, once", () => {
    let c = countTransition(EMPTY_COUNTERS, transition(0, null, 1, "claimed", 1), 0);
    c = countTransition(c, transition(2000, 1, null, "closed", 1), 2000);
    expect(c.leaderlessSince).toBe(2000);
    expect(c.gapSeconds.count).toBe(0);
    c = countTransition(c, transition(9500, null, 2, "claimed", 2), 9500);
    expect(c.gapSeconds.count).toBe(1);
    expect(c.gapSeconds.sum).toBe(7.5);
    expect(c.leaderlessSince).toBeNull();
    expect(c.transitions).toEqual({ claimed: 2, closed: 1 });
  });

  it("a gap longer than the last bound lands only in +Inf; refusals count by code", () => {
    const h = observe(EMPTY_COUNTERS.gapSeconds, 7200);
    expect(h.buckets.every((b) => b === 0)).toBe(true);
    expect(h.count).toBe(1);
    const c = countRefusal(countRefusal(countRefusal(EMPTY_COUNTERS, "stale_fence"), "stale_fence"), "not_holder");
    expect(c.refusals).toEqual({ stale_fence: 2, not_holder: 1 });
  });
});

const AGENT: AgentMetrics = {
  agent: "reviewer",
  reported_at: 1_700_000_000_000,
  connections: 2,
  holders: 1,
  standbys: 1,
  fence: 3,
  counters: {
    transitions: { claimed: 1, closed: 1, stale: 1 },
    gapSeconds: observe(observe(EMPTY_COUNTERS.gapSeconds, 0), 0.3),
    refusals: { stale_fence: 4 },
  },
  messages: { byStatus: { acknowledged: 5, queued: 1 }, posted: 6, deliveries: 7, redeliveries: 2 },
};

describe("Prometheus text", () => {
  it("parses with a real parser into the families, types, labels and values it was given", () => {
    const text = formatFamilies(agentFamilies([AGENT, { ...AGENT, agent: "summarizer", holders: 0, standbys: 0 }]));
    const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
    expect(families.get("baton_agent_holders")?.type).toBe("GAUGE");
    expect(families.get("baton_agent_holders")?.metrics).toEqual([
      { labels: { agent: "reviewer" }, value: "1" },
      { labels: { agent: "summarizer" }, value: "0" },
    ]);
    expect(families.get("baton_lease_transitions_total")?.type).toBe("COUNTER");
    expect(families.get("baton_lease_transitions_total")?.metrics).toContainEqual({ labels: { agent: "reviewer", reason: "stale" }, value: "1" });
    expect(families.get("baton_fence_rejections_total")?.metrics).toContainEqual({ labels: { agent: "reviewer", code: "stale_fence" }, value: "4" });
    expect(families.get("baton_messages")?.metrics).toContainEqual({ labels: { agent: "reviewer", status: "queued" }, value: "1" });
    expect(families.get("baton_lease_gap_seconds")?.type).toBe("HISTOGRAM");
    const reviewerGap = agentMetrics(text, "reviewer").get("baton_lease_gap_seconds")?.metrics[0];
    expect(reviewerGap?.count).toBe("2");
    expect(Number(reviewerGap?.sum)).toBeCloseTo(0.3);
    // Buckets are cumulative: 0 s is under 0.01, 0.3 s under 0.5.
    expect(reviewerGap?.buckets?.["0.01"]).toBe("1");
    expect(reviewerGap?.buckets?.["0.25"]).toBe("1");
    expect(reviewerGap?.buckets?.["0.5"]).toBe("2");
    expect(reviewerGap?.buckets?.["+Inf"]).toBe("2");
    expect(families.get("baton_agent_last_report_timestamp_seconds")?.metrics[0]?.value).toBe("1700000000");
  });

  it("webhook deliveries by result and pending events are per agent; a snapshot from a coordinator without webhooks adds no lines", () => {
    const hooked = { ...AGENT, agent: "hooked", webhooks: { delivered: 3, failed: 2, dropped: 1, pending: 4 } };
    const families = new Map(parsePrometheusTextFormat(formatFamilies(agentFamilies([AGENT, hooked]))).map((f) => [f.name, f]));
    expect(families.get("baton_webhook_deliveries_total")?.type).toBe("COUNTER");
    expect(families.get("baton_webhook_deliveries_total")?.metrics).toEqual([
      { labels: { agent: "hooked", result: "delivered" }, value: "3" },
      { labels: { agent: "hooked", result: "dropped" }, value: "1" },
      { labels: { agent: "hooked", result: "failed" }, value: "2" },
    ]);
    expect(families.get("baton_webhook_pending_events")?.metrics).toEqual([{ labels: { agent: "hooked" }, value: "4" }]);
  });

  it("escapes label values and help text, writes +Inf, and leaves empty families out", () => {
    const text = formatFamilies([
      { name: "t_gauge", type: "gauge", help: "a\\b\nc", samples: [{ labels: { v: 'quote " back \\ nl \n' }, value: Infinity }] },
      { name: "t_empty", type: "counter", help: "none", samples: [] },
    ]);
    expect(text).not.toContain("t_empty");
    const [family] = parsePrometheusTextFormat(text);
    expect(family?.help).toBe("a\\b\nc");
    expect(family?.metrics[0]).toEqual({ labels: { v: 'quote " back \\ nl \n' }, value: "+Inf" });
  });

  it("refuses names Prometheus would reject instead of writing a broken exposition", () => {
    expect(() => formatFamilies([{ name: "bad-name", type: "gauge", help: "", samples: [{ labels: {}, value: 1 }] }])).toThrow(/invalid metric name/);
    expect(() => formatFamilies([{ name: "ok", type: "gauge", help: "", samples: [{ labels: { "bad-label": "x" }, value: 1 }] }])).toThrow(/invalid label name/);
  });
});
