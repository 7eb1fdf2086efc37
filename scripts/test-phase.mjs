// One phase of the test suite: a shell command in its own process group, bounded by wall clock.
// A run that hangs is killed with everything it started, also the processes that left its group
// (wrangler dev runs detached), and is run once more, unless it had already reported a failing
// test: a run with failures is never retried. Ctrl-C or SIGTERM to the suite stops them too.
// As a script: node scripts/test-phase.mjs <limit-ms> [--retry-on-hang] -- <command>
import { execFileSync, spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Where scripts/failure-flag-reporter.mjs marks a run that had a failing test. */
export const FAILURE_FLAG_ENV = "BATON_TEST_FAILURE_FLAG";
export const TIMEOUT_CODE = 124;

const running = new Set();

/** A process and all its descendants, by parent links (a detached child keeps its parent). */
function processTree(root) {
  const children = new Map();
  try {
    for (const line of execFileSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" }).split("\n")) {
      const [pid, ppid] = line.trim().split(/\s+/).map(Number);
      if (!pid) continue;
      children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    }
  } catch {
    // no ps: the process group alone
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/** Kills the child's process group and every descendant, found before any of them dies and is re-parented. */
function killTree(child) {
  const tree = processTree(child.pid);
  for (const target of [-child.pid, ...tree]) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Kills every phase still running, with everything each started (the suite stops at a failure). */
export function stopAll() {
  for (const child of running) killTree(child);
  running.clear();
}

function onSignal(signal) {
  stopAll();
  process.exit(signal === "SIGINT" ? 130 : 143);
}
process.once("SIGINT", onSignal);
process.once("SIGTERM", onSignal);

/**
 * Runs cmd in its own process group; resolves to its exit code, or "timeout" after killing it all.
 * With `log`, its output goes to that file instead of this terminal (a phase running beside another).
 */
function runBounded(cmd, limitMs, env, log, cpuFile) {
  console.log(`$ ${cmd}${log ? ` (output in ${log})` : ""}`);
  return new Promise((resolve) => {
    const out = log ? openSync(log, "a") : null;
    const stdio = out === null ? "inherit" : ["ignore", out, out];
    // GNU time adds up the CPU of every process the command waited for (a detached wrangler dev's
    // workerd, killed with its group, may escape the count).
    const child = cpuFile
      ? spawn("/usr/bin/time", ["-q", "-f", "%U %S", "-o", cpuFile, "sh", "-c", cmd], { stdio, detached: true, env })
      : spawn(cmd, { stdio, shell: true, detached: true, env });
    if (out !== null) closeSync(out);
    running.add(child);
    const timer = setTimeout(() => {
      console.error(`\n!! ${cmd} still running after ${(limitMs / 1000).toFixed(0)} s: killing it`);
      killTree(child);
      running.delete(child);
      resolve("timeout");
    }, limitMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      // Whatever it left in its group must not hold the suite's output open.
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // the group is empty
      }
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

/**
 * Runs one phase; resolves to its exit code (TIMEOUT_CODE when it hung, also when run again).
 * `log`: a file that takes its output (see runBounded); `cpuFile`: where GNU time, when installed,
 * writes the user and system CPU seconds the command used ("12.34 5.67").
 */
export async function phase(cmd, limitMs, { retryOnHang = false, log, cpuFile } = {}) {
  if (cpuFile && !existsSync("/usr/bin/time")) cpuFile = undefined;
  const flagDir = mkdtempSync(join(tmpdir(), "baton-test-phase-"));
  const flag = join(flagDir, "failed");
  // Not a terminal (CI, a log file): no colour codes in what the runs print.
  const plain = process.stdout.isTTY ? {} : { NO_COLOR: "1", FORCE_COLOR: "0" };
  const env = { ...process.env, ...plain, [FAILURE_FLAG_ENV]: flag };
  try {
    let result = await runBounded(cmd, limitMs, env, log, cpuFile);
    if (result === "timeout" && retryOnHang) {
      if (existsSync(flag)) {
        console.error(`!! ${cmd} had reported failing tests before it hung: not running it again`);
        return 1;
      }
      console.error(`!! running ${cmd} once more after a hang`);
      result = await runBounded(cmd, limitMs, env, log, cpuFile);
    }
    return result === "timeout" ? TIMEOUT_CODE : result;
  } finally {
    rmSync(flagDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const dashes = args.indexOf("--");
  const limitMs = Number(args[0]);
  if (dashes < 0 || !(limitMs > 0)) {
    console.error("usage: node scripts/test-phase.mjs <limit-ms> [--retry-on-hang] -- <command>");
    process.exit(2);
  }
  const code = await phase(args.slice(dashes + 1).join(" "), limitMs, { retryOnHang: args.slice(1, dashes).includes("--retry-on-hang") });
  process.exit(code);
}
