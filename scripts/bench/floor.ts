// Starts the floor probe (scripts/bench/floor: one tiny Durable Object) under its own
// `wrangler dev` on free loopback ports, from the same tree the benchmark measures.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, isPortLost, PortLost, retryLostPort } from "../../test/e2e/wrangler-dev.ts";

export interface FloorServer {
  url: string;
  stop(): Promise<void>;
}

/** A port found free can be taken before wrangler binds it: then it starts again on new ports. */
export function startFloor(root: string, timeoutMs = 60_000): Promise<FloorServer> {
  return retryLostPort(() => startFloorOnce(root, timeoutMs));
}

async function startFloorOnce(root: string, timeoutMs: number): Promise<FloorServer> {
  const [port, inspector] = [await freePort(), await freePort()];
  const persistDir = mkdtempSync(join(tmpdir(), "baton-bench-floor-"));
  const proc = spawn(join(root, "node_modules/.bin/wrangler"), [
    "dev", "-c", "scripts/bench/floor/wrangler.toml", "--ip", "127.0.0.1", "--port", String(port),
    "--inspector-port", String(inspector), "--persist-to", persistDir, "--log-level", "warn",
    "--show-interactive-dev-session=false",
  ], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const exited = new Promise((r) => proc.once("exit", r));
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid!, sig);
    } catch {
      // already gone
    }
  };
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      signal("SIGTERM");
      const timer = setTimeout(() => signal("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(persistDir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // wrangler may print that it lost a port and go on running, serving nothing of ours.
    if (proc.exitCode !== null || isPortLost(out)) {
      const failure = `floor wrangler dev exited ${proc.exitCode ?? "(stopped)"}:\n${out}`;
      await stop();
      throw isPortLost(out) ? new PortLost(failure) : new Error(failure);
    }
    try {
      if ((await fetch(`${url}/health`)).ok) return { url, stop };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`floor wrangler dev did not answer within ${timeoutMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
