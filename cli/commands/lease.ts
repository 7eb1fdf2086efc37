// `baton lease run SESSION [--ttl 30] [--wait] -- COMMAND...` and `baton lease show SESSION`:
// session leases from the command line. Exit codes of `run` are in LEASE_EXIT.
import { defineCommand } from "citty";
import { apiOk } from "../lib/api.ts";
import { resolveConnection } from "../lib/config.ts";
import { CLIError } from "../lib/errors.ts";
import { LEASE_EXIT, runUnderLease } from "../lib/lease-run.ts";
import { LIMITS, SESSION_NAME } from "../../worker/wire/protocol.ts";
import { DEFAULT_LEASE_TTL_SECONDS } from "../../worker/rules/session-lease.ts";

interface LeaseState {
  session: string;
  held: boolean;
  fence: number;
  fence_token: string;
  expires_at: number | null;
  expires_in_ms: number | null;
  ttl_seconds: number | null;
}

function sessionName(raw: string): string {
  if (!SESSION_NAME.test(raw)) {
    throw new CLIError(`bad session name ${JSON.stringify(raw)}: 1-128 chars of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit`);
  }
  return raw;
}

function seconds(raw: string, flag: string, min: number, max: number, integer: boolean): number {
  const value = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new CLIError(`${flag} must be ${integer ? "a whole number of" : "a number of"} seconds between ${min} and ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** The words after the first `--`: the command to run under the lease. */
function commandAfterDashes(rawArgs: string[]): string[] {
  const dashes = rawArgs.indexOf("--");
  const command = dashes === -1 ? [] : rawArgs.slice(dashes + 1);
  if (command.length === 0) throw new CLIError("missing command: baton lease run SESSION [--ttl 30] [--wait] -- COMMAND...");
  return command;
}

const run = defineCommand({
  meta: {
    name: "run",
    description: `Run COMMAND while holding the session lease. Exit codes: the command's own; ${LEASE_EXIT.held} lease held by another run; ` +
      `${LEASE_EXIT.lost} lease lost (command killed); ${LEASE_EXIT.coordinator} coordinator refused or unreachable; ${LEASE_EXIT.notFound} command not found`,
  },
  args: {
    session: { type: "positional", required: true, description: "session key" },
    ttl: { type: "string", default: String(DEFAULT_LEASE_TTL_SECONDS), description: `lease TTL in seconds (${LIMITS.leaseTtlSeconds.min}-${LIMITS.leaseTtlSeconds.max}); renewed every third of it` },
    wait: { type: "boolean", description: "wait for the lease instead of exiting when another run holds it" },
    "wait-timeout": { type: "string", description: "with --wait, give up after this many seconds" },
    "kill-grace": { type: "string", default: "5", description: "seconds between SIGTERM and SIGKILL when the lease is lost" },
    json: { type: "boolean", description: "report lease events as JSON lines on stderr" },
    url: { type: "string", description: "coordinator URL (env BATON_URL)" },
  },
  async run({ args, rawArgs }) {
    const command = commandAfterDashes(rawArgs);
    const session = sessionName(args.session);
    const { min, max } = LIMITS.leaseTtlSeconds;
    const ttlSeconds = seconds(args.ttl, "--ttl", min, max, true);
    const waitTimeout = args["wait-timeout"];
    const waitTimeoutMs = waitTimeout === undefined ? null : seconds(waitTimeout, "--wait-timeout", 0, 86_400 * 365, false) * 1000;
    const killGraceMs = seconds(args["kill-grace"], "--kill-grace", 0, 3600, false) * 1000;
    const conn = resolveConnection({ url: args.url });
    const code = await runUnderLease({
      conn, session, ttlSeconds, wait: Boolean(args.wait), waitTimeoutMs, killGraceMs, command,
      log: (event, fields, text) => {
        process.stderr.write(args.json ? `${JSON.stringify({ event, ...fields })}\n` : `baton: ${text}\n`);
      },
    });
    process.exit(code);
  },
});

const show = defineCommand({
  meta: { name: "show", description: "Show a session lease: held or free, fence, expiry" },
  args: {
    session: { type: "positional", required: true, description: "session key" },
    json: { type: "boolean", description: "print JSON" },
    url: { type: "string", description: "coordinator URL (env BATON_URL)" },
  },
  async run({ args }) {
    const session = sessionName(args.session);
    const conn = resolveConnection({ url: args.url });
    const state = await apiOk<LeaseState>(conn, "GET", `/leases/${encodeURIComponent(session)}`);
    if (args.json) {
      process.stdout.write(`${JSON.stringify(state)}\n`);
      return;
    }
    const line = state.held
      ? `${session}: held, fence ${state.fence} (token ${state.fence_token}), expires in ${((state.expires_in_ms ?? 0) / 1000).toFixed(1)} s`
      : `${session}: free, last fence ${state.fence}`;
    process.stdout.write(`${line}\n`);
  },
});

export default defineCommand({
  meta: { name: "lease", description: "Session leases: run a command while holding one, or show one" },
  subCommands: { run, show },
});
