// The fenced LangGraph checkpointer end to end: a real StateGraph of four nodes, run by two
// processes on one thread at once against a real wrangler dev. A takes the thread, runs plan,
// and is paused (SIGSTOP) inside draft past its lease's TTL; B takes the thread over and
// finishes the graph; A resumes (SIGCONT) and its write is refused by the coordinator with a
// stale fence, so it stops. The thread's history stays one line. The example's own demo runs that
// story once for both tests about it; a second story passes the lease's signal to the graph. Also: state past the inline
// limit (R2) through a real graph, and the saver's refusals to write without the thread's lease.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { BatonSaver, threadSession, withThreadLease } from "../../client/langgraph.ts";
import { listLeaseData } from "../../client/lease-data.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { sharedServeFixture } from "./serve-helpers.ts";

const fx = sharedServeFixture();

const EXAMPLE = join(ROOT, "examples/langgraph-thread.mjs");
const conn = () => ({ url: fx.dev.url, token: DEV_TOKEN });
/**
 * The workers' lease TTL. The example's own 2 s lapsed under load (renewals every 0.67 s that took
 * longer than the TTL on 2 shared cores): a worker that cannot prove its lease stops, rightly, but
 * the story then is another one. A is still paused past it, so each story waits this long.
 */
const TTL = ["--ttl", "5"];


type Line = { event: string; worker: string; node?: string; fence?: number; code?: string | null; log?: string[] };

/** One worker of the example, its JSON lines collected; `until` resolves on the first line that matches. */
function worker(thread: string, name: string, extra: string[] = []) {
  const proc = spawn(process.execPath, [EXAMPLE, "worker", thread, name, ...extra, ...TTL, "--json"], {
    cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN }, stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: Line[] = [];
  const waiters: (() => void)[] = [];
  let buffer = "";
  proc.stdout!.on("data", (d) => {
    buffer += d;
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    for (const p of parts) if (p) lines.push(JSON.parse(p) as Line);
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  const until = (pick: (l: Line) => boolean, timeoutMs = 30_000) => new Promise<Line>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} never printed what was awaited: ${JSON.stringify(lines)}`)), timeoutMs);
    const check = () => {
      const hit = lines.find(pick);
      if (hit) {
        clearTimeout(timer);
        resolve(hit);
      } else waiters.push(check);
    };
    check();
  });
  return { proc, lines, exited, until };
}

type Told = Line & { linear?: boolean; a_exit?: number; b_exit?: number };
let demo: Promise<{ code: number | null; output: string; thread: string; lines: Told[]; history: Told }> | undefined;

/**
 * The example's whole story in one command (its demo: A with --gate and --ignore-signal, paused
 * inside draft past its TTL, B takes over, A resumed), run once for the two tests that read it:
 * its exit code and output, every line both workers printed, and its last line (the history, both exit codes).
 */
function demoStory() {
  demo ??= new Promise((resolve) => {
    const thread = `t-${crypto.randomUUID()}`;
    const proc = spawn(process.execPath, [EXAMPLE, thread, ...TTL, "--json"], {
      cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN }, stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    proc.stdout!.on("data", (d) => (out += d));
    proc.stderr!.on("data", (d) => (err += d));
    const timer = setTimeout(() => proc.kill("SIGKILL"), 110_000);
    proc.on("exit", (code) => {
      clearTimeout(timer);
      const lines = out.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Told);
      resolve({ code, output: out + err, thread, lines, history: lines.at(-1) ?? { event: "none", worker: "" } });
    });
  });
  return demo;
}

/** Every checkpoint of the thread's root namespace, oldest first. */
async function history(thread: string) {
  const all = [];
  for await (const t of new BatonSaver(conn()).list({ configurable: { thread_id: thread, checkpoint_ns: "" } })) all.push(t);
  return all.reverse();
}

/** A paused past its TTL, B takes over, A resumes: returns both workers once they exited. */
async function pausedWriter(thread: string, aExtra: string[]) {
  const gate = join(mkdtempSync(join(tmpdir(), "baton-lg-")), "go");
  const a = worker(thread, "A", ["--gate", gate, ...aExtra]);
  await a.until((l) => l.event === "node" && l.node === "draft");
  const b = worker(thread, "B");
  a.proc.kill("SIGSTOP");
  // B waits for A's lease, unless its own start-up (seconds under load) outlasted A's TTL.
  await b.until((l) => l.event === "waiting" || l.event === "acquired");
  expect(await b.exited).toBe(0);
  writeFileSync(gate, "");
  a.proc.kill("SIGCONT");
  expect(await a.exited).toBe(3);
  return { a, b };
}

describe("a LangGraph thread under a baton lease", () => {
  it("two workers on one thread, A paused past its TTL: B finishes, A's late write is refused (stale_fence, or A's own clock stops it first), A stops, history is one line", async () => {
    const { thread, lines, output, history: told } = await demoStory();
    expect([told.a_exit, told.b_exit], output).toEqual([3, 0]);
    const a = lines.filter((l) => l.worker === "A" && l.event !== "paused" && l.event !== "resumed");
    const b = lines.filter((l) => l.worker === "B");
    const aFence = a.find((l) => l.event === "acquired")!.fence!;
    expect(b.find((l) => l.event === "acquired")!.fence).toBe(aFence + 1);
    // At SIGCONT A's overdue renewal and its draft's write race: the coordinator refuses the write
    // (stale_fence), or A's lease clock says it lapsed first (under load it often does); either way
    // nothing of A's after its lease is stored, as the history below shows.
    expect(a.at(-1)).toMatchObject({ event: "stopped", code: expect.stringMatching(/^(stale_fence|lapsed)$/) });
    expect(b.at(-1)).toMatchObject({ event: "done", log: ["plan by A", "draft by B", "review by B", "publish by B"] });

    const line = await history(thread);
    expect(line.length).toBeGreaterThanOrEqual(5);
    line.forEach((t, i) => expect(t.parentConfig?.configurable?.checkpoint_id).toBe(i === 0 ? undefined : line[i - 1]!.checkpoint.id));
    expect(line.at(-1)!.checkpoint.channel_values).toMatchObject({ log: ["plan by A", "draft by B", "review by B", "publish by B"] });
    // Nothing A did after its lease ended is stored: no checkpoint and no pending write holds its draft,
    // and what A wrote under its fence ends at plan.
    for (const t of line) expect(JSON.stringify([t.checkpoint.channel_values, t.pendingWrites])).not.toContain("draft by A");
    const fenceOf = new Map<string, number>();
    for await (const item of listLeaseData(conn(), await threadSession(thread), { prefix: "c/" })) fenceOf.set(decodeURIComponent(item.key.split("/")[2]!), item.fence);
    const byA = line.filter((t) => fenceOf.get(t.checkpoint.id) === aFence);
    expect(byA.length).toBeGreaterThan(0);
    for (const t of byA) expect((t.checkpoint.channel_values as { log?: string[] }).log ?? []).not.toContain("draft by A");
    expect(line.filter((t) => fenceOf.get(t.checkpoint.id) !== aFence).every((t) => fenceOf.get(t.checkpoint.id) === aFence + 1)).toBe(true);
  }, 120_000);

  it("a worker that passes its lease's signal to the graph stops too, and the history stays one line", async () => {
    const thread = `t-${crypto.randomUUID()}`;
    const { a } = await pausedWriter(thread, []);
    expect(a.lines.at(-1)).toMatchObject({ event: "stopped" });
    expect(["stale_fence", "lapsed", "lease_expired", "not_holder"]).toContain(a.lines.at(-1)!.code);
    const line = await history(thread);
    line.forEach((t, i) => expect(t.parentConfig?.configurable?.checkpoint_id).toBe(i === 0 ? undefined : line[i - 1]!.checkpoint.id));
    expect(line.at(-1)!.checkpoint.channel_values).toMatchObject({ log: ["plan by A", "draft by B", "review by B", "publish by B"] });
  });

  it("state far past the inline limit goes through R2 and comes back whole, through a real graph", async () => {
    const thread = `t-${crypto.randomUUID()}`;
    const big = "x".repeat(LIMITS.leaseDataInlineBytes * 4);
    const State = Annotation.Root({ notes: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const graph = (saver: BatonSaver) => new StateGraph(State)
      .addNode("write", async () => ({ notes: [big] })).addNode("more", async () => ({ notes: ["small"] }))
      .addEdge(START, "write").addEdge("write", "more").addEdge("more", END).compile({ checkpointer: saver });
    await withThreadLease(thread, (saver) => graph(saver).invoke({ notes: [] }, { configurable: { thread_id: thread }, durability: "sync" }), conn());
    const state = await graph(new BatonSaver(conn())).getState({ configurable: { thread_id: thread } });
    expect(state.values.notes).toEqual([big, "small"]);
    const session = await threadSession(thread);
    const sizes = [];
    for await (const item of listLeaseData(conn(), session, { prefix: "v/" })) sizes.push(item.bytes);
    expect(Math.max(...sizes)).toBeGreaterThan(LIMITS.leaseDataInlineBytes);
  });

  it("a saver writes a thread only under that thread's lease, and says so", async () => {
    const thread = `t-${crypto.randomUUID()}`;
    const cp = { v: 4, id: "1f000000-0000-6000-8000-000000000001", ts: new Date().toISOString(), channel_values: {}, channel_versions: {}, versions_seen: {} };
    const meta = { source: "input" as const, step: -1, parents: {} };
    await expect(new BatonSaver(conn()).put({ configurable: { thread_id: thread } }, cp, meta, {})).rejects.toThrow(/only under its lease/);
    await withThreadLease(`${thread}-other`, async (saver) => {
      await expect(saver.put({ configurable: { thread_id: thread } }, cp, meta, {})).rejects.toThrow(/holds the lease of .*-other/);
    }, conn());
    await expect(new BatonSaver(conn()).list({ configurable: {} }).next()).rejects.toThrow(/one thread at a time/);
  });

  it("a thread id that is no session name maps to a hashed session, stable and distinct", async () => {
    expect(await threadSession("user:42/chat")).toMatch(/^langgraph-[0-9a-f]{40}$/);
    expect(await threadSession("user:42/chat")).toBe(await threadSession("user:42/chat"));
    expect(await threadSession("user:43/chat")).not.toBe(await threadSession("user:42/chat"));
    expect(await threadSession("plain-id", "app")).toBe("app.plain-id");
  });

  it("the example runs the whole story in one command", async () => {
    const { code, output, history: told } = await demoStory();
    expect(code, output).toBe(0);
    expect(told).toMatchObject({ event: "history", linear: true, a_exit: 3, b_exit: 0 });
  }, 120_000);
});
