// Cancel latency: `baton serve` runs a command that leaves a process tree (its shell, a child
// shell and that child's background grandchild, all sleeping); each trial starts `baton cancel`
// and times until every pid of the tree is gone (and the message reads `cancelled`). The split
// says where the time goes: the cancel command itself (a Node start and one HTTP round trip) and
// what follows its answer (the cancel frame, SIGTERM to the process group, the exits).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { alive, killLeftovers, treeCommand, treePids } from "../../test/e2e/process-tree-fixture.ts";
import { fmt, markdownTable, percentile } from "./stats.ts";

const WAIT_MS = 20_000;
const POLL_MS = 2;

interface Sample {
  /** From starting `baton cancel` to every pid of the tree gone. */
  total: number;
  /** From starting `baton cancel` to its exit. */
  command: number;
}

async function until<T>(what: string, probe: () => T | null | Promise<T | null>, pollMs = 10): Promise<T> {
  const deadline = performance.now() + WAIT_MS;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

function headers(): Record<string, string> {
  return { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };
}

async function trial(url: string, cli: string, agent: string, dir: string): Promise<Sample> {
  const posted = await fetch(`${url}/agents/${agent}/messages`, { method: "POST", headers: headers(), body: JSON.stringify({ text: "long" }) });
  const { id } = (await posted.json()) as { id: number };
  const pids = await until(`message ${id}'s tree`, () => treePids(dir, id));
  const start = performance.now();
  const cancel = spawn(process.execPath, [cli, "cancel", agent, String(id), "--reason", "bench"], {
    env: { ...process.env, BATON_URL: url, BATON_TOKEN: DEV_TOKEN }, stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  cancel.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const exited = new Promise<number>((resolve) => cancel.once("exit", (code) => resolve(code === 0 ? performance.now() : -1)));
  await until("the tree gone", () => (pids.some(alive) ? null : true), POLL_MS);
  const total = performance.now() - start;
  const commandEnd = await exited;
  if (commandEnd < 0) throw new Error(`baton cancel failed: ${stderr.trim()}`);
  const view = (await (await fetch(`${url}/agents/${agent}/messages/${id}`, { headers: headers() })).json()) as { status: string };
  if (view.status !== "cancelled") throw new Error(`message ${id} is ${view.status}, not cancelled`);
  return { total, command: commandEnd - start };
}

/** Runs `trials` cancels against one `baton serve` of the CLI at `cli`; returns the report's section. */
export async function runCancel(url: string, cli: string, trials: number): Promise<string> {
  const agent = `bench-cancel-${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), "baton-bench-cancel-"));
  const serve: ChildProcess = spawn(process.execPath, [cli, "serve", agent, "--machine", "bench", "--grace", "1", "--", treeCommand(dir)], {
    env: { ...process.env, BATON_URL: url, BATON_TOKEN: DEV_TOKEN, BATON_LOCK_DIR: join(dir, "lock"), BATON_STATE_DIR: join(dir, "state"), PIDS: dir },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let serveErr = "";
  serve.stderr!.setEncoding("utf8").on("data", (c: string) => (serveErr += c));
  const samples: Sample[] = [];
  let failures = 0;
  try {
    await until("baton serve to hold the lease", () => (/holder/.test(serveErr) ? true : null));
    await trial(url, cli, agent, dir); // warm-up, not recorded: the first cancel compiles the route
    for (let i = 0; i < trials; i++) {
      try {
        samples.push(await trial(url, cli, agent, dir));
      } catch (e) {
        failures += 1;
        console.error(`  cancel trial ${i}: ${(e as Error).message}`);
      }
    }
  } finally {
    serve.kill("SIGTERM");
    killLeftovers(dir);
    rmSync(dir, { recursive: true, force: true });
  }
  console.log("  cancel: done");
  const row = (label: string, values: number[]) => [label, fmt(percentile(values, 50)), fmt(percentile(values, 99)), fmt(Math.min(...values)), fmt(Math.max(...values))];
  const table = markdownTable(["cancel (ms)", "p50", "p99", "min", "max"], [
    row("`baton cancel` started → the whole tree gone", samples.map((s) => s.total)),
    row("`baton cancel` started → it exited (Node start + one request)", samples.map((s) => s.command)),
    row("the tree gone minus the command's own exit", samples.map((s) => s.total - s.command)),
  ]);
  return `### Cancel: from \`baton cancel\` to the command's process tree gone

${samples.length} trials${failures ? `, ${failures} failed` : ""}. \`baton serve --grace 1\` runs a command whose shell starts a child shell that starts a background grandchild; every pid of the three must be gone (a zombie counts as gone) and the message read \`cancelled\`. The goal is a p99 under one second on a quiet machine.

${table}
`;
}
