// The benchmark's statistics and the chaos run's fencing sink and invariant checks.
import { describe, expect, it } from "vitest";
import { checkRun, type CoordinatorMessage } from "../../scripts/chaos/invariants.ts";
import { FenceSink, parseEffect, startSink } from "../../scripts/chaos/sink.ts";
import { markdownTable, percentile, ratio, summarize } from "../../scripts/bench/stats.ts";

describe("benchmark statistics", () => {
  it("nearest-rank percentiles: p50 is the middle sample, p99 of 100 samples is the 99th", () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([3, 1, 2], 50)).toBe(2);
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow("between 0 and 100");
  });

  it("summaries and ratios", () => {
    expect(summarize([10, 20, 30, 40])).toEqual({ count: 4, p50: 20, p99: 40 });
    expect(ratio(50, 25)).toBe("2.00x");
    expect(ratio(1, 0)).toBe("-");
    expect(ratio(NaN, 3)).toBe("-");
  });

  it("tables pad every column to its widest cell", () => {
    expect(markdownTable(["a", "bb"], [["xyz", "1"]])).toBe("| a   | bb |\n| --- | -- |\n| xyz | 1  |");
  });
});

describe("fencing sink", () => {
  it("a holder that paused and comes back with an older fence is refused; the same fence is accepted again", () => {
    const sink = new FenceSink();
    expect(sink.offer({ message_id: 1, fence: 3, instance: "a", attempt: 1 })).toEqual({ accepted: true });
    expect(sink.offer({ message_id: 2, fence: 4, instance: "b", attempt: 1 })).toEqual({ accepted: true });
    expect(sink.offer({ message_id: 3, fence: 3, instance: "a", attempt: 1 })).toEqual({ accepted: false, reason: "stale_fence", highest: 4 });
    expect(sink.offer({ message_id: 3, fence: 4, instance: "b", attempt: 2 })).toEqual({ accepted: true });
    expect(sink.accepted.map((e) => e.message_id)).toEqual([1, 2, 3]);
    expect(sink.rejected.map((e) => e.fence)).toEqual([3]);
  });

  it("rejects malformed effects", () => {
    expect(parseEffect({ message_id: 1, fence: 2, instance: "m", attempt: 1 })).not.toBeNull();
    expect(parseEffect({ message_id: "1", fence: 2, instance: "m", attempt: 1 })).toBeNull();
    expect(parseEffect({ message_id: 1, fence: -1, instance: "m", attempt: 1 })).toBeNull();
    expect(parseEffect({ message_id: 1, fence: 2, instance: "", attempt: 1 })).toBeNull();
    expect(parseEffect(null)).toBeNull();
  });

  it("over HTTP: 200 accepted, 409 stale, 400 malformed", async () => {
    const sink = new FenceSink();
    const server = await startSink(sink);
    try {
      const post = (body: unknown) => fetch(`${server.url}/effect`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.status);
      expect(await post({ message_id: 1, fence: 5, instance: "a", attempt: 1 })).toBe(200);
      expect(await post({ message_id: 2, fence: 4, instance: "b", attempt: 1 })).toBe(409);
      expect(await post({ message_id: 2 })).toBe(400);
      expect(sink.log).toHaveLength(2);
    } finally {
      await server.close();
    }
  });
});

describe("chaos invariants", () => {
  const acked = (id: number, fence: number): CoordinatorMessage => ({ id, status: "acknowledged", attempts: 1, acked_fence: fence });

  function run(effects: [id: number, fence: number, instance: string][], messages: CoordinatorMessage[], sentIds = messages.map((m) => m.id), strict = true) {
    const sink = new FenceSink();
    for (const [message_id, fence, instance] of effects) sink.offer({ message_id, fence, instance, attempt: 1 });
    return checkRun({ sentIds, messages, effects: sink.log }, { strict });
  }
  const failed = (r: ReturnType<typeof run>) => r.invariants.filter((i) => !i.ok).map((i) => i.name);

  it("a clean run passes every invariant and counts a refused stale write", () => {
    const r = run([[1, 1, "a"], [2, 2, "b"], [3, 1, "a"], [3, 2, "b"]], [acked(1, 1), acked(2, 2), acked(3, 2)]);
    expect(failed(r)).toEqual([]);
    expect(r.tally).toMatchObject({ sent: 3, run: 3, runTwice: 0, lost: 0, staleRejected: 1 });
  });

  it("two holders accepted with one fence fail the run", () => {
    const r = run([[1, 2, "a"], [2, 2, "b"]], [acked(1, 2), acked(2, 2)]);
    expect(failed(r)).toEqual(["never two holders accepted with the same fence"]);
  });

  it("an acknowledged message that took effect twice fails a strict run; a re-run after an interrupted run passes a lenient one", () => {
    const rerun = run([[1, 1, "a"], [1, 2, "b"]], [acked(1, 2)]);
    expect(failed(rerun)).toEqual(["every acknowledged message ran exactly once (strict)"]);
    expect(rerun.tally.runTwice).toBe(1);
    const lenient = run([[1, 1, "a"], [1, 2, "b"]], [acked(1, 2)], [1], false);
    expect(failed(lenient)).toEqual([]);
    expect(lenient.tally.runTwice).toBe(1);
  });

  it("a run after the acknowledgement, two runs under one fence, or no run at all fail even a lenient run", () => {
    const name = "every acknowledged message took effect once under the fence that acknowledged it, never after";
    expect(failed(run([[1, 1, "a"], [1, 2, "b"]], [acked(1, 1)], [1], false))).toEqual([name]);
    expect(failed(run([[1, 2, "b"], [1, 2, "b"]], [acked(1, 2)], [1], false))).toEqual([name]);
    expect(failed(run([], [acked(1, 1)], [1], false))).toEqual([name]);
  });

  it("a sent message that is not acknowledged at the end is lost", () => {
    const r = run([], [{ id: 1, status: "delivered", attempts: 2, acked_fence: null }], [1, 2]);
    expect(failed(r)).toEqual(["no message lost: every sent message acknowledged by the end"]);
    expect(r.tally.lost).toBe(2);
  });

  it("an acknowledgement from another fence than the run that took effect fails the run", () => {
    const r = run([[1, 1, "a"]], [acked(1, 2)], [1], false);
    expect(failed(r)).toEqual(["every acknowledged message took effect once under the fence that acknowledged it, never after"]);
  });
});
