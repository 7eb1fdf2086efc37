// Live output: a chunk from the runner's `output` frame to a following reader (an SSE stream of
// GET …/output), next to the floor probe relaying one frame from one socket to another in the same
// run; one chatty runner's throughput (80-byte lines in frames of LIMITS.outputBatchBytes, one in flight and paced as
// the client's batcher sends them) with no follower and with 20; the worker's memory around it.
import { SseParser } from "../../client/core/sse.ts";
import { DEV_TOKEN, type DevServer } from "../../test/e2e/wrangler-dev.ts";
import type { OutputEvent } from "../../worker/wire/output.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { fmt, markdownTable, percentile, ratio } from "./stats.ts";
import { Runner, runningMessage } from "./steps.ts";
import { workerdMemoryMiB } from "./workerd-memory.ts";

const PACE_MS = 25;
const LINE = `${"x".repeat(79)}\n`;
const FRAME_LINES = Math.floor(LIMITS.outputBatchBytes / LINE.length);

/** Follows a message's output over SSE; `onChunk` sees every chunk as it arrives. */
function follow(url: string, agent: string, id: number, onChunk: (e: Extract<OutputEvent, { type: "chunk" }>) => void): AbortController {
  const abort = new AbortController();
  void (async () => {
    const res = await fetch(`${url}/agents/${agent}/messages/${id}/output`, { headers: { authorization: `Bearer ${DEV_TOKEN}` }, signal: abort.signal });
    const parser = new SseParser();
    const decoder = new TextDecoder();
    for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
      for (const e of parser.push(decoder.decode(part, { stream: true }))) if (e.type === "chunk") onChunk(e);
    }
  })().catch(() => {});
  return abort;
}

async function latency(batonUrl: string, floorUrl: string, ttlMs: number, trials: number): Promise<{ baton: number[]; floor: number[] }> {
  const stamp = Date.now();
  const agent = `bench-output-${stamp}`;
  const { runner, id, token } = await runningMessage(batonUrl, agent, ttlMs);
  const waiting = new Map<string, () => void>();
  const reader = follow(batonUrl, agent, id, (e) => waiting.get(e.text ?? "")?.());
  const a = await Runner.floor(floorUrl, `floor-output-${stamp}`);
  const b = await Runner.floor(floorUrl, `floor-output-${stamp}`);
  const out = { baton: [] as number[], floor: [] as number[] };
  try {
    await new Promise((r) => setTimeout(r, 500));
    for (let i = 0; i < trials + 3; i++) {
      const text = `chunk ${i}\n`;
      const seen = new Promise<void>((resolve) => waiting.set(text, resolve));
      let t0 = performance.now();
      runner.ws.send(JSON.stringify({ type: "output", id, token, chunks: [{ stream: "stdout", text }] }));
      await seen;
      const batonMs = performance.now() - t0;
      await new Promise((r) => setTimeout(r, PACE_MS));
      const held = b.next((f) => f.type === "held", "relayed frame");
      t0 = performance.now();
      a.ws.send('{"type":"relay"}');
      await held;
      const floorMs = performance.now() - t0;
      if (i >= 3) (out.baton.push(batonMs), out.floor.push(floorMs));
      await new Promise((r) => setTimeout(r, PACE_MS));
    }
  } finally {
    reader.abort();
    runner.close();
    a.close();
    b.close();
  }
  return out;
}

/** `frames` frames of 80-byte lines from one runner, each sent when the last was answered (paced); `followers` readers follow until they got every byte. */
async function throughput(url: string, ttlMs: number, frames: number, followers: number): Promise<{ linesPerS: number; mibPerS: number; readersDoneMs: number }> {
  const agent = `bench-chatty-${Date.now()}-${followers}`;
  const { runner, id, token } = await runningMessage(url, agent, ttlMs);
  const total = frames * FRAME_LINES * LINE.length;
  const readers: Promise<void>[] = [];
  const aborts: AbortController[] = [];
  for (let i = 0; i < followers; i++) {
    readers.push(new Promise((resolve) => {
      let got = 0;
      aborts.push(follow(url, agent, id, (e) => {
        got += e.text?.length ?? 0;
        if (got >= total) resolve();
      }));
    }));
  }
  const text = LINE.repeat(FRAME_LINES);
  // The socket's pace: 50 frames and LIMITS.frameCharsPerSecond characters a second (with a margin), as the client's pacer keeps it.
  const paceMs = Math.max(PACE_MS, ((text.length + 100) / LIMITS.frameCharsPerSecond) * 1000 * 1.1);
  const t0 = performance.now();
  for (let i = 0; i < frames; i++) {
    const sent = performance.now();
    const answer = await runner.write({ type: "output", id, token, chunks: [{ stream: "stdout", text }] });
    if (answer.type !== "result") throw new Error(`output refused: ${JSON.stringify(answer)}`);
    const left = paceMs - (performance.now() - sent);
    if (left > 0) await new Promise((r) => setTimeout(r, left));
  }
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(readers);
  const readersDoneMs = performance.now() - t0 - seconds * 1000;
  for (const a of aborts) a.abort();
  runner.close();
  return { linesPerS: (frames * FRAME_LINES) / seconds, mibPerS: total / 1024 / 1024 / seconds, readersDoneMs };
}

export async function runOutput(dev: DevServer, floorUrl: string, ttlSeconds: number, trials: number, frames: number): Promise<string> {
  const ttlMs = ttlSeconds * 1000;
  const lat = await latency(dev.url, floorUrl, ttlMs, trials);
  const before = workerdMemoryMiB(dev);
  const alone = await throughput(dev.url, ttlMs, frames, 0);
  const watched = await throughput(dev.url, ttlMs, frames, 20);
  const after = workerdMemoryMiB(dev);
  const p = (s: number[], q: number) => percentile(s, q);
  return [
    "## Live output",
    "",
    `A chunk from the runner's \`output\` frame to a reader following GET …/output (SSE), against the floor probe relaying one frame between two sockets of one object; ${lat.baton.length} trials each, interleaved.`,
    "",
    markdownTable(["", "p50 ms", "p99 ms"], [
      ["baton: output frame to follower", fmt(p(lat.baton, 50)), fmt(p(lat.baton, 99))],
      ["floor: one frame relayed", fmt(p(lat.floor, 50)), fmt(p(lat.floor, 99))],
      ["ratio (goal <= 1.5x)", ratio(p(lat.baton, 50), p(lat.floor, 50)), ratio(p(lat.baton, 99), p(lat.floor, 99))],
    ]),
    "",
    `One chatty runner: ${frames} frames of ${FRAME_LINES} 80-byte lines (${fmt((frames * FRAME_LINES * LINE.length) / 1024 / 1024)} MiB), each frame sent once the last was answered and no faster than the serve socket's pace (${LIMITS.frameCharsPerSecond / 1024} Ki characters a second: the ceiling of any runner's output).`,
    "",
    markdownTable(["followers", "lines/s", "MiB/s", "last follower done after the writer (ms)"], [
      ["0", fmt(alone.linesPerS), fmt(alone.mibPerS), "-"],
      ["20", fmt(watched.linesPerS), fmt(watched.mibPerS), fmt(watched.readersDoneMs)],
    ]),
    "",
    `Worker workerd resident memory: ${fmt(before.worker)} MiB before, ${fmt(after.worker)} MiB after both runs.`,
    "",
  ].join("\n");
}
