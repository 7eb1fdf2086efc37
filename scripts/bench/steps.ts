// Durable steps against the floor: a step record (one `step` frame to its result) next to the
// floor's one-row write answered on the same socket; a successor taking over a message with 100
// recorded steps next to one with none (runner closes to run copy in the successor's hands). A
// 10 MiB step result through R2 is its own scenario (upload.ts).
import WebSocket from "ws";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { PING_TEXT } from "../../worker/wire/protocol.ts";
import type { ScenarioResult } from "./report.ts";
import { fmt, markdownTable, percentile, ratio } from "./stats.ts";

const WAIT_MS = 15_000;
/** A serve socket may send 50 frames a second. */
const PACE_MS = 25;
const WARM = 20;
const REPLAY_STEPS = 100;
/** How long a takeover waits before its runner closes, so the object is idle either way. */
const SETTLE_MS = 500;

type Frame = Record<string, unknown> & { type: string };

export class Runner {
  private readonly frames: Frame[] = [];
  private readonly waiters: { match: (f: Frame) => boolean; resolve: (f: Frame) => void; fail: (e: Error) => void }[] = [];
  private readonly ping: ReturnType<typeof setInterval> | undefined;
  private seq = 0;

  private constructor(readonly ws: WebSocket, ttlMs: number | null, machine: string) {
    ws.on("message", (data) => {
      const f = JSON.parse(String(data)) as Frame;
      const i = this.waiters.findIndex((w) => w.match(f));
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(f);
      else if (f.type === "error" && f.req === undefined) console.error(`  bench runner ${machine}: ${String(f.code)}: ${String(f.message)}`);
      else this.frames.push(f);
    });
    this.ping = ttlMs === null ? undefined : setInterval(() => ws.readyState === WebSocket.OPEN && ws.send(PING_TEXT), ttlMs / 3);
    ws.on("close", (code, reason) => {
      this.closed = `closed by the coordinator (${code} ${String(reason)})`;
      for (const w of this.waiters.splice(0)) w.fail(new Error(this.closed));
    });
  }

  /** Why the socket closed under us (a busy machine can starve a 2 s TTL), or null. */
  private closed: string | null = null;

  static async open(url: string, agent: string, machine: string, ttlMs: number): Promise<Runner> {
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/agents/${agent}/serve?machine=${machine}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));
    const r = new Runner(ws, ttlMs, machine);
    ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
    return r;
  }

  /** A room of the floor probe, read and written through this same class, so both sides pay the same client costs. */
  static async floor(floorUrl: string, room: string): Promise<Runner> {
    const ws = new WebSocket(`${floorUrl.replace(/^http/, "ws")}/rooms/${room}`);
    await new Promise((resolve, reject) => (ws.once("open", resolve), ws.once("error", reject)));
    return new Runner(ws, null, "floor");
  }

  next(match: (f: Frame) => boolean, what = "a frame"): Promise<Frame> {
    const i = this.frames.findIndex(match);
    if (i >= 0) return Promise.resolve(this.frames.splice(i, 1)[0]!);
    if (this.closed) return Promise.reject(new Error(this.closed));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} in time; got ${JSON.stringify(this.frames.map((f) => f.type))}`)), WAIT_MS);
      this.waiters.push({ match, resolve: (f) => (clearTimeout(timer), resolve(f)), fail: (e) => (clearTimeout(timer), reject(e)) });
    });
  }

  /** Sends a write and resolves with its answer (result or error). */
  write(frame: Record<string, unknown>): Promise<Frame> {
    const req = `b${++this.seq}`;
    const answer = this.next((f) => (f.type === "result" || f.type === "error") && f.req === req, `answer to ${String(frame.type)} ${String(frame.name ?? "")}`);
    this.ws.send(JSON.stringify({ ...frame, req }));
    return answer;
  }

  close(): void {
    clearInterval(this.ping);
    this.ws.terminate();
  }
}

async function postMessage(url: string, agent: string): Promise<number> {
  const res = await fetch(`${url}/agents/${agent}/messages`, {
    method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "bench" }),
  });
  return ((await res.json()) as { id: number }).id;
}

const runCopy = (id: number) => (f: Frame) => f.type === "message" && f.run === true && f.id === id;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A runner holding a running message, ready for journal writes. */
export async function runningMessage(url: string, agent: string, ttlMs: number) {
  const runner = await Runner.open(url, agent, "a", ttlMs);
  await runner.next((f) => f.type === "serve_lease" && f.held === true, "held lease frame");
  const id = await postMessage(url, agent);
  const m = await runner.next(runCopy(id), "first run copy");
  return { runner, id, token: m.token as number, runKey: m.run_key as string };
}

async function stepRecords(batonUrl: string, floorUrl: string, ttlMs: number, trials: number, stamp: string): Promise<ScenarioResult> {
  const label = "step record: step frame to its result (floor: one row written, answered)";
  const { runner, id, token } = await runningMessage(batonUrl, `bench-steps-${stamp}`, ttlMs);
  // The floor gets a frame of the same size and answers with its req, through the same client code.
  const floor = await Runner.floor(floorUrl, `floor-steps-${stamp}`);
  const samples: ScenarioResult["samples"] = { baton: [], floor: [] };
  const failures: ScenarioResult["failures"] = {};
  try {
    for (let i = 0; i < WARM + trials; i++) {
      for (const name of i % 2 ? (["floor", "baton"] as const) : (["baton", "floor"] as const)) {
        const t0 = performance.now();
        if (name === "baton") {
          const answer = await runner.write({ type: "step", id, token, name: `s${i}`, kind: "step", phase: "done", value: { i, text: "an LLM answer" } });
          if (answer.type !== "result") {
            failures.baton = (failures.baton ?? 0) + 1;
            continue;
          }
        } else {
          await floor.write({ type: "write", id, token, name: `s${i}`, kind: "step", phase: "done", value: { i, text: "an LLM answer" } });
        }
        if (i >= WARM) samples[name]!.push(performance.now() - t0);
      }
      await pause(PACE_MS);
    }
  } finally {
    runner.close();
    floor.close();
  }
  console.log(`  ${label}: done`);
  return { label, samples, failures };
}

/** Runner a closes with `steps` recorded; the time until b holds the run copy with all of them. */
async function takeOver(url: string, agent: string, ttlMs: number, steps: number): Promise<number> {
  const { runner: a, id, token } = await runningMessage(url, agent, ttlMs);
  const b = await Runner.open(url, agent, "b", ttlMs);
  await b.next((f) => f.type === "serve_lease" && f.held === false, "standby lease frame");
  for (let i = 0; i < steps; i++) {
    await a.write({ type: "step", id, token, name: `s${i}`, kind: "step", phase: "done", value: { i, text: "x".repeat(200) } });
    await pause(PACE_MS);
  }
  // Both cases close an idle object: without the pause, the case with no steps closed while the
  // first hand-out's work (presence, the directory's report) still ran, and took the longer of the two.
  await pause(SETTLE_MS);
  const copy = b.next(runCopy(id), "run copy");
  const t0 = performance.now();
  a.close();
  const m = await copy;
  const ms = performance.now() - t0;
  b.close();
  if ((m.steps as unknown[] | undefined ?? []).length !== steps) throw new Error(`the successor got ${(m.steps as unknown[] | undefined)?.length} steps, not ${steps}`);
  return ms;
}

/** The step scenario: a result for the main table (record vs floor) and a section for replay and blobs. */
export async function runSteps(batonUrl: string, floorUrl: string, ttlSeconds: number, trials: number): Promise<{ result: ScenarioResult; section: string }> {
  const ttlMs = ttlSeconds * 1000;
  const stamp = `${process.pid}-${Date.now()}`;
  const result = await stepRecords(batonUrl, floorUrl, ttlMs, trials, stamp);
  const replayTrials = Math.min(trials, 20);
  const takeovers: { none: number[]; hundred: number[] } = { none: [], hundred: [] };
  let takeoverFailures = 0;
  for (let i = 0; i < replayTrials; i++) {
    // A pair counts together or not at all (a loaded machine can drop a socket), so the ratio compares the same minutes.
    try {
      const none = await takeOver(batonUrl, `bench-replay0-${stamp}-${i}`, ttlMs, 0);
      const hundred = await takeOver(batonUrl, `bench-replay100-${stamp}-${i}`, ttlMs, REPLAY_STEPS);
      takeovers.none.push(none);
      takeovers.hundred.push(hundred);
    } catch (e) {
      takeoverFailures++;
      console.error(`  successor replay trial ${i}: ${(e as Error).message}`);
    }
  }
  console.log("  successor replay: done");
  const p50 = (xs: number[]) => percentile(xs, 50);
  const section = [
    "### Durable steps",
    "",
    `Successor takeover (runner closes → the successor holds the run copy with its journal), ${takeovers.none.length} trials each${takeoverFailures ? ` (${takeoverFailures} failed)` : ""}:`,
    "",
    markdownTable(["message", "p50 ms", "ratio"], [
      ["no steps recorded", fmt(p50(takeovers.none)), "1.00x"],
      [`${REPLAY_STEPS} steps recorded (200 B each)`, fmt(p50(takeovers.hundred)), ratio(p50(takeovers.hundred), p50(takeovers.none))],
    ]),
  ].join("\n");
  return { result, section };
}
