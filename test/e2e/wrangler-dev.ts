// Starts a real `wrangler dev` on free loopback ports for end-to-end tests, benchmarks and chaos
// runs, and stops it again. State persists to the given directory, so a restart keeps it.
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../..");
export const DEV_TOKEN = "baton-dev-token";

export interface DevServer {
  url: string;
  port: number;
  persistDir: string;
  proc: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
  /** kill -9 of wrangler dev and its workerd: a crash, nothing shut down cleanly. */
  crash(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolvePort(typeof addr === "object" && addr ? addr.port : 0));
    });
  });
}

export interface DevOptions {
  /** Added to BATON_TEST_CLOCK=true, which lets tests move objects' clocks (advanceClock). */
  vars?: Record<string, string>;
  persistDir?: string;
  port?: number;
  timeoutMs?: number;
  /** The checkout to run (default: this one), e.g. a previous release's for an upgrade test. */
  root?: string;
  /** Where the HTTP port comes from when `port` is not given (default: a port free right now). */
  pickPort?: () => Promise<number>;
}

/** How many times a start-up that lost its port to another process is tried again, on other ports. */
const PORT_ATTEMPTS = 5;

/**
 * Resolves once the Worker answers HTTP; rejects with wrangler's output if it does not start. A
 * port found free can be taken before wrangler binds it (other suites and lanes run beside): then
 * it starts again on new ports, unless the caller asked for that port (a restart on the same URL).
 */
export async function startWranglerDev(opts: DevOptions = {}): Promise<DevServer> {
  const t0 = Date.now();
  let attempts = 0;
  const dev = await retryLostPort(() => (attempts++, startOnce(opts)), opts.port === undefined ? PORT_ATTEMPTS : 2);
  recordStart(t0, attempts);
  return dev;
}

/** A server exited because a port it was given was taken when it came to bind it. */
export class PortLost extends Error {}

/**
 * Runs `start` (which picks its ports afresh each time) again while it throws PortLost, at most
 * `attempts` times in all: every test or benchmark server on a port found free goes through here
 * (wrangler dev, the bench's floor probe and etcd, `npm start` in start-script.test.ts).
 */
export async function retryLostPort<T>(start: () => Promise<T>, attempts = PORT_ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (!(err instanceof PortLost) || attempt >= attempts) throw err;
    }
  }
}

export const isPortLost = (output: string) => /Address already in use|EADDRINUSE/i.test(output);

/** One line per start-up for scripts/file-times-reporter.mjs, when it asked for them, naming the test file that waited. */
function recordStart(t0: number, attempts: number): void {
  const path = process.env.BATON_TEST_DEV_STARTS;
  if (!path) return;
  // Vitest's worker state (not a public API): absent outside a test file, e.g. in a global setup.
  const worker = (globalThis as { __vitest_worker__?: { filepath?: string; current?: { file?: { filepath?: string } } } }).__vitest_worker__;
  const file = worker?.filepath ?? worker?.current?.file?.filepath ?? null;
  appendFileSync(path, JSON.stringify({ at: t0, ms: Date.now() - t0, attempts, file }) + "\n");
}

async function startOnce(opts: DevOptions): Promise<DevServer> {
  const port = opts.port ?? (await (opts.pickPort ?? freePort)());
  const inspector = await freePort();
  const persistDir = opts.persistDir ?? mkdtempSync(join(tmpdir(), "baton-state-"));
  const args = [
    "wrangler", "dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector),
    "--persist-to", persistDir, "--log-level", "warn", "--show-interactive-dev-session=false",
  ];
  for (const [k, v] of Object.entries({ BATON_TEST_CLOCK: "true", ...opts.vars })) args.push("--var", `${k}:${v}`);
  const root = opts.root ?? ROOT;
  // wrangler's CLI itself, with the flags its bin script would add: the bin script is one more Node start-up that only spawns it.
  const cli = join(root, "node_modules/wrangler/wrangler-dist/cli.js");
  const proc = spawn(process.execPath, ["--no-warnings", "--experimental-vm-modules", cli, ...args.slice(1)], {
    cwd: root,
    // No fetch of the Request.cf object: offline it fails after a DNS lookup, on every start-up. No
    // banner, hence no update check against the registry on every start-up.
    // A dev registry of its own: wrangler devs of one name share ~/.config/.wrangler/registry/baton,
    // and one that exits deletes the file another is about to touch (ENOENT: that one crashes).
    env: {
      ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_HIDE_BANNER: "true", CI: "true", NO_COLOR: "1",
      WRANGLER_REGISTRY_PATH: join(persistDir, "registry"),
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    // Exited, or says it lost a port while still running (then whatever answers there is not ours).
    if (proc.exitCode !== null || isPortLost(out)) {
      kill(proc);
      const failure = `wrangler dev exited ${proc.exitCode ?? "(killed)"}:\n${out}`;
      throw isPortLost(out) ? new PortLost(failure) : new Error(failure);
    }
    // A Worker answering while ours still runs and has not said it lost the port is ours.
    if ((await answers(url)) && proc.exitCode === null && !isPortLost(out)) break;
    if (Date.now() > deadline) {
      kill(proc);
      throw new Error(`wrangler dev did not answer within the timeout:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url, port, persistDir, proc,
    output: () => out,
    async crash() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      kill(proc, "SIGKILL");
      await exited;
    },
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      kill(proc, "SIGTERM");
      const timer = setTimeout(() => kill(proc, "SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Whether our Worker answers at url (with the dev token, so not some other server on that port). */
async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/agents/health-check/presence`, {
      headers: { authorization: `Bearer ${DEV_TOKEN}` }, signal: AbortSignal.timeout(2000), // a server on a taken port may never answer
    });
    return res.status === 200;
  } catch {
    return false; // not listening yet
  }
}

/**
 * Moves one object's clock forward (BATON_TEST_CLOCK; worker/test-clock.ts) and runs what falls
 * due: an agent's object with `agent`, a session's lease shard with `session`, else the account's
 * directory. From its first move the object's time stands still between moves.
 */
export async function advanceClock(
  url: string, ms: number, target: { agent?: string; session?: string; run?: boolean } = {}, token = DEV_TOKEN,
): Promise<{ now: number; alarmsRun: number }> {
  const res = await fetch(`${url}/test/clock`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ advance_ms: ms, ...target }),
  });
  if (res.status !== 200) throw new Error(`advancing the clock failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as { now: number; alarmsRun: number };
}

function kill(proc: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): void {
  try {
    process.kill(-proc.pid!, signal);
  } catch {
    // already gone
  }
}
