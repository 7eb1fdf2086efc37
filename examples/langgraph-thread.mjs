#!/usr/bin/env node
// Two workers run one LangGraph thread at once, and the thread does not fork. The demo starts
// worker A (it takes the thread's lease and runs plan, then stops inside draft: SIGSTOP, as a
// laptop lid closes or a VM is paused) and worker B (it waits for the lease, takes it once A's
// has expired, and finishes the graph from the last checkpoint). Then A wakes (SIGCONT) and
// finishes its draft: baton refuses its checkpoint write with a stale fence, and A stops. The
// thread's history is printed: one line of checkpoints, each the parent of the next.
//
//   BATON_URL=http://127.0.0.1:8787 node examples/langgraph-thread.mjs [THREAD] [--ttl SECONDS] [--json]
//
// `worker THREAD NAME [--gate FILE] [--ignore-signal] [--ttl SECONDS]` runs one worker (what the
// demo spawns). The thread's lease TTL is 2 s, so the demo is quick; on a busy machine a worker
// whose renewals take longer than that loses the lease ("lapsed") as it should, so give it more.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { BatonSaver, withThreadLease } from "baton-client/langgraph";

const url = process.env.BATON_URL ?? "http://127.0.0.1:8787";
const token = process.env.BATON_TOKEN ?? "baton-dev-token";
const args = process.argv.slice(2);
const ttlAt = args.indexOf("--ttl");
const TTL_SECONDS = ttlAt >= 0 ? Number(args[ttlAt + 1]) : 2;
const ttlArgs = ttlAt >= 0 ? ["--ttl", String(TTL_SECONDS)] : [];
const json = args.includes("--json");
const say = (event, text) => process.stdout.write(json ? `${JSON.stringify(event)}\n` : `${text}\n`);

/** plan → draft → review → publish; each node appends who ran it to the log. */
function graphOf(worker, gate) {
  const State = Annotation.Root({
    topic: Annotation(),
    log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  const node = (name) => async () => {
    say({ event: "node", node: name, worker }, `${worker}: running ${name}`);
    if (gate && name === "draft") while (!existsSync(gate)) await new Promise((r) => setTimeout(r, 20));
    return { log: [`${name} by ${worker}`] };
  };
  return new StateGraph(State)
    .addNode("plan", node("plan")).addNode("draft", node("draft")).addNode("review", node("review")).addNode("publish", node("publish"))
    .addEdge(START, "plan").addEdge("plan", "draft").addEdge("draft", "review").addEdge("review", "publish").addEdge("publish", END);
}

/** One worker: holds the thread's lease (waiting while another worker does) and runs the graph from where the thread is. */
async function worker(thread, name, gate, ignoreSignal) {
  const onEvent = (e) => e.type === "waiting" && say({ event: "waiting", worker: name }, `${name}: waiting for the thread's lease`);
  try {
    const log = await withThreadLease(thread, async (saver, lease) => {
      say({ event: "acquired", worker: name, fence: lease.fence }, `${name}: holds the thread under fence ${lease.fence}`);
      const graph = graphOf(name, gate).compile({ checkpointer: saver });
      const config = { configurable: { thread_id: thread }, durability: "sync", ...(ignoreSignal ? {} : { signal: lease.signal }) };
      const fresh = (await saver.getTuple(config)) === undefined;
      const state = await graph.invoke(fresh ? { topic: "fenced checkpoints" } : null, config);
      return state.log;
    }, { url, token, ttlSeconds: TTL_SECONDS, wait: true, onEvent });
    say({ event: "done", worker: name, log }, `${name}: finished: ${log.join(", ")}`);
  } catch (err) {
    say({ event: "stopped", worker: name, code: err.code ?? null, message: err.message }, `${name}: stopped: ${err.message}`);
    process.exit(3);
  }
}

/** The thread's checkpoints, oldest first, each with its parent. */
async function history(thread) {
  const saver = new BatonSaver({ url, token });
  const all = [];
  for await (const t of saver.list({ configurable: { thread_id: thread, checkpoint_ns: "" } })) {
    all.push({ id: t.checkpoint.id, parent: t.parentConfig?.configurable?.checkpoint_id ?? null, step: t.metadata?.step, log: t.checkpoint.channel_values.log ?? [] });
  }
  return all.reverse();
}

function spawnWorker(thread, name, extra, onLine) {
  const proc = spawn(process.execPath, [process.argv[1], "worker", thread, name, ...extra, ...ttlArgs, "--json"], { stdio: ["ignore", "pipe", "inherit"] });
  let buffer = "";
  proc.stdout.on("data", (d) => {
    buffer += d;
    const lines = buffer.split("\n");
    buffer = lines.pop();
    for (const l of lines) if (l) onLine(JSON.parse(l));
  });
  return { proc, exited: new Promise((r) => proc.on("exit", (code) => r(code))) };
}

async function demo(thread) {
  const gate = join(mkdtempSync(join(tmpdir(), "baton-lg-")), "go");
  const seen = [];
  const waiters = [];
  const onLine = (line) => {
    say(line, `  [${line.worker}] ${line.event}${line.node ? ` ${line.node}` : ""}${line.code ? ` (${line.code})` : ""}`);
    seen.push(line);
    for (const w of waiters.splice(0)) if (!w(line)) waiters.push(w);
  };
  const until = (pick) => new Promise((r) => (seen.some(pick) ? r() : waiters.push((l) => (pick(l) ? (r(), true) : false))));
  const a = spawnWorker(thread, "A", ["--gate", gate, "--ignore-signal"], onLine);
  await until((l) => l.worker === "A" && l.event === "node" && l.node === "draft");
  const b = spawnWorker(thread, "B", [], onLine);
  a.proc.kill("SIGSTOP");
  say({ event: "paused", worker: "A" }, `A paused (SIGSTOP) inside draft; its lease expires in ${TTL_SECONDS} s`);
  const bCode = await b.exited;
  writeFileSync(gate, "");
  a.proc.kill("SIGCONT");
  say({ event: "resumed", worker: "A" }, "A resumed (SIGCONT): it finishes draft and writes");
  const aCode = await a.exited;
  const line = await history(thread);
  const linear = line.every((c, i) => c.parent === (i === 0 ? null : line[i - 1].id));
  say({ event: "history", checkpoints: line, linear, a_exit: aCode, b_exit: bCode },
    `history of ${thread}: ${line.length} checkpoints, ${linear ? "one line" : "FORKED"}; final log: ${line.at(-1)?.log.join(", ")}`);
  process.exit(linear && aCode === 3 && bCode === 0 ? 0 : 1);
}

if (args[0] === "worker") {
  const gateAt = args.indexOf("--gate");
  await worker(args[1], args[2], gateAt >= 0 ? args[gateAt + 1] : null, args.includes("--ignore-signal"));
} else {
  await demo(args.find((a, i) => !a.startsWith("--") && i !== ttlAt + 1) ?? `thread-${Date.now().toString(36)}`);
}
