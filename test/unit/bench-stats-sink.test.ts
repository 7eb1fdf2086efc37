// The benchmark's statistics and the chaos run's fenced, idempotent sink and invariant checks.
import { describe, expect, it } from "vitest";
import { checkRun, firstRuns, INVARIANTS, type CoordinatorMessage } from "../../scripts/chaos/invariants.ts";
import { EffectSink, parseEffect, startSink, type LoggedEffect } from "../../scripts/chaos/sink.ts";
import { BEGIN_MARK, END_MARK, spliceReport } from "../../scripts/bench/report.ts";
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

describe("benchmark report", () => {
  it("--write replaces only the generated block of docs/benchmarks.md and keeps the sections around it", () => {
    const doc = `# Benchmarks\n\nintro\n\n${BEGIN_MARK}\nold run\n${END_MARK}\n\n## Past one machine\n\nplan\n`;
    expect(spliceReport(doc, "## Latest run\n\nnew\n")).toBe(
      `# Benchmarks\n\nintro\n\n${BEGIN_MARK}\n## Latest run\n\nnew\n${END_MARK}\n\n## Past one machine\n\nplan\n`,
    );
    expect(() => spliceReport("# Benchmarks\n", "x")).toThrow("no <!-- bench:begin");
  });
});

describe("fenced, idempotent sink", () => {
  const effect = (message_id: number, fence: number, instance: string, attempt = 1) => ({ message_id, key: `${message_id}:effect`, fence, instance, attempt });

  it("a holder that paused and comes back with an older fence is refused; the same fence is accepted again", () => {
    const sink = new EffectSink();
    expect(sink.offer(effect(1, 3, "a"))).toEqual({ accepted: true, duplicate: false });
    expect(sink.offer(effect(2, 4, "b"))).toEqual({ accepted: true, duplicate: false });
    expect(sink.offer(effect(3, 3, "a"))).toEqual({ accepted: false, reason: "stale_fence", highest: 4 });
    expect(sink.offer(effect(3, 4, "b", 2))).toEqual({ accepted: true, duplicate: false });
    expect(sink.accepted.map((e) => e.message_id)).toEqual([1, 2, 3]);
    expect(sink.log.map((e) => e.outcome)).toEqual(["applied", "applied", "stale_fence", "applied"]);
  });

  it("a message re-run by the next holder after its effect landed is a duplicate: success, nothing applied again", () => {
    const sink = new EffectSink();
    expect(sink.offer(effect(7, 3, "a"))).toEqual({ accepted: true, duplicate: false });
    expect(sink.offer(effect(7, 4, "b", 2))).toEqual({ accepted: true, duplicate: true, applied_fence: 3 });
    expect(sink.offer(effect(7, 4, "b", 2))).toEqual({ accepted: true, duplicate: true, applied_fence: 3 });
    expect(sink.log.map((e) => e.outcome)).toEqual(["applied", "duplicate", "duplicate"]);
  });

  it("a stale writer is refused even for a key already applied; the fence is checked first", () => {
    const sink = new EffectSink();
    sink.offer(effect(7, 3, "a"));
    sink.offer(effect(8, 4, "b"));
    expect(sink.offer(effect(7, 3, "a"))).toEqual({ accepted: false, reason: "stale_fence", highest: 4 });
  });

  it("rejects malformed effects", () => {
    expect(parseEffect(effect(1, 2, "m"))).toEqual(effect(1, 2, "m"));
    expect(parseEffect({ ...effect(1, 2, "m"), message_id: "1" })).toBeNull();
    expect(parseEffect({ ...effect(1, 2, "m"), fence: -1 })).toBeNull();
    expect(parseEffect({ ...effect(1, 2, "m"), instance: "" })).toBeNull();
    expect(parseEffect({ ...effect(1, 2, "m"), key: "" })).toBeNull();
    expect(parseEffect({ message_id: 1, fence: 2, instance: "m", attempt: 1 })).toBeNull();
    expect(parseEffect(null)).toBeNull();
  });

  it("over HTTP: 200 applied, 200 duplicate, 409 stale, 400 malformed", async () => {
    const sink = new EffectSink();
    const server = await startSink(sink);
    try {
      const post = async (body: unknown) => {
        const res = await fetch(`${server.url}/effect`, { method: "POST", body: JSON.stringify(body) });
        return [res.status, await res.json()];
      };
      expect(await post(effect(1, 5, "a"))).toEqual([200, { accepted: true, duplicate: false }]);
      expect(await post(effect(1, 5, "a"))).toEqual([200, { accepted: true, duplicate: true, applied_fence: 5 }]);
      expect(await post(effect(2, 4, "b"))).toEqual([409, { accepted: false, reason: "stale_fence", highest: 5 }]);
      expect((await post({ message_id: 2 }))[0]).toBe(400);
      expect(sink.log).toHaveLength(3);
    } finally {
      await server.close();
    }
  });
});

describe("chaos invariants", () => {
  const acked = (id: number, fence: number, attempts = 1): CoordinatorMessage => ({ id, status: "acknowledged", attempts, acked_fence: fence });

  function run(
    effects: [id: number, fence: number, instance: string][],
    messages: CoordinatorMessage[],
    sentIds = messages.map((m) => m.id),
    postFences?: Map<number, number>,
  ) {
    const sink = new EffectSink();
    for (const [message_id, fence, instance] of effects) sink.offer({ message_id, key: `${message_id}:effect`, fence, instance, attempt: 1 });
    return checkRun({ sentIds, messages, effects: sink.log, postFences });
  }
  const failed = (r: ReturnType<typeof run>) => r.invariants.filter((i) => !i.ok).map((i) => i.name);

  it("a clean run passes every invariant and counts a refused stale write", () => {
    const r = run([[1, 1, "a"], [2, 2, "b"], [3, 1, "a"], [3, 2, "b"]], [acked(1, 1), acked(2, 2), acked(3, 2)]);
    expect(failed(r)).toEqual([]);
    expect(r.tally).toMatchObject({ sent: 3, run: 3, runTwice: 1, appliedTwice: 0, lost: 0, staleRejected: 1, duplicatesAbsorbed: 0 });
  });

  it("a re-run after an interrupted run is counted as run twice, absorbed as a duplicate, and passes", () => {
    const r = run([[1, 1, "a"], [1, 2, "b"]], [acked(1, 2, 2)]);
    expect(failed(r)).toEqual([]);
    expect(r.tally).toMatchObject({ run: 1, runTwice: 1, appliedTwice: 0, duplicatesAbsorbed: 1, redelivered: 1 });
  });

  it("counts a message redelivered as baton_message_redeliveries_total does: a hand-out right after a declined one is none", () => {
    const r = run([], [acked(1, 1), { ...acked(2, 2, 2), declined: 1 }, { ...acked(3, 2, 3), declined: 1 }, acked(4, 2, 2)]);
    expect(r.tally.redelivered).toBe(2);
  });

  it("an effect applied twice (a sink that lost its idempotency) fails the run", () => {
    const twice: LoggedEffect[] = [1, 2].map((fence, i) => ({
      message_id: 1, key: "1:effect", fence, instance: `m${fence}`, attempt: fence, outcome: "applied", highestBefore: fence - 1, at: i,
    }));
    const r = checkRun({ sentIds: [1], messages: [acked(1, 2, 2)], effects: twice });
    expect(r.tally.appliedTwice).toBe(1);
    expect(r.invariants.filter((i) => !i.ok).map((i) => i.name)).toEqual([INVARIANTS.exactlyOnce]);
  });

  it("two holders accepted with one fence fail the run", () => {
    const r = run([[1, 2, "a"], [2, 2, "b"]], [acked(1, 2), acked(2, 2)]);
    expect(failed(r)).toEqual([INVARIANTS.oneHolderPerFence]);
  });

  it("an effect under a later fence than the acknowledgement, or no effect at all, fails the run", () => {
    expect(failed(run([[1, 2, "b"]], [acked(1, 1)]))).toEqual([INVARIANTS.exactlyOnce]);
    expect(failed(run([], [acked(1, 1)]))).toEqual([INVARIANTS.exactlyOnce]);
  });

  it("an effect under an earlier fence than the acknowledgement passes (the run was interrupted before its reply)", () => {
    expect(failed(run([[1, 1, "a"]], [acked(1, 2, 2)]))).toEqual([]);
  });

  it("a message run twice under one fence, or with more attempts than fences since posting, was handed over twice under one fence", () => {
    expect(failed(run([[1, 2, "b"], [1, 2, "b"]], [acked(1, 2)]))).toEqual([INVARIANTS.oncePerFence]);
    expect(failed(run([[1, 4, "b"]], [acked(1, 4, 2)], [1], new Map([[1, 4]])))).toEqual([INVARIANTS.oncePerFence]);
    expect(failed(run([[1, 4, "b"]], [acked(1, 4, 2)], [1], new Map([[1, 3]])))).toEqual([]);
  });

  it("a sent message that is not acknowledged at the end is lost", () => {
    const r = run([], [{ id: 1, status: "delivered", attempts: 2, acked_fence: null }], [1, 2]);
    expect(failed(r)).toEqual([INVARIANTS.noneLost]);
    expect(r.tally.lost).toBe(2);
  });

  it("first runs set the attempt against the lease changes since posting", () => {
    const sink = new EffectSink();
    sink.offer({ message_id: 1, key: "1:effect", fence: 5, instance: "a", attempt: 3 });
    sink.offer({ message_id: 1, key: "1:effect", fence: 6, instance: "b", attempt: 4 });
    sink.offer({ message_id: 2, key: "2:effect", fence: 6, instance: "b", attempt: 1 });
    expect(firstRuns(sink.log, new Map([[1, 3], [2, 5]]))).toEqual([
      { id: 1, attempt: 3, leaseChanges: 2 },
      { id: 2, attempt: 1, leaseChanges: 1 },
    ]);
  });
});
