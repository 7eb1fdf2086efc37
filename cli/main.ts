#!/usr/bin/env node
// The `baton` command: a thin entry that finds the subcommand, loads its file on demand, and
// turns failures into one line and an exit code (see cli/lib/exit-codes.ts).
import { parseInvocation, renderHelp, table, type Command } from "./lib/command.ts";
import { CLIError, UsageError } from "./lib/errors.ts";
import { EXIT } from "./lib/exit-codes.ts";
import { printable } from "./lib/printable.ts";
import { closest, didYouMean } from "./lib/suggest.ts";
import { version } from "./lib/version.ts";

type Loader = () => Promise<{ default: Command }>;

const COMMANDS: Record<string, { summary: string; load: Loader }> = {
  serve: { summary: "serve an agent from this machine: exactly one serving machine runs COMMAND per message", load: () => import("./commands/serve.ts") },
  who: { summary: "show who holds each agent's serve lease and who stands by", load: () => import("./commands/who.ts") },
  send: { summary: "send a message to an agent; --wait prints the reply", load: () => import("./commands/send.ts") },
  drain: { summary: "drain a machine: it finishes its run, hands the lease on and takes no work", load: () => import("./commands/drain.ts") },
  undrain: { summary: "undrain a machine: it may hold the lease and take work again", load: () => import("./commands/drain.ts").then((m) => ({ default: m.undrainCommand })) },
  pause: { summary: "pause an agent: messages queue, nothing is handed out, the lease stays", load: () => import("./commands/pause.ts") },
  unpause: { summary: "unpause an agent: queued messages are handed out again", load: () => import("./commands/pause.ts").then((m) => ({ default: m.unpauseCommand })) },
  history: { summary: "list an agent's messages: status, attempts, replies", load: () => import("./commands/history.ts") },
  "lease run": { summary: "run a command while holding a session lease", load: () => import("./commands/lease-run.ts") },
  "lease show": { summary: "show a session lease: held or free, fence, expiry", load: () => import("./commands/lease-show.ts") },
  resume: { summary: "resume a parked message: it runs again from its checkpoint with your input", load: () => import("./commands/resume.ts") },
  ask: { summary: "inside a served command: ask a person and park; once answered, print the choice", load: () => import("./commands/ask.ts") },
  approve: { summary: "approve a parked message: it runs again with your text", load: () => import("./commands/answer.ts") },
  reject: { summary: "reject a parked message: it ends as rejected", load: () => import("./commands/answer.ts").then((m) => ({ default: m.rejectCommand })) },
  answer: { summary: "answer a parked message's question with one of its choices", load: () => import("./commands/answer.ts").then((m) => ({ default: m.answerCommand })) },
  cancel: { summary: "cancel a message: queued or parked it never runs; running, its run is stopped", load: () => import("./commands/cancel.ts") },
  retry: { summary: "retry a failed message: a fresh set of tries, its attempt numbers go on", load: () => import("./commands/answer.ts").then((m) => ({ default: m.retryCommand })) },
  step: { summary: "inside a served command: run COMMAND once per message; later attempts print its recorded stdout", load: () => import("./commands/step.ts") },
  effect: { summary: "inside a served command: a side effect with its intent and outcome recorded, never run twice unknowingly", load: () => import("./commands/step.ts").then((m) => ({ default: m.effectCommand })) },
  heartbeat: { summary: "inside a served command: the run is alive; keep its progress", load: () => import("./commands/heartbeat.ts") },
  output: { summary: "inside a served command: add text (or stdin) to the message's live output", load: () => import("./commands/output.ts") },
  logs: { summary: "print a message's live output; --follow keeps printing until it is final", load: () => import("./commands/logs.ts") },
  show: { summary: "show one message in full: text, status, runner, reply or why it failed", load: () => import("./commands/show.ts") },
  "agent show": { summary: "show an agent's message policy and controls", load: () => import("./commands/agent-show.ts") },
  "agent set": { summary: "set an agent's message policy: single or pool, max running, run timeout, max attempts", load: () => import("./commands/agent-set.ts") },
  "hook claude-code": { summary: "Claude Code's permission hook: a person answers a tool prompt from anywhere; prints allow or deny", load: () => import("./commands/hook.ts") },
  mcp: { summary: "serve MCP tools on stdio for an MCP host: ask a person, who, send, session leases", load: () => import("./commands/mcp.ts") },
  "schedule add": { summary: "add a schedule: the coordinator posts TEXT at each slot of --cron (--tz) or --every, once per slot", load: () => import("./commands/schedule.ts") },
  "schedule list": { summary: "list an agent's schedules and when each next posts", load: () => import("./commands/schedule.ts").then((m) => ({ default: m.listCommand })) },
  "schedule show": { summary: "show a schedule with its latest fires and the messages they posted", load: () => import("./commands/schedule.ts").then((m) => ({ default: m.showCommand })) },
  "schedule pause": { summary: "pause a schedule: its slots are recorded skipped", load: () => import("./commands/schedule.ts").then((m) => ({ default: m.pauseCommand })) },
  "schedule resume": { summary: "resume a schedule; catch-up decides about the slots it missed", load: () => import("./commands/schedule.ts").then((m) => ({ default: m.resumeCommand })) },
  "schedule rm": { summary: "remove a schedule", load: () => import("./commands/schedule.ts").then((m) => ({ default: m.rmCommand })) },
  "webhook set": { summary: "set an agent's webhook, or the account's: signed POSTs (Standard Webhooks) when something needs a person", load: () => import("./commands/webhook.ts") },
  "webhook show": { summary: "show an agent's webhook, or the account's (never its secret)", load: () => import("./commands/webhook.ts").then((m) => ({ default: m.showCommand })) },
  "webhook rm": { summary: "remove an agent's webhook, or the account's", load: () => import("./commands/webhook.ts").then((m) => ({ default: m.rmCommand })) },
  "webhook test": { summary: "send a signed webhook.test event now and print the receiver's status", load: () => import("./commands/webhook.ts").then((m) => ({ default: m.testCommand })) },
  "grants list": { summary: "list the account's OAuth grants: client, scopes, agents, who signed in", load: () => import("./commands/grants.ts") },
  "grants revoke": { summary: "revoke an OAuth grant: its tokens stop working at once", load: () => import("./commands/grants.ts").then((m) => ({ default: m.revokeCommand })) },
  login: { summary: "check and store the coordinator URL and your token; --code prints a one-time code for the OAuth sign-in page", load: () => import("./commands/login.ts") },
};

function mainHelp(): string {
  return [
    "Usage: baton COMMAND [options]",
    "",
    "Lease coordinator for AI agents: exactly one machine runs each agent.",
    "",
    "Commands:",
    ...table(Object.entries(COMMANDS).map(([name, c]) => [name, c.summary])),
    "",
    "Options:",
    ...table([["--version", "print the version"], ["-h, --help", "show help (also after a command: baton serve --help)"]]),
    "",
  ].join("\n");
}

async function main(argv: string[]): Promise<number> {
  const first = argv[0];
  if (first === undefined || first === "-h" || first === "--help" || first === "help") {
    process.stdout.write(mainHelp());
    return EXIT.ok;
  }
  if (first === "--version" || first === "-v") {
    process.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  const two = `${first} ${argv[1] ?? ""}`;
  const name = COMMANDS[two] ? two : COMMANDS[first] ? first : null;
  if (name === null) throw unknownCommand(first, argv[1]);
  const command = (await COMMANDS[name]!.load()).default;
  const rest = argv.slice(name.split(" ").length);
  const dashes = rest.indexOf("--");
  const own = dashes === -1 ? rest : rest.slice(0, dashes);
  if (own.includes("--help") || own.includes("-h")) {
    process.stdout.write(renderHelp(command));
    return EXIT.ok;
  }
  return (await command.run(parseInvocation(command, rest))) ?? EXIT.ok;
}

/** The usage error for a command line no command matches, with the closest command when one is near. */
function unknownCommand(first: string, second: string | undefined): UsageError {
  const names = Object.keys(COMMANDS);
  const groups = [...new Set(names.filter((n) => n.includes(" ")).map((n) => n.split(" ")[0]!))];
  if (groups.includes(first)) {
    const subcommands = names.filter((n) => n.startsWith(`${first} `)).map((n) => n.split(" ")[1]!);
    const near = second === undefined ? null : closest(second, subcommands);
    const list = subcommands.length > 1 ? `${subcommands.slice(0, -1).join(", ")} or ${subcommands.at(-1)}` : subcommands.join("");
    return new UsageError(`${first} needs a subcommand: ${list}${near ? ` (did you mean ${first} ${near}?)` : ""}`, true);
  }
  if (first.startsWith("-")) return new UsageError(`unknown option ${first}${didYouMean(first, ["--help", "--version"])}`, true);
  return new UsageError(`unknown command ${JSON.stringify(first)}${didYouMean(first, [...names.filter((n) => !n.includes(" ")), ...groups])}`, true);
}

/** Failures often quote the coordinator (a refusal, a runner's failure reason): made printable. */
function fail(err: unknown): never {
  if (err instanceof UsageError && err.helpHint) {
    process.stderr.write(`baton: ${printable(err.message)}\n(see \`baton ${usagePath()}--help\`)\n`);
  } else if (err instanceof CLIError) {
    process.stderr.write(`baton: ${printable(err.message)}\n`);
  } else if (err instanceof Error && ["CoordinatorError", "UnreachableError", "LeaseHeldError", "LeaseLostError"].includes(err.name)) {
    process.stderr.write(`baton: ${printable(err.message)}\n`);
  } else {
    process.stderr.write(`baton: internal error (please report it): ${printable(err instanceof Error ? (err.stack ?? err.message) : String(err))}\n`);
  }
  return exitFlushed(err instanceof CLIError ? err.exitCode : EXIT.failure);
}

/**
 * Exits once everything written so far reached its reader: a pipe's writes are queued when the
 * reader is slower (seen: `baton show` of a 3 MiB reply cut at 430 KiB by an immediate exit).
 */
function exitFlushed(code: number): never {
  let waiting = 2;
  const done = () => {
    if (--waiting === 0) process.exit(code);
  };
  process.stdout.write("", done);
  process.stderr.write("", done);
  setTimeout(() => process.exit(code), 30_000).unref();
  return undefined as never;
}

function usagePath(): string {
  const [first, second] = process.argv.slice(2);
  if (first && COMMANDS[`${first} ${second}`]) return `${first} ${second} `;
  return first && COMMANDS[first] ? `${first} ` : "";
}

process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
main(process.argv.slice(2)).then(exitFlushed, fail);
