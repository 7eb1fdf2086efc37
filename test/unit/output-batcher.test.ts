// client/core/output-batcher.ts on a hand-moved clock: many small writes become few frames, in
// order; a character cut between writes is never split across frames; bytes that are not UTF-8 or
// full of control characters travel as base64; everything is sent by flush(); a refusal stops it.
import { describe, expect, it } from "vitest";
import { FLUSH_MS, OUTPUT_BATCH_BYTES, OutputBatcher, utf8Boundary } from "../../client/core/output-batcher.ts";
import type { Clock } from "../../client/core/clock.ts";
import { chunkBytes, type OutputChunk } from "../../worker/wire/output.ts";

function manualClock() {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  const clock: Clock = {
    now: () => now,
    after(ms, fn) {
      const t = { at: now + ms, fn };
      timers.push(t);
      return () => void timers.splice(timers.indexOf(t) >>> 0, timers.includes(t) ? 1 : 0);
    },
  };
  const advance = async (ms: number) => {
    now += ms;
    for (const t of timers.filter((x) => x.at <= now)) {
      timers.splice(timers.indexOf(t), 1);
      t.fn();
    }
    await new Promise((r) => setTimeout(r, 0));
  };
  return { clock, advance };
}

function recorder() {
  const frames: OutputChunk[][] = [];
  return { frames, send: async (chunks: OutputChunk[]) => void frames.push(chunks) };
}

const joined = (frames: OutputChunk[][], stream?: string) =>
  Buffer.concat(frames.flat().filter((c) => stream === undefined || c.stream === stream).map((c) => chunkBytes(c))).toString("utf8");

describe("OutputBatcher", () => {
  it("a thousand small writes within the flush interval go out as one frame, in order, marked by stream", async () => {
    const { clock, advance } = manualClock();
    const r = recorder();
    const b = new OutputBatcher(r.send, clock);
    for (let i = 0; i < 1000; i++) void b.write(`l${i}\n`, i % 10 === 0 ? "stderr" : "stdout");
    expect(r.frames).toHaveLength(0);
    await advance(FLUSH_MS);
    await b.flush();
    // 200 runs of one stream, at most LIMITS.outputBatchChunks chunks a frame.
    expect(r.frames).toHaveLength(4);
    expect(joined(r.frames, "stdout")).toBe(Array.from({ length: 1000 }, (_, i) => i).filter((i) => i % 10 !== 0).map((i) => `l${i}\n`).join(""));
    expect(joined(r.frames, "stderr")).toBe(Array.from({ length: 100 }, (_, i) => `l${i * 10}\n`).join(""));
  });

  it("a thousand writes of one stream become one frame of one chunk", async () => {
    const { clock, advance } = manualClock();
    const r = recorder();
    const b = new OutputBatcher(r.send, clock);
    for (let i = 0; i < 1000; i++) void b.write(`token${i} `, "text");
    await advance(FLUSH_MS);
    await b.flush();
    expect(r.frames).toHaveLength(1);
    expect(r.frames[0]).toHaveLength(1);
  });

  it("a full frame goes at once; no frame carries more than the wire allows", async () => {
    const { clock } = manualClock();
    const r = recorder();
    const b = new OutputBatcher(r.send, clock);
    void b.write("x".repeat(OUTPUT_BATCH_BYTES * 3 + 5), "stdout");
    await b.flush();
    expect(r.frames.map((f) => f.reduce((n, c) => n + chunkBytes(c).byteLength, 0))).toEqual([OUTPUT_BATCH_BYTES, OUTPUT_BATCH_BYTES, OUTPUT_BATCH_BYTES, 5]);
  });

  it("a character cut between two writes is sent whole, as text; invalid UTF-8 and NUL-heavy bytes go as base64, exactly", async () => {
    const { clock, advance } = manualClock();
    const r = recorder();
    const b = new OutputBatcher(r.send, clock);
    const euro = new TextEncoder().encode("€");
    void b.write(euro.subarray(0, 2), "stdout");
    await advance(FLUSH_MS);
    void b.write(euro.subarray(2), "stdout");
    await b.flush();
    expect(r.frames.flat().every((c) => c.text !== undefined)).toBe(true);
    expect(joined(r.frames)).toBe("€");
    const bad = new Uint8Array([0xff, 0xfe, 0x00, 0x41]);
    const nul = new Uint8Array(100);
    void b.write(bad, "stderr");
    await b.flush();
    void b.write(nul, "stdout");
    await b.flush();
    expect(r.frames.at(-2)![0]).toEqual({ stream: "stderr", base64: Buffer.from(bad).toString("base64") });
    expect(r.frames.at(-1)![0]!.base64).toBe(Buffer.from(nul).toString("base64"));
  });

  it("after a refusal nothing more is sent and writes resolve at once", async () => {
    const { clock } = manualClock();
    let sent = 0;
    const b = new OutputBatcher(async () => {
      sent++;
      throw new Error("stale_token");
    }, clock);
    void b.write("one");
    await b.flush();
    await b.write("two");
    await b.flush();
    expect(sent).toBe(1);
  });

  it("utf8Boundary never cuts inside a character", () => {
    const bytes = new TextEncoder().encode("a€b");
    expect([0, 1, 2, 3, 4, 5].map((at) => utf8Boundary(bytes, at))).toEqual([0, 1, 1, 1, 4, 5]);
    expect(utf8Boundary(bytes.subarray(0, 3), 3)).toBe(1);
  });
});
