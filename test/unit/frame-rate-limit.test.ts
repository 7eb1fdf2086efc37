// The per-connection frame limit, with the clock in the test's hands.
import { describe, expect, it } from "vitest";
import { FrameRateLimit } from "../../worker/rules/frame-rate-limit.ts";
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
