// `baton step NAME -- COMMAND` and `baton effect NAME -- COMMAND`: durable steps for shell agents,
// run inside a command `baton serve` started, by the library's own journal rules
// (client/core/journal-rules.ts) over HTTP. A step recorded by any earlier attempt prints its
// stored stdout without running COMMAND; otherwise COMMAND runs and its stdout (exit 0 only) is
// recorded under the message's token. An effect records its intent first and hands COMMAND
// BATON_IDEMPOTENCY_KEY (the coordinator's, the same on every attempt); an intent found without an outcome is an
// unknown outcome: --on-unknown retry runs COMMAND again under the same key, ask (the default)
// exits 75 and the message parks until a person answers `baton resume AGENT ID --done | --redo`.
// With --approve QUESTION --args JSON, COMMAND runs only on a person's approval of exactly those
// arguments (a one-use permit the coordinator checks at the intent, rules/permits.ts): without
// one, the coordinator asks and `baton effect` exits 75, which parks the message with the question.
import { spawn } from "node:child_process";
import {
  ApprovalDeniedError, ApprovalRequiredError, NameClashError, NoIdempotencyKeyError, OutcomeUnknownError, runEffect, runStep,
} from "../../client/core/journal-rules.ts";
import { RunJournal, runProofFromEnv, stepJournal, type RunProof } from "../../client/run-journal.ts";
import { approvalRefusal, effectApprovalSchema, LIMITS, STEP_NAME, type EffectApproval, type OnUnknown } from "../../worker/wire/protocol.ts";
import { writeText } from "../lib/printable.ts";
import { defineCommand, type Command } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { CLIError, UsageError } from "../lib/errors.ts";
import { EXIT } from "../lib/exit-codes.ts";
import { PARK_EXIT_CODE } from "../lib/serve-handler.ts";

const OUTSIDE_SERVE = "runs inside a command that `baton serve` started (BATON_RUN_KEY and BATON_MESSAGE_TOKEN are not set)";

export function stepName(raw: string): string {
  if (!STEP_NAME.test(raw)) throw new UsageError(`bad step name ${JSON.stringify(raw)}: 1-${LIMITS.stepNameChars} letters, digits, '.', '_', ':' or '-'`);
  return raw;
}

/** The journal of the run this process belongs to, or a usage error outside one. */
export function currentRun(command: string, options: { url?: string; token?: string }): RunJournal {
  const proof: RunProof | null = runProofFromEnv();
  if (proof === null) throw new UsageError(`baton ${command} ${OUTSIDE_SERVE}`);
  return new RunJournal(resolveConnection(options), proof);
}

interface Captured {
  code: number;
  stdout: string;
}

/** Runs COMMAND with this process's stdin and stderr, collecting stdout; a signal death is 128 + its number, as a shell says. */
function capture(argv: readonly string[], env: Record<string, string>): Promise<Captured> {
  const [command, ...args] = argv as [string, ...string[]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["inherit", "pipe", "inherit"], env: { ...process.env, ...env } });
    let stdout = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.once("error", (err) => reject(new CLIError(`cannot run ${command}: ${err.message}`, EXIT.notFound)));
    child.once("close", (code, signal) => resolve({ code: code ?? 128 + (signal === "SIGKILL" ? 9 : 15), stdout }));
  });
}

/** COMMAND failed: nothing is recorded, and `baton step` exits with its code. */
class CommandFailed extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** Runs COMMAND for the journal rules: its stdout (exit 0) is the result to record; any other exit records nothing. */
function commandResult(argv: readonly string[], env: Record<string, string>): () => Promise<string> {
  return async () => {
    const out = await capture(argv, env);
    if (out.code !== 0) throw new CommandFailed(out.code);
    return out.stdout;
  };
}

/**
 * Applies the journal rules (client/core/journal-rules.ts, the library's own) and prints what is
 * recorded; a result over the inline limit goes to the coordinator's R2 first (up to LIMITS.blobBytes).
 */
async function printRecorded(rule: () => Promise<unknown>): Promise<number> {
  let value: unknown;
  try {
    value = await rule();
  } catch (err) {
    if (err instanceof CommandFailed) return err.code;
    if (err instanceof OutcomeUnknownError) {
      process.stderr.write(`baton: ${err.message}\n`);
      return PARK_EXIT_CODE;
    }
    if (err instanceof ApprovalRequiredError) {
      writeText(`baton: asked a person: ${err.question} (${err.message})\n`, process.stderr);
      return PARK_EXIT_CODE;
    }
    if (err instanceof ApprovalDeniedError) {
      process.stdout.write(`${err.choice}\n`);
      return DENIED_EXIT_CODE;
    }
    if (err instanceof NameClashError || err instanceof NoIdempotencyKeyError) throw new CLIError(err.message);
    if (err instanceof RangeError) throw new CLIError(`${err.message}; nothing was recorded`);
    throw err;
  }
  process.stdout.write(typeof value === "string" ? value : JSON.stringify(value));
  return EXIT.ok;
}

/** A person chose another of --choices than approve: COMMAND never runs on this approval question (sysexits EX_NOPERM). */
const DENIED_EXIT_CODE = 77;

/** `--approve QUESTION --args JSON [--choices A,B]` as the wire carries it, or a usage error. */
function approvalOption(options: { approve?: string; args?: string; choices?: string }): EffectApproval | undefined {
  const question = options.approve;
  if (question === undefined) {
    if (options.args !== undefined || options.choices !== undefined) throw new UsageError("--args and --choices go with --approve");
    return undefined;
  }
  if (options.args === undefined) throw new UsageError("--approve needs --args JSON: the arguments a person approves");
  let args: unknown;
  try {
    args = JSON.parse(options.args) as unknown;
  } catch {
    throw new UsageError(`--args is JSON, got ${JSON.stringify(options.args.slice(0, 80))}`);
  }
  const choices = options.choices?.split(",").map((c) => c.trim()).filter((c) => c !== "");
  const parsed = effectApprovalSchema.safeParse({ question, args, ...(choices === undefined ? {} : { choices }) });
  if (!parsed.success) throw new UsageError(`bad --approve: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
  const refused = approvalRefusal("effect", "intent", parsed.data);
  if (refused !== null) throw new UsageError(`bad --args: ${refused.message}`);
  return parsed.data;
}

const stepExitCodes = [
  { code: 0, meaning: "the step's stdout was printed: recorded by an earlier attempt, or recorded now" },
  { code: "other", meaning: "COMMAND's own exit code when it failed; nothing was recorded" },
  { code: 1, meaning: "this run lost the message (another attempt holds it, or it ended): nothing ran, nothing was printed" },
];

const step = defineCommand({
  path: ["step"],
  summary: "Run COMMAND once per message across attempts and machines: a recorded step prints its stored stdout, else COMMAND runs and its stdout is recorded (exit 0 only).",
  positionals: [{ name: "NAME", description: "the step's name, unique within the message", required: true }],
  rest: { name: "COMMAND [ARGS...]", description: "the step's work; its stdout (text, up to 16 MiB: over 48 KiB it is kept in the coordinator's R2) is the step's result" },
  options: {},
  exitCodes: stepExitCodes,
  async run({ args, options, rest }) {
    const name = stepName(args[0]!);
    if (rest.length === 0) throw new UsageError("baton step needs -- COMMAND", true);
    const journal = stepJournal(currentRun("step", options));
    return printRecorded(() => runStep(journal, name, commandResult(rest, {})));
  },
});

export const effectCommand: Command = defineCommand({
  path: ["effect"],
  summary: "Run a side effect at most once knowingly: its intent is recorded before COMMAND runs and its outcome (stdout) after; " +
    "COMMAND gets BATON_IDEMPOTENCY_KEY, the same on every attempt.",
  positionals: [{ name: "NAME", description: "the effect's name, unique within the message", required: true }],
  rest: { name: "COMMAND [ARGS...]", description: "the side effect; pass BATON_IDEMPOTENCY_KEY to the API it calls; its stdout is the recorded outcome" },
  options: {
    "on-unknown": {
      type: "string", value: "ask|retry",
      description: "an earlier attempt began it and no outcome was recorded: ask (default) parks the message for a person; retry runs it again under the same key",
    },
    approve: {
      type: "string", value: "QUESTION",
      description: "COMMAND runs only on a person's approval of exactly --args (a one-use permit): without one, the coordinator asks QUESTION, showing the effect, the arguments and their SHA-256",
    },
    args: { type: "string", value: "JSON", description: "with --approve: the arguments the person approves (JSON, at most 8 KiB as canonical JSON)" },
    choices: { type: "string", value: "A,B", description: "with --approve: what the person picks from besides reject, approve among them (default: approve or reject)" },
  },
  exitCodes: [
    ...stepExitCodes,
    { code: PARK_EXIT_CODE, meaning: "the outcome of an earlier attempt is unknown and the policy is ask: the message parks for `baton resume --done | --redo`; or, with --approve, no unspent permit for these arguments: the message parks with the question" },
    { code: DENIED_EXIT_CODE, meaning: "with --approve and --choices: a person chose another choice (printed) than approve; COMMAND did not run" },
  ],
  async run({ args, options, rest }) {
    const name = stepName(args[0]!);
    const policy = (options["on-unknown"] ?? "ask") as OnUnknown;
    if (policy !== "ask" && policy !== "retry") throw new UsageError(`--on-unknown is ask or retry, not ${JSON.stringify(policy)}`);
    if (rest.length === 0) throw new UsageError("baton effect needs -- COMMAND", true);
    const approve = approvalOption(options);
    const run = currentRun("effect", options);
    const effect = (key: string) => commandResult(rest, { BATON_IDEMPOTENCY_KEY: key })();
    return printRecorded(() => runEffect(stepJournal(run), name, policy, effect, run.proof, approve));
  },
});

export default step;
