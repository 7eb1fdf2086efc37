// The runner: one child per message, stdin and env in, stdout out; kill is SIGTERM, then SIGKILL
// after the grace, and reaches what the command spawned.
import { describe, expect, it } from "vitest";
import { pidAlive } from "../../cli/lib/local-lock.ts";
import { startRun } from "../../cli/lib/runner.ts";

const node = process.execPath;

describe("startRun", () => {
  it("feeds the message on stdin, passes env vars and collects stdout", async () => {
    const run = startRun({
      command: node,
      args: ["-e", "let t='';process.stdin.on('data',d=>t+=d).on('end',()=>process.stdout.write(`${process.env.BATON_MESSAGE_ID}:${t.toUpperCase()}`))"],
      stdin: "hello",
      env: { BATON_MESSAGE_ID: "7" },
    });
    expect(await run.done).toEqual({ stdout: "7:HELLO", code: 0, signal: null, killed: false, stderrTail: "" });
  });

  it("a command that exits on SIGTERM is gone at once", async () => {
    const { run, output } = startWithOutput(["-e", "setInterval(()=>{},1000); console.log('up')"]);
    await output;
    const t0 = performance.now();
    const outcome = await run.kill(5000);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(outcome).toMatchObject({ signal: "SIGTERM", killed: true });
  });

  it("a command that ignores SIGTERM gets SIGKILL after the grace period", async () => {
    const { run, output } = startWithOutput(["-e", "process.on('SIGTERM',()=>{}); setInterval(()=>{},1000); console.log('up')"]);
    await output;
    const t0 = performance.now();
    const outcome = await run.kill(300);
    const elapsed = performance.now() - t0;
    expect(outcome).toMatchObject({ signal: "SIGKILL", killed: true });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(3000);
  });

  it("the kill reaches grandchildren in the command's process group", async () => {
    const { run, output } = startWithOutput(["-c", "sleep 30 & echo $!; wait"], "/bin/sh");
    const grandchild = Number((await output).trim());
    expect(pidAlive(grandchild)).toBe(true);
    const t0 = performance.now();
    await run.kill(1000);
    expect(performance.now() - t0).toBeLessThan(3000);
    await expect.poll(() => pidAlive(grandchild), { timeout: 2000 }).toBe(false);
  });

  it("a command that cannot start reports why", async () => {
    const outcome = await startRun({ command: "/nonexistent/baton-cmd", args: [], stdin: "", env: {} }).done;
    expect(outcome.spawnError).toMatch(/ENOENT/);
  });
});

/** Starts a run and resolves with its first stdout chunk, so a kill never races the start-up. */
function startWithOutput(args: string[], command = node) {
  let first: (chunk: string) => void = () => {};
  const output = new Promise<string>((resolve) => (first = resolve));
  const run = startRun({ command, args, stdin: "", env: {}, onStdout: (chunk) => first(chunk) });
  return { run, output };
}
