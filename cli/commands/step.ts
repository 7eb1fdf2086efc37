// `baton step NAME -- COMMAND` and `baton effect NAME -- COMMAND`: durable steps for shell agents,
// run inside a command `baton serve` started. A step recorded by any earlier attempt prints its
// stored stdout without running COMMAND; otherwise COMMAND runs and its stdout (exit 0 only) is
// recorded under the message's token. An effect records its intent first and hands COMMAND
// BATON_IDEMPOTENCY_KEY (the coordinator's, the same on every attempt); an intent found without an outcome is an
// unknown outcome: --on-unknown retry runs COMMAND again under the same key, ask (the default)
// exits 75 and the message parks until a person answers `baton resume AGENT ID --done | --redo`.
import { spawn } from "node:child_process";
import { RunJournal, runProofFromEnv, type RunProof } from "../../client/run-journal.ts";
import { LIMITS, STEP_NAME, unknownOutcomeReason, type OnUnknown } from "../../worker/wire/protocol.ts";
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

/**
 * Records COMMAND's stdout as the result: inline when small, else uploaded to the coordinator's R2
 * first (up to LIMITS.blobBytes as JSON) and committed by the record; prints what was recorded.
 */
async function recordStdout(run: RunJournal, name: string, kind: "step" | "effect", stdout: string, onUnknown?: OnUnknown): Promise<number> {
  const json = JSON.stringify(stdout);
  const bytes = Buffer.byteLength(json);
  if (bytes > LIMITS.blobBytes) throw new CLIError(`${kind} ${name}: its stdout is ${bytes} bytes as JSON, more than the ${LIMITS.blobBytes} a result may hold; nothing was recorded`);
  const blob = bytes > LIMITS.stepValueBytes ? (await run.upload(new TextEncoder().encode(json))).blob : undefined;
  return printStored(run, await run.record(name, { kind, phase: "done", ...(blob === undefined ? { value: stdout } : { blob }), onUnknown }));
}

async function printStored(run: RunJournal, record: { value: unknown; blob?: { id: string } | null }): Promise<number> {
  const value = record.blob ? (JSON.parse(new TextDecoder().decode(await run.download(record.blob.id))) as unknown) : record.value;
  process.stdout.write(typeof value === "string" ? value : JSON.stringify(value));
  return EXIT.ok;
}

const stepExitCodes = [
  { code: 0, meaning: "the step's stdout was printed: recorded by an earlier attempt, or recorded now" },
  { code: "other", meaning: "COMMAND's own exit code when it failed; nothing was recorded" },
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
    const run = currentRun("step", options);
    const known = await run.get(name);
    if (known && known.kind !== "step") throw new CLIError(`"${name}" is recorded as ${known.kind === "answer" ? "a person's answer" : "an effect"}; a step needs a name of its own`);
    if (known?.status === "done") return printStored(run, known);
    const out = await capture(rest, {});
    if (out.code !== 0) return out.code;
    return recordStdout(run, name, "step", out.stdout);
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
  },
  exitCodes: [
    ...stepExitCodes,
    { code: PARK_EXIT_CODE, meaning: "the outcome of an earlier attempt is unknown and the policy is ask: the message parks for `baton resume --done | --redo`" },
  ],
  async run({ args, options, rest }) {
    const name = stepName(args[0]!);
    const policy = (options["on-unknown"] ?? "ask") as OnUnknown;
    if (policy !== "ask" && policy !== "retry") throw new UsageError(`--on-unknown is ask or retry, not ${JSON.stringify(policy)}`);
    if (rest.length === 0) throw new UsageError("baton effect needs -- COMMAND", true);
    const run = currentRun("effect", options);
    const known = await run.get(name);
    if (known && known.kind !== "effect") throw new CLIError(`"${name}" is recorded as ${known.kind === "answer" ? "a person's answer" : "a step"}; an effect needs a name of its own`);
    if (known?.status === "done") return printStored(run, known);
    // The intent is durable before the effect runs, so a successor knows it may have happened.
    const intent = await run.record(name, { kind: "effect", phase: "intent", onUnknown: policy });
    if (intent.status === "done") return printStored(run, intent);
    if (known?.status === "intent" && policy === "ask") {
      const { agent, id } = run.proof;
      process.stderr.write(`baton: ${unknownOutcomeReason(name)}; a person decides: baton resume ${agent} ${id} --done | --redo\n`);
      return PARK_EXIT_CODE;
    }
    // The coordinator makes the key (it knows the account); one that hands out none is too old for this CLI.
    if (intent.idempotency_key === undefined) throw new CLIError(`effect ${name}: this coordinator hands out no idempotency key; it is too old for this baton`);
    const out = await capture(rest, { BATON_IDEMPOTENCY_KEY: intent.idempotency_key });
    if (out.code !== 0) return out.code;
    return recordStdout(run, name, "effect", out.stdout, policy);
  },
});

export default step;
