// Helpers for the serve/who end-to-end tests: real `baton serve` processes against a real
// `wrangler dev`, a side-effect sink the served command appends to, and HTTP look-ups.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, inject } from "vitest";
import { accountToken, type FileAccount } from "./shared-accounts.ts";
import { SHARED_SERVE_VARS } from "./shared-dev.global.ts";
import { DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";

/** The built CLI (npm run build); the tests run what users install. */
export const BIN = join(ROOT, "dist/cli/main.js");

// The token every helper of this file speaks with: the dev token, or the token of the file's own
// account once its fixture asked for one, until that test file ends (the e2e project's files share
// this module: isolate is off).
let fileToken = DEV_TOKEN;

/** The token the helpers of this file use (startServe, runBaton, getJson, ...). */
export const token = (): string => fileToken;

/**
 * A served command: appends one JSON line per run to $SINK, sleeps $RUN_SLEEP seconds, waits until
 * the file $GATE exists (when set), then replies.
 */
export function writeSinkCommand(dir: string): { command: string; sink: string } {
  const sink = join(dir, "sink.jsonl");
  const command = join(dir, "served.sh");
  writeFileSync(
    command,
    [
      "#!/bin/sh",
      'text=$(cat)',
      'printf \'{"tag":"%s","id":%s,"fence":%s,"attempt":%s,"phase":"start"}\\n\' "$TAG" "$BATON_MESSAGE_ID" "$BATON_FENCE" "$BATON_ATTEMPT" >> "$SINK"',
      'if [ -n "$RUN_SLEEP" ]; then sleep "$RUN_SLEEP"; fi',
      'if [ -n "$GATE" ]; then while [ ! -e "$GATE" ]; do sleep 0.05; done; fi',
      'printf \'{"tag":"%s","id":%s,"fence":%s,"attempt":%s,"phase":"end"}\\n\' "$TAG" "$BATON_MESSAGE_ID" "$BATON_FENCE" "$BATON_ATTEMPT" >> "$SINK"',
      'echo "$TAG did: $text"',
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  return { command, sink };
}

export interface SinkLine {
  tag: string;
  id: number;
  fence: number;
  attempt: number;
  phase: "start" | "end";
}

export function readSink(sink: string): SinkLine[] {
  let text = "";
  try {
    text = readFileSync(sink, "utf8");
  } catch {
    return [];
  }
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as SinkLine);
}

export interface ServeProc {
  proc: ChildProcess;
  pid: number;
  tag: string;
  stderr(): string;
  /** Resolves with the time (performance.now()) the pattern first appeared after `from` chars of stderr. */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<number>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

export interface ServeOptions {
  url: string;
  agent: string;
  tag: string;
  command: string;
  sink: string;
  /** Lock directory; distinct per process so two "machines" can share this host. */
  lockDir?: string;
  env?: Record<string, string>;
  /** More `baton serve` options, before the `--` (e.g. --concurrency 2). */
  serveArgs?: string[];
}

export function startServe(opts: ServeOptions): ServeProc {
  const base = mkdtempSync(join(tmpdir(), `baton-serve-${opts.tag}-`));
  const lockDir = opts.lockDir ?? join(base, "lock");
  mkdirSync(lockDir, { recursive: true });
  const proc = spawn(process.execPath, [BIN, "serve", opts.agent, "--machine", `machine-${opts.tag}`, "--grace", "1", ...(opts.serveArgs ?? []), "--", opts.command], {
    cwd: ROOT,
    env: {
      ...process.env,
      BATON_URL: opts.url,
      BATON_TOKEN: fileToken,
      BATON_LOCK_DIR: lockDir,
      BATON_STATE_DIR: join(base, "state"),
      TAG: opts.tag,
      SINK: opts.sink,
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  const listeners = new Set<() => void>();
  proc.stderr!.setEncoding("utf8");
  proc.stderr!.on("data", (chunk: string) => {
    err += chunk;
    for (const l of listeners) l();
  });
  proc.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once("exit", (code, signal) => {
      resolve({ code, signal });
      for (const l of listeners) l();
    });
  });
  return {
    proc,
    pid: proc.pid!,
    tag: opts.tag,
    stderr: () => err,
    exited,
    waitFor(pattern, timeoutMs = 20_000, from = 0) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          if (pattern.test(err.slice(from))) {
            resolve(performance.now());
            return true;
          }
          return false;
        };
        if (check()) return;
        const onChange = (): void => {
          if (check()) return done();
          if (proc.exitCode !== null || proc.signalCode !== null) {
            done();
            reject(new Error(`serve ${opts.tag} exited before ${pattern}; stderr:\n${err}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`serve ${opts.tag}: no ${pattern} within ${timeoutMs} ms; stderr:\n${err}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          listeners.delete(onChange);
        };
        listeners.add(onChange);
      });
    },
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      try {
        process.kill(proc.pid!, "SIGCONT");
        process.kill(proc.pid!, "SIGKILL");
      } catch {
        // gone
      }
      await exited;
    },
  };
}

export function authHeaders(): Record<string, string> {
  return { authorization: `Bearer ${fileToken}`, "content-type": "application/json" };
}

export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: authHeaders() });
  if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export async function postMessage(url: string, agent: string, text: string): Promise<number> {
  const res = await fetch(`${url}/agents/${agent}/messages`, { method: "POST", headers: authHeaders(), body: JSON.stringify({ text }) });
  if (res.status !== 201) throw new Error(`POST message: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: number }).id;
}

export interface MessageView {
  id: number;
  status: string;
  attempts: number;
  acked_fence: number | null;
  reply: string | null;
}

/** Polls one message until `done` holds; the coordinator's store is the event we wait on. */
export async function waitForMessage(url: string, agent: string, id: number, done: (m: MessageView) => boolean, timeoutMs = 20_000): Promise<MessageView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = await getJson<MessageView>(`${url}/agents/${agent}/messages/${id}`);
    if (done(m)) return m;
    if (Date.now() > deadline) throw new Error(`message ${id} never reached the expected state: ${JSON.stringify(m)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs `baton ARGS...` to completion and returns its exit code and output. */
export function runBaton(args: string[], env: Record<string, string>): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT, env: { ...process.env, BATON_TOKEN: fileToken, ...env }, encoding: "utf8", timeout: 30_000, maxBuffer: 64 * 1024 * 1024,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * runBaton without blocking this process: what a file with raw serve sockets uses, whose
 * heartbeats a spawnSync would stop for as long as the command runs (past a 2 s TTL under load).
 */
export function runBatonAsync(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, BATON_TOKEN: fileToken, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function uniqueAgent(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}

export interface ServeFixture {
  /** The file's `wrangler dev`, started before its first test. */
  readonly dev: DevServer;
  /** Serve processes to stop after the current test. */
  readonly started: ServeProc[];
}

/**
 * One `wrangler dev` per test file with the shared server's settings (SHARED_SERVE_VARS: 2 s
 * heartbeat TTL, 1 s scan, its tokens) plus any `vars`, stopped after the file; every serve process
 * pushed to `started` is stopped after each test.
 */
export function serveFixture(vars: Record<string, string> = {}): ServeFixture {
  let dev: DevServer | undefined;
  const started: ServeProc[] = [];
  beforeAll(async () => {
    dev = await startWranglerDev({ vars: { ...SHARED_SERVE_VARS, ...vars } });
  });
  afterAll(async () => {
    await dev?.stop();
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((s) => s.stop()));
  });
  return {
    get dev() {
      if (!dev) throw new Error("wrangler dev is not started yet");
      return dev;
    },
    started,
  };
}

export interface SharedFixtureOptions {
  /** The file's own account on the shared server (shared-accounts.ts), for a file that reads or configures a whole account. */
  account?: FileAccount;
}

/**
 * serveFixture's settings on the one `wrangler dev` of the project (shared-dev.global.ts; with
 * BATON_TEST_SHARED_DEV=0 a server of the file's own, as serveFixture), for every file that never
 * stops, crashes or restarts its coordinator and keeps to agents of its own (uniqueAgent), or to an
 * account of its own (`account`, which every helper of the file then speaks for). Serve processes
 * pushed to `started` are stopped after each test.
 */
export function sharedServeFixture(opts: SharedFixtureOptions = {}): { readonly dev: { readonly url: string }; readonly started: ServeProc[] } {
  if (opts.account !== undefined) {
    fileToken = accountToken(opts.account);
    afterAll(() => {
      fileToken = DEV_TOKEN;
    });
  }
  const url = inject("sharedDevUrl");
  if (url === undefined) return serveFixture(); // not shared in this run: a server of its own
  const started: ServeProc[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((s) => s.stop()));
  });
  return { dev: { url }, started };
}

/** Polls the sink until `done` holds. */
export async function waitForSink(sink: string, done: (lines: SinkLine[]) => boolean, timeoutMs = 15_000): Promise<SinkLine[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = readSink(sink);
    if (done(lines)) return lines;
    if (Date.now() > deadline) throw new Error(`sink never matched: ${JSON.stringify(lines)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
