// `baton lease run SESSION [--ttl 30] [--wait] -- COMMAND...`: runs COMMAND while holding the
// session lease. A thin layer over the client library's withSessionLease(): this file adds the
// process (spawned with the lease in its environment, killed when the lease is lost) and the
// exit codes in LEASE_EXIT.
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { LeaseHeldError, LeaseLostError, withSessionLease, type SessionLeaseEvent } from "../../client/index.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { writeText } from "../lib/printable.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { sessionName } from "../lib/names.ts";
import { LIFELINE_ENV, Lifeline } from "../lib/lifeline.ts";
import { stopTree, type TreeRoot } from "../lib/process-tree.ts";
import { onTermination } from "../lib/termination.ts";

/** Exit codes of `lease run` besides the command's own. */
const LEASE_EXIT = {
  /** Another run holds the lease (and --wait was not given or timed out); the command never ran. */
  held: 3,
  /** The lease was lost while the command ran; the command was killed. */
  lost: 4,
  /** The coordinator refused or could not be reached before the lease was granted. */
  coordinator: 5,
  /** The command could not be started. */
  notFound: 127,
} as const;

export default defineCommand({
  path: ["lease", "run"],
  summary: "Run COMMAND while holding the session lease: acquire (or wait), renew every third of the TTL, " +
    "kill COMMAND when the lease is lost, release when it exits. SIGTERM, SIGHUP and the parent exiting stop COMMAND and release.",
  positionals: [{ name: "SESSION", description: "session key", required: true }],
  rest: { name: "COMMAND [ARGS...]", description: "env BATON_LEASE_SESSION, BATON_RUN_ID, BATON_FENCE, BATON_FENCE_TOKEN, BATON_LEASE_EXPIRES_AT" },
  options: {
    ttl: { type: "string", value: "SECONDS", description: `lease TTL (${LIMITS.leaseTtlSeconds.min}-${LIMITS.leaseTtlSeconds.max}; default ${LIMITS.leaseTtlSeconds.default})` },
    wait: { type: "boolean", description: "wait for the lease instead of exiting when another run holds it" },
    "wait-timeout": { type: "string", value: "SECONDS", description: "with --wait, give up after this long" },
    "kill-grace": { type: "string", value: "SECONDS", description: "between SIGTERM and SIGKILL when the lease is lost (default 5)" },
  },
  exitCodes: [
    { code: LEASE_EXIT.held, meaning: "the lease is held by another run; COMMAND never ran" },
    { code: LEASE_EXIT.lost, meaning: "the lease was lost while COMMAND ran; COMMAND was killed" },
    { code: LEASE_EXIT.coordinator, meaning: "the coordinator refused or could not be reached before the grant" },
    { code: LEASE_EXIT.notFound, meaning: "COMMAND could not be started" },
    { code: "other", meaning: "otherwise COMMAND's own exit code (128+N when killed by signal N)" },
  ],
  async run({ args, options, rest }) {
    const session = sessionName(args[0]!);
    const { min, max } = LIMITS.leaseTtlSeconds;
    const ttlSeconds = options.ttl === undefined ? LIMITS.leaseTtlSeconds.default : numberOption(options.ttl, "ttl", { min, max, integer: true, unit: "seconds" });
    const waitTimeout = options["wait-timeout"];
    const waitTimeoutMs = waitTimeout === undefined ? undefined : numberOption(waitTimeout, "wait-timeout", { min: 0, max: 86_400 * 365, unit: "seconds" }) * 1000;
    const graceRaw = options["kill-grace"];
    const killGraceMs = graceRaw === undefined ? 5000 : numberOption(graceRaw, "kill-grace", { min: 0, max: 3600, unit: "seconds" }) * 1000;
    const conn = resolveConnection(options);
    const log = (event: string, fields: Record<string, unknown>, text: string): void => {
      if (options.json) process.stderr.write(`${JSON.stringify({ event, ...fields })}\n`);
      else writeText(`baton: ${text}\n`, process.stderr);
    };
    try {
      return await withSessionLease(session, (lease) => runCommand(rest, lease, killGraceMs), {
        ...conn, ttlSeconds, wait: options.wait, waitTimeoutMs, onEvent: (e) => logEvent(e, log),
      });
    } catch (err) {
      if (err instanceof LeaseHeldError) {
        log("held", { session, expires_at: err.expiresAt }, err.message);
        return LEASE_EXIT.held;
      }
      if (err instanceof LeaseLostError) return LEASE_EXIT.lost;
      if (err instanceof SpawnError) {
        log("error", { reason: "spawn" }, err.message);
        return LEASE_EXIT.notFound;
      }
      log("error", { reason: err instanceof Error ? err.name : "error" }, err instanceof Error ? err.message : String(err));
      return LEASE_EXIT.coordinator;
    }
  },
});

class SpawnError extends Error {}

interface LeaseFacts {
  session: string;
  runId: string;
  fence: number;
  fenceToken: string;
  expiresAt: number;
  signal: AbortSignal;
}

/**
 * Runs the command to its end so that whatever it starts stops with it when the lease is lost or
 * baton is told to stop (SIGTERM, then SIGKILL to every survivor after the grace), and dies with
 * this process however it dies (the lifeline: lifeline.ts).
 * - Without a terminal, COMMAND leads a process group of its own and the whole group is signalled;
 *   when COMMAND exits by itself, what it left running is stopped the same way before the lease is
 *   released, since it would run on without the lease.
 * - On a terminal, COMMAND stays in the terminal's group (a group of its own would be a new session
 *   without the terminal: no password prompt could read /dev/tty), Ctrl-C reaches it directly, and
 *   its process tree is signalled by parent links.
 * - Either way, on Linux every process carrying the run's lifeline mark is found too, also one that
 *   left the group or the session; elsewhere one that left both the group and the parent links is not.
 */
async function runCommand(command: string[], lease: LeaseFacts, killGraceMs: number): Promise<number> {
  const terminal = Boolean(process.stdin.isTTY || process.stdout.isTTY || process.stderr.isTTY);
  const lifeline = new Lifeline((m) => writeText(`baton: ${m}\n`, process.stderr));
  const mark = lifeline.mark();
  const child = spawn(command[0]!, command.slice(1), {
    stdio: "inherit",
    detached: !terminal,
    env: {
      ...process.env,
      [LIFELINE_ENV]: mark,
      BATON_LEASE_SESSION: lease.session,
      BATON_RUN_ID: lease.runId,
      BATON_FENCE: String(lease.fence),
      BATON_FENCE_TOKEN: lease.fenceToken,
      BATON_LEASE_EXPIRES_AT: String(lease.expiresAt),
    },
  });
  const root: TreeRoot | null = child.pid === undefined ? null : { pid: child.pid, group: !terminal, mark };
  if (root) lifeline.track(terminal ? root.pid : -root.pid);
  let stopping: Promise<unknown> | null = null;
  const stop = (signal: NodeJS.Signals = "SIGTERM"): void => {
    if (root) stopping ??= stopTree(root, signal, killGraceMs);
  };
  lease.signal.addEventListener("abort", () => stop(), { once: true });
  // SIGTERM, SIGHUP and a vanished parent are passed on; SIGINT too without a terminal (on one, Ctrl-C reaches COMMAND itself).
  const stopWatching = onTermination((why) => {
    if (why === "SIGINT" && terminal) return;
    stop(why === "SIGHUP" || why === "SIGINT" ? why : "SIGTERM");
  }, { watchParent: true });
  const outcome = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; spawnError?: Error }>((resolve) => {
    child.once("error", (err) => resolve({ code: null, signal: null, spawnError: err }));
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  stopWatching();
  // Nothing the command started may outlive it while it no longer holds the lease.
  stop();
  await stopping;
  if (root) lifeline.untrack(terminal ? root.pid : -root.pid);
  lifeline.close();
  if (outcome.spawnError) throw new SpawnError(`cannot run ${command[0]}: ${outcome.spawnError.message}`);
  if (outcome.code !== null) return outcome.code;
  return 128 + (outcome.signal ? (constants.signals[outcome.signal] ?? 0) : 0);
}

function logEvent(e: SessionLeaseEvent, log: (event: string, fields: Record<string, unknown>, text: string) => void): void {
  switch (e.type) {
    case "waiting":
      return log("waiting", { session: e.session, reason: e.reason }, e.reason === "held"
        ? `lease on ${e.session} is held by another run; waiting`
        : `${e.detail}; retrying`);
    case "acquired":
      return log("acquired", { session: e.session, run_id: e.runId, fence: e.fence, fence_token: e.fenceToken, expires_at: e.expiresAt },
        `lease on ${e.session} acquired (fence ${e.fence})`);
    case "lost":
      return log("lost", { session: e.session, reason: e.reason }, e.reason === "refused"
        ? `lease on ${e.session} lost: the coordinator refused the renewal; stopping the command`
        : `lease on ${e.session} could not be renewed before it expired; stopping the command`);
    case "released":
      return log("released", { session: e.session, released: e.released }, e.released
        ? `lease on ${e.session} released`
        : `lease on ${e.session} could not be released; it expires on its own`);
  }
}
