// `baton serve AGENT -- COMMAND [ARGS...]`: joins the agent's serve line from this machine; while
// holding the lease, runs COMMAND once per message. One per agent per machine (local lock).
import { hostname } from "node:os";
import { join } from "node:path";
import { defineCommand } from "citty";
import { resolveConnection } from "../lib/config.ts";
import { CLIError } from "../lib/errors.ts";
import { acquireLock, lockDir, lockName } from "../lib/local-lock.ts";
import { stateDir } from "../lib/message-journal.ts";
import { ServeSession } from "../lib/serve-session.ts";
import { StatusReporter } from "../lib/status-line.ts";
import { AGENT_NAME, LIMITS, MACHINE_LABEL } from "../../worker/wire/protocol.ts";

export const DEFAULT_GRACE_SECONDS = 10;

export default defineCommand({
  meta: { name: "serve", description: "Serve an agent from this machine: exactly one serving machine runs COMMAND per message." },
  args: {
    agent: { type: "positional", description: "Agent name", required: true },
    url: { type: "string", description: "Coordinator URL (env BATON_URL; default http://127.0.0.1:8787)" },
    token: { type: "string", description: "Bearer token (env BATON_TOKEN or `baton login`)" },
    machine: { type: "string", description: "Machine label shown to others (env BATON_MACHINE; default the host name)" },
    grace: { type: "string", description: `Seconds between SIGTERM and SIGKILL when a run must stop (default ${DEFAULT_GRACE_SECONDS})` },
    json: { type: "boolean", description: "Status and events as JSON lines on stderr" },
  },
  async run({ args, rawArgs }) {
    const agent = String(args.agent);
    if (!AGENT_NAME.test(agent)) {
      throw new CLIError(`bad agent name ${JSON.stringify(agent)}: 1-63 chars of a-z, 0-9, '.', '_' or '-', starting with a letter or digit`);
    }
    const dashes = rawArgs.indexOf("--");
    const commandLine = dashes === -1 ? [] : rawArgs.slice(dashes + 1);
    const [command, ...commandArgs] = commandLine;
    if (!command) throw new CLIError("no command given: baton serve AGENT -- COMMAND [ARGS...]");
    const machine = (args.machine || process.env.BATON_MACHINE || hostname()).slice(0, LIMITS.machineLabelChars);
    if (!MACHINE_LABEL.test(machine)) throw new CLIError(`bad machine label ${JSON.stringify(machine)}: no control or invisible characters`);
    const graceMs = parseGrace(args.grace ?? process.env.BATON_KILL_GRACE_SECONDS);
    const { url, token } = resolveConnection({ url: args.url, token: args.token });

    const lock = acquireLock(lockDir(), lockName(agent, url));
    if (!lock.ok) {
      throw new CLIError(`agent ${agent} is already served on this machine by pid ${lock.ownerPid} (lock ${lock.path})`);
    }
    const reporter = new StatusReporter(`baton serve ${agent}`, process.stderr, Boolean(args.json));
    const dir = stateDir();
    const session = new ServeSession({
      url, token, agent, machine, command, args: commandArgs, graceMs, reporter,
      stateDir: dir,
      checkpointPath: join(dir, `${agent}-${process.pid}.checkpoint.json`),
    });

    let exiting = false;
    const exit = (code: number): never => {
      lock.release();
      process.exit(code);
    };
    const onSignal = (signal: NodeJS.Signals): void => {
      if (exiting) exit(signal === "SIGINT" ? 130 : 143);
      exiting = true;
      reporter.log(`${signal}: stopping`);
      session.shutdown().then(() => exit(0), () => exit(1));
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    process.on("exit", () => lock.release());
    session.start((message) => {
      process.stderr.write(`baton: ${message}\n`);
      session.shutdown().finally(() => exit(1));
    });
    await new Promise<never>(() => {});
  },
});

function parseGrace(raw: string | undefined): number {
  if (raw === undefined || raw === "") return DEFAULT_GRACE_SECONDS * 1000;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > 3600) {
    throw new CLIError(`--grace must be a number of seconds between 0 and 3600, got ${JSON.stringify(raw)}`);
  }
  return Math.round(seconds * 1000);
}
