// The per-connection frame limit, with the clock in the test's hands.
import { describe, expect, it } from "vitest";
import { BucketPerSocket, ByteBucket, FrameRateLimit } from "../../worker/rules/frame-rate-limit.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";

describe("FrameRateLimit", () => {
  const socket = () => ({});

  it("allows the limit within one second and refuses the next frame", () => {
    const limit = new FrameRateLimit(LIMITS.framesPerSecond);
    const ws = socket();
    const answers = Array.from({ length: LIMITS.framesPerSecond + 3 }, (_, i) => limit.allow(ws, 1000 + i));
    expect(answers.filter(Boolean)).toHaveLength(LIMITS.framesPerSecond);
    expect(answers.slice(LIMITS.framesPerSecond)).toEqual([false, false, false]);
  });

  it("opens a new window a second after the first frame of the last one", () => {
    const limit = new FrameRateLimit(2);
    const ws = socket();
    expect([limit.allow(ws, 0), limit.allow(ws, 10), limit.allow(ws, 999)]).toEqual([true, true, false]);
    expect([limit.allow(ws, 1000), limit.allow(ws, 1001), limit.allow(ws, 1002)]).toEqual([true, true, false]);
  });

  it("counts each connection on its own", () => {
    const limit = new FrameRateLimit(1);
    const a = socket();
    const b = socket();
    expect([limit.allow(a, 0), limit.allow(b, 0), limit.allow(a, 1), limit.allow(b, 1)]).toEqual([true, true, false, false]);
  });
});

describe("FrameRateLimit in bytes", () => {
  it("refuses a frame that would take the window past its byte budget, however few frames came", () => {
    const limit = new FrameRateLimit(50, 1000);
    const ws = {};
    expect([limit.allow(ws, 0, 600), limit.allow(ws, 1, 400), limit.allow(ws, 2, 1)]).toEqual([true, true, false]);
    expect(limit.allow(ws, 1000, 1000)).toBe(true);
  });
});

describe("ByteBucket", () => {
  it("spends only whole amounts and says how long until the next one fits", () => {
    const bucket = new ByteBucket(1000, 500);
    expect(bucket.take(800, 0)).toEqual({ ok: true });
    expect(bucket.take(800, 0)).toEqual({ ok: false, retryAfterMs: 1200 });
    expect(bucket.take(800, 1200)).toEqual({ ok: true });
  });

  it("never holds more than its capacity, and a request larger than it waits for a full bucket", () => {
    const bucket = new ByteBucket(1000, 500);
    expect(bucket.take(1000, 0)).toEqual({ ok: true });
    expect(bucket.take(5000, 60_000)).toEqual({ ok: true });
    expect(bucket.take(1, 60_000)).toEqual({ ok: false, retryAfterMs: 2 });
  });

  it("a refund returns unused bytes, up to the capacity", () => {
    const bucket = new ByteBucket(1000, 1);
    bucket.take(1000, 0);
    bucket.refund(600);
    expect(bucket.take(600, 0)).toEqual({ ok: true });
    bucket.refund(5000);
    expect(bucket.take(1000, 0)).toEqual({ ok: true });
  });
});

describe("BucketPerSocket", () => {
  it("gives each socket its own full bucket", () => {
    const buckets = new BucketPerSocket(100, 1);
    const a = {};
    expect(buckets.of(a).take(100, 0)).toEqual({ ok: true });
    expect(buckets.of(a).take(1, 0).ok).toBe(false);
    expect(buckets.of({}).take(100, 0)).toEqual({ ok: true });
  });
});
