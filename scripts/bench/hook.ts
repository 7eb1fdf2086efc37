// Claude Code's hook: from a person's answer to the decision on the hook's stdout. Each trial runs
// `baton hook claude-code` as Claude Code does (a PreToolUse input on stdin, a fresh tool call id),
// waits until it says it asked, then times from the approve POST (what the dashboard's button
// sends) to a whole JSON line on the hook's stdout. The hook checks for the answer every 250 ms,
// so about half of that is the expected wait; the POST's own round trip is shown beside it.
import { spawn } from "node:child_process";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { PRE_TOOL_USE } from "../../test/unit/claude-code-hook-inputs.ts";
import { fmt, markdownTable, percentile } from "./stats.ts";

const WAIT_MS = 20_000;

interface Sample {
  /** From the approve POST's start to the allow JSON on stdout. */
  total: number;
  /** The approve POST's round trip. */
  post: number;
  /** From starting the hook to its question posted (Node start + one POST). */
  asked: number;
}

function timeout<T>(what: string, p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT_MS).unref())]);
}

async function trial(url: string, cli: string, agent: string, n: number): Promise<Sample> {
  const started = performance.now();
  const hook = spawn(process.execPath, [cli, "hook", "claude-code", "--agent", agent, "--deadline", "60"], {
    env: { ...process.env, BATON_URL: url, BATON_TOKEN: DEV_TOKEN }, stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const asked = new Promise<number>((resolve, reject) => {
    hook.stderr!.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
      const m = /\(message (\d+)\)/.exec(stderr);
      if (m) resolve(Number(m[1]));
    });
    hook.once("exit", () => reject(new Error(`the hook exited without asking: ${stderr.trim()}`)));
  });
  const printed = new Promise<number>((resolve) => {
    hook.stdout!.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
      if (stdout.endsWith("\n")) resolve(performance.now());
    });
  });
  hook.stdin!.end(JSON.stringify({ ...PRE_TOOL_USE, session_id: `bench-${process.pid}`, tool_use_id: `toolu_bench_${process.pid}_${n}` }));
  const id = await timeout("the hook's question", asked);
  const askedAt = performance.now();
  const start = performance.now();
  const res = await fetch(`${url}/agents/${agent}/messages/${id}/approve`, {
    method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: "{}",
  });
  const post = performance.now() - start;
  if (res.status !== 200) throw new Error(`approve answered ${res.status}: ${await res.text()}`);
  const end = await timeout("the hook's decision", printed);
  const decision = (JSON.parse(stdout) as { hookSpecificOutput?: { permissionDecision?: string } }).hookSpecificOutput?.permissionDecision;
  if (decision !== "allow") throw new Error(`the hook printed ${stdout.trim()}`);
  return { total: end - start, post, asked: askedAt - started };
}

/** Runs `trials` hook runs against the coordinator at `url` with the CLI at `cli`; returns the report's section. */
export async function runHook(url: string, cli: string, trials: number): Promise<string> {
  const agent = `bench-hook-${process.pid}`;
  const samples: Sample[] = [];
  let failures = 0;
  await trial(url, cli, agent, -1); // warm-up, not recorded: the first question compiles the routes
  for (let i = 0; i < trials; i++) {
    try {
      samples.push(await trial(url, cli, agent, i));
    } catch (e) {
      failures += 1;
      console.error(`  hook trial ${i}: ${(e as Error).message}`);
    }
  }
  console.log("  hook: done");
  const row = (label: string, values: number[]) => [label, fmt(percentile(values, 50)), fmt(percentile(values, 99)), fmt(Math.min(...values)), fmt(Math.max(...values))];
  const table = markdownTable(["Claude Code hook (ms)", "p50", "p99", "min", "max"], [
    row("a person's approve POST started → the allow JSON on the hook's stdout", samples.map((s) => s.total)),
    row("the approve POST's own round trip", samples.map((s) => s.post)),
    row("the hook started → its question posted (Node start + one POST)", samples.map((s) => s.asked)),
  ]);
  return `### Claude Code's hook: from a person's answer to the decision on stdout

${samples.length} trials${failures ? `, ${failures} failed` : ""}. \`baton hook claude-code\` is fed a PreToolUse input with a fresh tool call id; once its question is posted, the approve POST (what the dashboard's Approve sends) starts the clock, and a whole \`allow\` JSON line on the hook's stdout stops it. The hook checks for the answer every 250 ms, so a p50 near half of that plus a round trip is the expected figure.

${table}
`;
}
