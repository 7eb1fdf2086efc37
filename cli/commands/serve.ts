// `baton serve AGENT -- COMMAND [ARGS...]`: joins the agent's serve line from this machine; while
// holding the lease, runs COMMAND once per message. A thin layer over the client library's
// serve(): this file adds the local lock (one per agent per machine), the journal, the process
// runs, and winding down on signals or when the parent process dies.
import { accessSync, constants, rmSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { delimiter, join } from "node:path";
import { serve } from "../../client/node.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { CLIError, UsageError } from "../lib/errors.ts";
import { EXIT } from "../lib/exit-codes.ts";
import { acquireLock, lockDir, lockName } from "../lib/local-lock.ts";
import { MessageJournal, stateDir } from "../lib/message-journal.ts";
import { commandHandler } from "../lib/serve-handler.ts";
import { writeCliShim } from "../lib/cli-shim.ts";
import { describeEvent, StatusReporter } from "../lib/status-line.ts";
import { Lifeline } from "../lib/lifeline.ts";
import { MARKS_READABLE } from "../lib/process-tree.ts";
import { onTermination } from "../lib/termination.ts";
import { agentName } from "../lib/names.ts";
import { LIMITS, MACHINE_LABEL } from "../../worker/wire/protocol.ts";

export const DEFAULT_GRACE_SECONDS = 10;

/** Why COMMAND cannot run here (not found on PATH, not a file, not executable), or null when it can. */
function notRunnable(command: string): string | null {
  const candidates = command.includes("/") ? [command] : (process.env.PATH ?? "").split(delimiter).filter(Boolean).map((d) => join(d, command));
  for (const path of candidates) {
    try {
      if (!statSync(path).isFile()) continue;
      accessSync(path, constants.X_OK);
      return null;
    } catch (err) {
      if (command.includes("/")) {
        return (err as NodeJS.ErrnoException).code === "EACCES" ? `${command} is not executable (chmod +x ${command})` : `${command} does not exist`;
      }
    }
  }
  return command.includes("/") ? `${command} is not a file` : `${command} was not found on PATH`;
}

export default defineCommand({
  path: ["serve"],
  summary: "Serve an agent from this machine: of all machines serving it, exactly one runs COMMAND for each message " +
    "(text on stdin; stdout is the reply). Stops cleanly, releasing the lease, on SIGTERM, SIGINT, SIGHUP or when its parent process exits.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  rest: {
    name: "COMMAND [ARGS...]",
    description: "run once per message; env BATON_AGENT, BATON_MACHINE, BATON_MESSAGE_ID, BATON_FENCE, BATON_ATTEMPT, BATON_CHECKPOINT, " +
      "BATON_MESSAGE_TOKEN, BATON_RUN_KEY, BATON_URL, BATON_TOKEN (for `baton step`, `baton effect`, `baton heartbeat` inside it), " +
      "BATON_CLI (this serve's own `baton`, also first on the command's PATH), " +
      "BATON_RESUME_INPUT (after `baton resume`); exit 75 (EX_TEMPFAIL) parks the message until `baton resume`",
  },
  options: {
    machine: { type: "string", value: "LABEL", description: "machine label shown to others (env BATON_MACHINE; default the host name)" },
    priority: {
      type: "string", value: "N",
      description: `preference, ${LIMITS.priority.min} to ${LIMITS.priority.max} (env BATON_PRIORITY; default 0): the agent moves to the highest priority connected for the hysteresis period, between messages`,
    },
    grace: { type: "string", value: "SECONDS", description: `between SIGTERM and SIGKILL when a run must stop (env BATON_KILL_GRACE_SECONDS; default ${DEFAULT_GRACE_SECONDS})` },
    concurrency: { type: "string", value: "N", description: `messages this runner runs at once (1-${LIMITS.runnerSlots}; default 1, which keeps them in order)` },
    "park-deadline": { type: "string", value: "SECONDS", description: "a message parked by exit 75 fails if nobody resumes it within this time (default: it waits)" },
    "survive-parent": { type: "boolean", description: "keep serving when the parent process exits (nohup, setsid); default is to stop" },
  },
  exitCodes: [
    { code: 0, meaning: "stopped by a signal or by its parent exiting, after releasing the lease" },
    { code: 1, meaning: "the coordinator refused for good (wrong token, bad name), or AGENT is already served under this machine label here" },
    { code: 127, meaning: "COMMAND does not exist or is not executable; nothing was served" },
  ],
  async run({ args, options, rest }) {
    const agent = agentName(args[0]!);
    const [command, ...commandArgs] = rest as [string, ...string[]];
    const machine = (options.machine || process.env.BATON_MACHINE || hostname()).slice(0, LIMITS.machineLabelChars);
    if (!MACHINE_LABEL.test(machine)) throw new UsageError(`bad machine label ${JSON.stringify(machine)}: no control or invisible characters`);
    const graceRaw = options.grace ?? process.env.BATON_KILL_GRACE_SECONDS;
    const graceMs = graceRaw ? numberOption(graceRaw, "grace", { min: 0, max: 3600, unit: "seconds" }) * 1000 : DEFAULT_GRACE_SECONDS * 1000;
    const concurrency = options.concurrency ? numberOption(options.concurrency, "concurrency", { min: 1, max: LIMITS.runnerSlots, integer: true }) : 1;
    const { min, max } = LIMITS.parkDeadlineSeconds;
    const parkDeadlineSeconds = options["park-deadline"] ? numberOption(options["park-deadline"], "park-deadline", { min, max, integer: true, unit: "seconds" }) : undefined;
    const priorityRaw = options.priority ?? process.env.BATON_PRIORITY;
    const priority = priorityRaw ? numberOption(priorityRaw, "priority", { ...LIMITS.priority, integer: true }) : undefined;
    const conn = resolveConnection(options);

    const missing = notRunnable(command);
    if (missing) throw new CLIError(`cannot serve ${agent}: ${missing}`, EXIT.notFound);
    const lock = acquireLock(lockDir(), lockName(agent, conn.url, machine));
    if (!lock.ok) {
      throw new CLIError(`agent ${agent} is already served as machine ${JSON.stringify(machine)} on this host by pid ${lock.ownerPid} ` +
        `(lock ${lock.path}); to try failover on one host, give the second serve another --machine`);
    }
    process.on("exit", () => lock.release());
    const reporter = new StatusReporter(`baton serve ${agent}`, conn.url, process.stderr, options.json);
    const dir = stateDir();
    const journal = new MessageJournal(dir, agent, conn.url, machine);
    const checkpointPath = join(dir, `${agent}-${process.pid}.checkpoint.json`);
    const shim = writeCliShim();
    process.on("exit", () => shim.remove());
    const lifeline = new Lifeline((m) => reporter.log(m));
    // Where no process's environment can be read, a process that leaves both the command's group and its parent links is not found.
    if (!MARKS_READABLE) reporter.log(`on ${process.platform} a stop reaches the command's process group and its descendants; a process it starts that leaves both (setsid, then its parent exits) is not stopped`);
    const handle = serve(agent, commandHandler({
      agent, machine, command, args: commandArgs, graceMs, checkpointPath, parkDeadlineSeconds, conn,
      log: (message, fields) => reporter.log(message, fields),
      stderr: () => reporter.commandStderr(),
      env: shim.env,
      lifeline,
    }), {
      ...conn, machine, priority, cursor: journal.cursor, concurrency,
      onStatus: (s) => reporter.status(s),
      // A park names the command that shows the question and how to answer it (a plain resume may be refused).
      onEvent: (e) => (e.type === "parked" ? reporter.log(`${describeEvent(e)}: \`baton show ${agent} ${e.id}\` says how to answer`, { ...e }) : reporter.event(e)),
      onMessage: (m) => journal.record(m),
    });
    const stopWatching = onTermination((why) => {
      reporter.log(`${why}: stopping`);
      void handle.stop();
    }, { watchParent: !options["survive-parent"] });
    try {
      await handle.done;
    } finally {
      stopWatching();
      lifeline.close();
      rmSync(checkpointPath, { force: true });
      shim.remove();
      reporter.end();
    }
    return EXIT.ok;
  },
});
