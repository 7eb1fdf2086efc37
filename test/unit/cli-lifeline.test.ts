// A run's whole tree stops with it: every survivor gets SIGKILL after the grace whatever the
// command itself did, a process that left the group and the session (setsid) is found by its
// lifeline mark, and when the process holding the lifeline is SIGKILLed its runs die with it.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startRun } from "../../cli/lib/runner.ts";

const linux = process.platform === "linux";
/** Starts (in the background) a sleep in a session of its own that prints its pid; its parent exits at once. */
const escape = (seconds: number): string => `sh -c "setsid sh -c 'echo \\$\\$; exec sleep ${seconds} >/dev/null 2>&1' &"`;
const leftovers: number[] = [];
afterEach(() => leftovers.splice(0).forEach((pid) => signal(pid, "SIGKILL")));

describe("a run's tree", () => {
  it("a grandchild that ignores SIGTERM (writing to a file, not the pipe) is SIGKILLed after the grace, though the command itself exited at SIGTERM", async () => {
    // Its pid is printed once it ignores SIGTERM (a mark file): a SIGTERM before its trap would kill it at once.
    const mark = join(mkdtempSync(join(tmpdir(), "baton-lifeline-")), "trapped");
    const { run, pids } = startPrinting(
      `sh -c 'trap "" TERM; : > ${mark}; while :; do sleep 0.05; done' >/dev/null 2>&1 & until [ -e ${mark} ]; do sleep 0.01; done; echo $!; trap 'exit 0' TERM; wait`,
    );
    const [stubborn] = await pids;
    const t0 = performance.now();
    await run.kill(300);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    await expect.poll(() => live(stubborn!), { timeout: 3000, interval: 20 }).toBe(false);
  });

  it.runIf(linux)("a kill reaches a process that left the group and the session (setsid) after its parent exited", async () => {
    const { run, pids } = startPrinting(`${escape(301)}; sleep 300`);
    const [escaped] = await pids;
    await expect.poll(() => sessionOf(escaped!), { timeout: 3000, interval: 20 }).toBe(escaped);
    expect(live(escaped!)).toBe(true);
    await run.kill(1000);
    await expect.poll(() => live(escaped!), { timeout: 3000, interval: 20 }).toBe(false);
  });

  it("what a command leaves running when it exits by itself is stopped, and `gone` resolves after", async () => {
    const { run, pids } = startPrinting(`sleep 300 >/dev/null 2>&1 & echo $!`);
    const [left] = await pids;
    expect((await run.done).code).toBe(0);
    await run.gone;
    expect(live(left!)).toBe(false);
  });
});

describe("the lifeline", () => {
  it.runIf(linux)("SIGKILL of the process that started a run kills the run's tree, the process that escaped with setsid included", async () => {
    const script = `${escape(302)}; sleep 303 >/dev/null 2>&1 & echo $! $$; wait`;
    const holder = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "lifeline-holder.ts"), script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    holder.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
    await expect.poll(() => out.trim().split(/\s+/).length, { timeout: 20_000, interval: 20 }).toBe(3);
    const pids = out.trim().split(/\s+/).map(Number);
    leftovers.push(...pids);
    const watched = pids;
    expect(watched.every(live)).toBe(true);
    const t0 = performance.now();
    holder.kill("SIGKILL");
    await expect.poll(() => watched.some(live), { timeout: 3000, interval: 5 }).toBe(false);
    const gapMs = performance.now() - t0;
    console.log(`lifeline: the run's tree was gone ${gapMs.toFixed(0)} ms after SIGKILL of its holder`);
    expect(gapMs).toBeLessThan(1000);
  });
});

function startPrinting(script: string) {
  let first: (chunk: string) => void = () => {};
  const pids = new Promise<number[]>((resolve) => (first = (c) => resolve(c.trim().split(/\s+/).map(Number))));
  const run = startRun({ command: "/bin/sh", args: ["-c", script], stdin: "", env: {}, leftoverGraceMs: 300, onStdout: (c) => first(c) });
  void pids.then((p) => leftovers.push(...p));
  return { run, pids };
}

/** Alive and not a zombie (PID 1 here may not reap what it adopts). */
function live(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

function sessionOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone
  }
}
