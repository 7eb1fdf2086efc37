// `baton lease run` as a child process for the lease-run end-to-end files: each in its own process
// group, with its output collected and awaited line by line, and commands that hold a lease.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

export interface Baton {
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first stdout or stderr line matching `pattern`; rejects if the process exits first. */
  line(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exit: Promise<{ code: number | null; at: number }>;
}

/** An empty config home, so no stored login of the machine running the tests is read. */
export const configHome = mkdtempSync(join(tmpdir(), "baton-cfg-"));
const started: Baton[] = [];

export function baton(url: string, args: string[], token = DEV_TOKEN): Baton {
  const proc = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, BATON_URL: url, BATON_TOKEN: token, XDG_CONFIG_HOME: configHome, NO_COLOR: "1" },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  let err = "";
  const waiters = new Set<() => void>();
  proc.stdout!.on("data", (d) => { out += d; for (const w of [...waiters]) w(); });
  proc.stderr!.on("data", (d) => { err += d; for (const w of [...waiters]) w(); });
  const exit = new Promise<{ code: number | null; at: number }>((r) => proc.once("close", (code) => r({ code, at: performance.now() })));
  const b: Baton = {
    proc,
    stdout: () => out,
    stderr: () => err,
    exit,
    line(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = `${out}\n${err}`.split("\n").find((l) => pattern.test(l));
          if (hit === undefined) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hit);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no line matching ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
        }, timeoutMs);
        waiters.add(check);
        check();
        void exit.then(() => {
          if (!waiters.has(check)) return;
          waiters.delete(check);
          clearTimeout(timer);
          reject(new Error(`exited without a line matching ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
        });
      });
    },
  };
  started.push(b);
  return b;
}

/** A command that prints its lease env as one JSON line, then runs until its stdin closes. */
export const HOLD = [
  process.execPath, "-e",
  `process.on("SIGTERM", () => { process.stdout.write("got SIGTERM\\n"); process.exit(0); });
  process.stdin.resume(); process.stdin.on("end", () => process.exit(0));
  process.stdout.write(JSON.stringify({ ready: true, pid: process.pid, run_id: process.env.BATON_RUN_ID,
    fence: process.env.BATON_FENCE, token: process.env.BATON_FENCE_TOKEN, expires_at: process.env.BATON_LEASE_EXPIRES_AT }) + "\\n");`,
];

/** Like HOLD, but it ignores SIGTERM, so only SIGKILL stops it. */
export const STUBBORN = [
  process.execPath, "-e",
  `process.on("SIGTERM", () => process.stdout.write("got SIGTERM\\n"));
  process.stdout.write(JSON.stringify({ ready: true, pid: process.pid }) + "\\n");
  setInterval(() => {}, 1000);`,
];

export async function ready(b: Baton): Promise<{ pid: number; run_id: string; fence: string; token: string; expires_at: string }> {
  return JSON.parse(await b.line(/"ready":true/)) as never;
}

/**
 * Kills every process group started here (for afterAll): each baton leads its own, so whatever a
 * failing test left behind (baton or its command) goes with it; a group id is never reused while a member lives.
 */
export function killStarted(): void {
  for (const b of started.splice(0)) {
    try {
      process.kill(-b.proc.pid!, "SIGKILL");
    } catch {
      // the whole group is gone already
    }
  }
}

export async function http(dev: { url: string }, method: string, path: string, body?: unknown, token = DEV_TOKEN) {
  const res = await fetch(`${dev.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as Record<string, unknown>;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const unique = () => `e2e-${Math.random().toString(36).slice(2, 10)}`;
