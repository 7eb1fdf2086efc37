// `baton lease run`: holds a session lease for exactly as long as a command runs. Acquires (or
// waits), runs the command with the lease in its environment, renews at a third of the TTL on its
// own timer, kills the command once the lease is lost or can no longer be proven by the local
// monotonic clock, and releases at the end.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { constants } from "node:os";
import { reconnectDelay, type BackoffOptions } from "./backoff.ts";
import type { Connection } from "./config.ts";

/** Exit codes of `lease run` besides the command's own. */
export const LEASE_EXIT = {
  /** Another run holds the lease (and --wait was not given or timed out); the command never ran. */
  held: 3,
  /** The lease was lost while the command ran; the command was killed. */
  lost: 4,
  /** The coordinator refused or could not be reached before the lease was granted. */
  coordinator: 5,
  /** The command could not be started. */
  notFound: 127,
} as const;

export interface LeaseRunOptions {
  conn: Connection;
  session: string;
  ttlSeconds: number;
  wait: boolean;
  /** Give up waiting after this many ms; null waits forever. */
  waitTimeoutMs: number | null;
  /** Time between SIGTERM and SIGKILL when the lease is lost. */
  killGraceMs: number;
  command: string[];
  log: (event: string, fields: Record<string, unknown>, text: string) => void;
}

interface Grant {
  run_id: string;
  fence: number;
  fence_token: string;
  expires_at: number;
  ttl_seconds: number;
}

type Reply = { status: number; body: Record<string, unknown> };

const WAIT_BACKOFF: BackoffOptions = { minTimeout: 100, maxTimeout: 2000, factor: 2, randomize: true };

async function post(conn: Connection, path: string, body: unknown, timeoutMs: number): Promise<Reply> {
  const res = await fetch(`${conn.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${conn.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(Math.max(1, Math.round(timeoutMs))),
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // a proxy's error page: the status says enough
  }
  return { status: res.status, body: typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {} };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves with the grant and the monotonic time its request was sent, or with an exit code. */
async function acquireLease(opts: LeaseRunOptions, runId: string): Promise<{ grant: Grant; sentAt: number } | number> {
  const path = `/leases/${encodeURIComponent(opts.session)}/acquire`;
  const started = performance.now();
  for (let attempt = 0; ; attempt++) {
    const sentAt = performance.now();
    let reply: Reply | null = null;
    try {
      reply = await post(opts.conn, path, { run_id: runId, ttl_seconds: opts.ttlSeconds }, 10_000);
    } catch (err) {
      if (!opts.wait) {
        opts.log("error", { reason: "unreachable" }, `cannot reach the coordinator at ${opts.conn.url}: ${(err as Error).message}`);
        return LEASE_EXIT.coordinator;
      }
    }
    if (reply && (reply.status === 200 || reply.status === 201)) return { grant: reply.body as unknown as Grant, sentAt };
    if (reply && reply.status !== 409) {
      opts.log("error", { status: reply.status, error: reply.body.error }, `coordinator refused: ${reply.status} ${String(reply.body.error ?? "")} ${String(reply.body.message ?? "")}`.trim());
      return LEASE_EXIT.coordinator;
    }
    const waited = performance.now() - started;
    if (!opts.wait || (opts.waitTimeoutMs !== null && waited >= opts.waitTimeoutMs)) {
      const expiresAt = reply?.body.expires_at;
      opts.log("held", { session: opts.session, expires_at: expiresAt ?? null }, typeof expiresAt === "number"
        ? `lease on ${opts.session} is held by another run until ${new Date(expiresAt).toISOString()}`
        : `lease on ${opts.session} was not granted`);
      return LEASE_EXIT.held;
    }
    if (attempt === 0) {
      opts.log("waiting", { session: opts.session, reason: reply ? "held" : "unreachable" }, reply
        ? `lease on ${opts.session} is held by another run; waiting`
        : `cannot reach the coordinator at ${opts.conn.url}; retrying`);
    }
    const remaining = opts.waitTimeoutMs === null ? Infinity : opts.waitTimeoutMs - waited;
    await sleep(Math.min(reconnectDelay(attempt, WAIT_BACKOFF), remaining));
  }
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}

/** Runs the command under the lease; resolves with the process exit code (see LEASE_EXIT). */
export async function runUnderLease(opts: LeaseRunOptions): Promise<number> {
  const runId = randomUUID();
  const acquired = await acquireLease(opts, runId);
  if (typeof acquired === "number") return acquired;
  const { grant } = acquired;
  opts.log("acquired", { session: opts.session, run_id: runId, fence: grant.fence, fence_token: grant.fence_token, expires_at: grant.expires_at },
    `lease on ${opts.session} acquired (fence ${grant.fence})`);

  const ttlMs = grant.ttl_seconds * 1000;
  const renewEveryMs = ttlMs / 3;
  // The coordinator started the TTL after receiving the request, so sentAt + TTL is never later
  // than its own expiry: past this local deadline the lease can no longer be proven.
  let deadline = acquired.sentAt + ttlMs;
  let lost: "lost" | "unreachable" | null = null;
  let finished = false;
  let renewTimer: NodeJS.Timeout | undefined;
  let deadlineTimer: NodeJS.Timeout | undefined;
  let killTimer: NodeJS.Timeout | undefined;

  const child: ChildProcess = spawn(opts.command[0]!, opts.command.slice(1), {
    stdio: "inherit",
    env: {
      ...process.env,
      BATON_LEASE_SESSION: opts.session,
      BATON_RUN_ID: runId,
      BATON_FENCE: String(grant.fence),
      BATON_FENCE_TOKEN: grant.fence_token,
      BATON_LEASE_EXPIRES_AT: String(grant.expires_at),
    },
  });

  const loseLease = (why: "lost" | "unreachable") => {
    if (lost || finished) return;
    lost = why;
    clearTimeout(renewTimer);
    clearTimeout(deadlineTimer);
    opts.log("lost", { session: opts.session, reason: why }, why === "lost"
      ? `lease on ${opts.session} lost: the coordinator refused the renewal; stopping the command`
      : `lease on ${opts.session} could not be renewed before it expired; stopping the command`);
    child.kill("SIGTERM");
    killTimer = setTimeout(() => child.kill("SIGKILL"), opts.killGraceMs);
  };

  const armDeadline = () => {
    clearTimeout(deadlineTimer);
    deadlineTimer = setTimeout(() => loseLease("unreachable"), Math.max(0, deadline - performance.now()));
  };

  const renewOnce = async () => {
    const sentAt = performance.now();
    const path = `/leases/${encodeURIComponent(opts.session)}/renew`;
    try {
      const reply = await post(opts.conn, path, { run_id: runId }, Math.max(1, deadline - sentAt));
      if (lost || finished) return;
      if (reply.status === 200) {
        deadline = sentAt + Number(reply.body.ttl_seconds ?? grant.ttl_seconds) * 1000;
        armDeadline();
      } else if (reply.status === 409) {
        return loseLease("lost");
      }
      // other statuses: transient; the deadline decides
    } catch {
      // unreachable or timed out: keep trying until the deadline
    }
    if (!lost && !finished) renewTimer = setTimeout(renewOnce, Math.max(0, sentAt + renewEveryMs - performance.now()));
  };

  armDeadline();
  renewTimer = setTimeout(renewOnce, renewEveryMs);

  // SIGTERM and SIGHUP sent to baton go on to the command; Ctrl-C reaches the command straight
  // from the terminal (same process group), so baton only ignores it and stays to release.
  const forward = (signal: NodeJS.Signals) => {
    if (signal !== "SIGINT") child.kill(signal);
  };
  const forwarded: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];
  for (const s of forwarded) process.on(s, forward);

  const outcome = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; spawnError?: Error }>((resolve) => {
    child.once("error", (err) => resolve({ code: null, signal: null, spawnError: err }));
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  finished = true;
  clearTimeout(renewTimer);
  clearTimeout(deadlineTimer);
  clearTimeout(killTimer);
  for (const s of forwarded) process.off(s, forward);

  if (lost) return LEASE_EXIT.lost;
  const released = await post(opts.conn, `/leases/${encodeURIComponent(opts.session)}/release`, { run_id: runId }, 5000)
    .then((r) => r.body.released === true)
    .catch(() => false);
  opts.log("released", { session: opts.session, released }, released
    ? `lease on ${opts.session} released`
    : `lease on ${opts.session} could not be released; it expires on its own`);
  if (outcome.spawnError) {
    opts.log("error", { reason: "spawn" }, `cannot run ${opts.command[0]}: ${outcome.spawnError.message}`);
    return LEASE_EXIT.notFound;
  }
  return exitCodeOf(outcome.code, outcome.signal);
}
