// scripts/test-phase.mjs as a real process over stand-in runs: a hung run is killed with what it
// started (also processes in their own group), retried only when it reported no failing test, and
// Ctrl-C stops it all; phases side by side (scripts/test.mjs) keep their output in a file, and the
// first that fails stops the others with what they started.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without type declarations
import { phase as inProcessPhase, stopAll } from "../../scripts/test-phase.mjs";

const ROOT = resolve(import.meta.dirname, "../..");
const PHASE = join(ROOT, "scripts/test-phase.mjs");
const CHILD = join(ROOT, "test/fixtures/phase/child.mjs");
const REPORTER = join(ROOT, "scripts/failure-flag-reporter.mjs");

function scratch() {
  const dir = mkdtempSync(join(tmpdir(), "baton-phase-test-"));
  return { runs: join(dir, "runs"), pidfile: join(dir, "pid") };
}

function runCount(file: string): number {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0;
}

/** Alive and not a zombie (a container's init may never reap it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs test-phase.mjs as a script; its status and what it wrote. Async, so the file's waits for hangs overlap. */
function phase(limitMs: number, flags: string[], command: string, env: Record<string, string>) {
  return run(process.execPath, [PHASE, String(limitMs), ...flags, "--", command], env);
}

function run(file: string, args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const proc = spawn(file, args, { cwd: ROOT, env: { ...process.env, ...env } });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d) => (stdout += d));
  proc.stderr.on("data", (d) => (stderr += d));
  return new Promise((done) => proc.once("close", (status) => done({ status, stdout, stderr })));
}

// Concurrent: each test waits out a hang limit of its own; the one that stops every in-process
// phase (stopAll) starts no other, and the others are processes of their own.
describe.concurrent("scripts/test-phase.mjs", () => {
  it("a run whose output is not a terminal is told to print no colour codes", async () => {
    const r = await phase(10_000, [], `node -e "console.log('colour=' + process.env.NO_COLOR + '/' + process.env.FORCE_COLOR)"`, {});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("colour=1/0");
  });

  it("kills a hung run with the processes it started in their own group, and fails with 124", async () => {
    const s = scratch();
    const r = await phase(1500, [], `node ${CHILD} detach-and-hang`, { RUNS: s.runs, PIDFILE: s.pidfile });
    expect(r.status).toBe(124);
    const orphan = Number(readFileSync(s.pidfile, "utf8"));
    await until("the detached process to be gone", () => !alive(orphan));
  });

  it("runs a hung run once more when it reported no failing test", async () => {
    const s = scratch();
    const r = await phase(1500, ["--retry-on-hang"], `node ${CHILD} hang`, { RUNS: s.runs });
    expect(r.status).toBe(124);
    expect(runCount(s.runs)).toBe(2);
  });

  it("never runs again a run that had reported a failing test and then hung", async () => {
    const s = scratch();
    const r = await phase(1500, ["--retry-on-hang"], `node ${CHILD} fail-and-hang`, { RUNS: s.runs });
    expect(r.stderr).toContain("had reported failing tests before it hung");
    expect(r.status).toBe(1);
    expect(runCount(s.runs)).toBe(1);
  });

  it("the failure-flag reporter marks a vitest run with a failing test", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-flag-test-"));
    const flag = join(dir, "failed");
    const r = await run("npx", ["vitest", "run", "-c", "test/fixtures/phase/vitest.config.mjs", "--reporter=default", `--reporter=${REPORTER}`], { BATON_TEST_FAILURE_FLAG: flag });
    expect(r.status).toBe(1);
    expect(existsSync(flag)).toBe(true);
  });

  it("Ctrl-C stops the run and the processes it started in their own group", async () => {
    const s = scratch();
    const proc = spawn(process.execPath, [PHASE, "60000", "--", `node ${CHILD} detach-and-hang`], {
      cwd: ROOT, env: { ...process.env, RUNS: s.runs, PIDFILE: s.pidfile }, stdio: "ignore",
    });
    const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
    await until("the run to start its detached process", () => existsSync(s.pidfile) && readFileSync(s.pidfile, "utf8").endsWith("\n"));
    const orphan = Number(readFileSync(s.pidfile, "utf8"));
    proc.kill("SIGINT");
    expect(await exited).toBe(130);
    await until("the detached process to be gone", () => !alive(orphan));
  });

  it("a phase beside another writes its output to its log file, and stopAll stops it with what it started", async () => {
    const s = scratch();
    const log = join(mkdtempSync(join(tmpdir(), "baton-phase-log-")), "side.log");
    expect(await inProcessPhase(`node -e "console.log('to the log')"`, 10_000, { log })).toBe(0);
    expect(readFileSync(log, "utf8")).toBe("to the log\n");
    const running = inProcessPhase(`RUNS=${s.runs} PIDFILE=${s.pidfile} node ${CHILD} detach-and-hang`, 60_000, { log }) as Promise<number>;
    await until("the run to start its detached process", () => existsSync(s.pidfile) && readFileSync(s.pidfile, "utf8").endsWith("\n"));
    const orphan = Number(readFileSync(s.pidfile, "utf8"));
    stopAll();
    expect(await running).not.toBe(0);
    await until("the detached process to be gone", () => !alive(orphan));
  });
});
