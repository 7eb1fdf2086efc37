#!/usr/bin/env node
// Recoverable work, not only recoverable ownership: an agent whose expensive LLM call is a
// durable step and whose payment is an effect with an idempotency key. The demo starts two
// runners of one agent, kills the one running the message with SIGKILL right after it paid, and
// shows that the successor replays the LLM answer and the receipt: one LLM call, one charge.
//
//   BATON_URL=http://127.0.0.1:8787 node examples/durable-agent.mjs demo [AGENT]   (the demo)
//   node examples/durable-agent.mjs run AGENT LEDGER                                (one runner)
//
// LEDGER is a file standing in for the outside world: the LLM provider's bill and the payment
// API, one JSON line per call. Prints one JSON line per demo step with --json.
import { spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serve } from "baton-client";

const url = process.env.BATON_URL ?? "http://127.0.0.1:8787";
const token = process.env.BATON_TOKEN ?? "baton-dev-token";
const [mode, agentArg, ledgerArg] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const json = process.argv.includes("--json");

/** The slow, paid call: a second of "thinking", billed once per call. */
async function llm(prompt, ledger, signal) {
  appendFileSync(ledger, `${JSON.stringify({ call: "llm", pid: process.pid })}\n`);
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 1000);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
  return `a plan for "${prompt}"`;
}

/** The payment API: it honours idempotency keys, as real ones do, and bills once per key. */
function charge(key, ledger) {
  appendFileSync(ledger, `${JSON.stringify({ call: "charge", key, pid: process.pid })}\n`);
  return { receipt: `r-${key.split(":").slice(-2).join("-")}` };
}

function runner(agent, ledger) {
  const handle = serve(agent, async (message, ctx) => {
    const plan = await ctx.step("plan", () => llm(message.text, ledger, ctx.signal));
    const { receipt } = await ctx.effect("charge", ({ key }) => charge(key, ledger));
    await ctx.heartbeat({ stage: "charged", receipt });
    // The first attempt stops here long enough to be killed: the demo's crash point.
    if (message.attempt === 1) await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
    return `${plan}; paid, ${receipt}`;
  }, { url, token, machine: `${hostname()}-${process.pid}` });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => void handle.stop());
  return handle.done;
}

function say(name, facts, sentence) {
  process.stdout.write(json ? `${JSON.stringify({ step: name, ...facts })}\n` : `${sentence}\n`);
}

async function http(method, path, body) {
  const res = await fetch(`${url}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

const ledgerLines = (ledger) => {
  try {
    return readFileSync(ledger, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  } catch {
    return [];
  }
};

async function until(check, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function demo(agent) {
  const ledger = join(mkdtempSync(join(tmpdir(), "baton-durable-")), "ledger.jsonl");
  const self = fileURLToPath(import.meta.url);
  const start = () => spawn(process.execPath, [self, "run", agent, ledger], { stdio: ["ignore", "ignore", "inherit"] });
  const runners = [start()];
  await until(async () => (await http("GET", `/agents/${agent}/presence`)).holder, "the first runner to hold the lease");
  runners.push(start());
  await until(async () => (await http("GET", `/agents/${agent}/presence`)).serve_standbys === 1, "the second runner to stand by");
  const { id } = await http("POST", `/agents/${agent}/messages`, { text: "refund order 42" });
  // The heartbeat's progress says the charge's outcome is recorded: kill it there (a kill between
  // the charge and its record would leave the outcome unknown, and the message would wait for a person).
  await until(async () => (await http("GET", `/agents/${agent}/messages/${id}`)).progress?.stage === "charged", "the first runner to pay");
  const paid = ledgerLines(ledger).find((l) => l.call === "charge");
  say("paid", { pid: paid.pid, key: paid.key }, `runner ${paid.pid} called the LLM and paid (key ${paid.key}); killing it with SIGKILL`);
  runners.find((r) => r.pid === paid.pid).kill("SIGKILL");
  const done = await until(async () => {
    const m = await http("GET", `/agents/${agent}/messages/${id}`);
    return m.status === "acknowledged" || m.status === "failed" ? m : null;
  }, "the successor to finish");
  const calls = ledgerLines(ledger);
  const facts = {
    status: done.status, attempts: done.attempts, reply: done.reply,
    llm_calls: calls.filter((c) => c.call === "llm").length, charges: calls.filter((c) => c.call === "charge").length,
    steps: done.steps.map((s) => `${s.name}:${s.status}@${s.attempt}`),
  };
  say("finished", facts, `attempt ${done.attempts} replied "${done.reply}"; LLM calls: ${facts.llm_calls}, charges: ${facts.charges} (steps ${facts.steps.join(", ")})`);
  for (const r of runners) r.kill("SIGTERM");
  return facts.status === "acknowledged" && facts.llm_calls === 1 && facts.charges === 1 ? 0 : 1;
}

if (mode === "run" && agentArg && ledgerArg) {
  await runner(agentArg, ledgerArg);
} else if (mode === "demo") {
  process.exitCode = await demo(agentArg ?? `durable-${Math.random().toString(36).slice(2, 8)}`);
} else {
  process.stderr.write("usage: durable-agent.mjs demo [AGENT] | run AGENT LEDGER\n");
  process.exitCode = 2;
}
