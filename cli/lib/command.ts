// One argument parser configuration for every command: node:util's parseArgs in strict mode, so
// unknown options, missing values and extra arguments are usage errors (exit 2); every command
// takes --url, --token, --json and --help the same way; help shows the full command path, the
// `-- COMMAND` part where there is one, and the exit codes. No colour anywhere.
import { parseArgs } from "node:util";
import { COMMON_EXIT_CODES, type ExitCodeDoc } from "./exit-codes.ts";
import { UsageError } from "./errors.ts";
import { didYouMean } from "./suggest.ts";
import { DEFAULT_URL } from "./config.ts";

export interface OptionSpec {
  type: "string" | "boolean";
  description: string;
  /** Shown after the flag in help, e.g. SECONDS. */
  value?: string;
}

export interface PositionalSpec {
  name: string;
  description: string;
  required: boolean;
  /** Values of this shape may begin with "-" (a grant id is base64url): such a word is this argument, never an option. */
  dashed?: RegExp;
}

type Values<O extends Record<string, OptionSpec>> = {
  [K in keyof O]: O[K]["type"] extends "boolean" ? boolean : string | undefined;
};

const COMMON_OPTIONS = {
  url: { type: "string", value: "URL", description: `coordinator URL (env BATON_URL, then \`baton login\`; default ${DEFAULT_URL})` },
  token: { type: "string", value: "TOKEN", description: "bearer token (env BATON_TOKEN, then `baton login`); visible in ps, prefer the others" },
  json: { type: "boolean", description: "machine-readable JSON output" },
} as const satisfies Record<string, OptionSpec>;

export interface Invocation<O extends Record<string, OptionSpec>> {
  /** Positionals in declared order (undefined for an omitted optional one). */
  args: (string | undefined)[];
  options: Values<O & typeof COMMON_OPTIONS>;
  /** The words after `--`, for commands that declare `rest`. */
  rest: string[];
}

export interface Command<O extends Record<string, OptionSpec> = Record<string, OptionSpec>> {
  /** Words after `baton`, e.g. ["lease", "run"]. */
  path: string[];
  summary: string;
  positionals: PositionalSpec[];
  /** Declares `-- NAME...`: everything after the first `--` is handed over untouched. */
  rest?: { name: string; description: string };
  options: O;
  /** Exit codes beyond the common ones (0, 1, 2). */
  exitCodes?: ExitCodeDoc[];
  /** Resolves with the exit code (0 when nothing is returned). */
  run(invocation: Invocation<O>): Promise<number | void>;
}

export function defineCommand<O extends Record<string, OptionSpec>>(command: Command<O>): Command<O> {
  return command;
}

/** Parses `argv` (the words after the command path) for `command`; throws UsageError on any mistake. */
export function parseInvocation<O extends Record<string, OptionSpec>>(command: Command<O>, argv: string[]): Invocation<O> {
  const dashes = argv.indexOf("--");
  const own = dashes === -1 || !command.rest ? argv : argv.slice(0, dashes);
  const rest = dashes === -1 || !command.rest ? [] : argv.slice(dashes + 1);
  const options = { ...COMMON_OPTIONS, ...command.options };
  // Every option is long (--name), so a word with one leading dash that a positional's shape takes is that positional.
  const dashed = command.positionals.flatMap((p) => (p.dashed ? [p.dashed] : []));
  const held: string[] = [];
  const words = own.map((w) => (/^-[^-]/.test(w) && dashed.some((re) => re.test(w)) ? `\u0000${held.push(w) - 1}` : w));
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: words,
      options: Object.fromEntries(Object.entries(options).map(([name, spec]) => [name, { type: spec.type }])),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(usageMessage(err, Object.keys(options).map((name) => `--${name}`)), true);
  }
  parsed.positionals = parsed.positionals.map((w) => (w.startsWith("\u0000") ? held[Number(w.slice(1))]! : w));
  const max = command.positionals.length;
  if (parsed.positionals.length > max) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[max])}${command.rest ? ` (a command to run goes after --)` : ""}`, true);
  }
  command.positionals.forEach((p, i) => {
    if (p.required && parsed.positionals[i] === undefined) throw new UsageError(`missing ${p.name}`, true);
  });
  if (command.rest && rest.length === 0) throw new UsageError(`missing ${command.rest.name} after --`, true);
  const values = Object.fromEntries(Object.entries(options).map(([name, spec]) => [
    name, spec.type === "boolean" ? parsed.values[name] === true : parsed.values[name],
  ]));
  return { args: command.positionals.map((_, i) => parsed.positionals[i]), options: values as Values<O & typeof COMMON_OPTIONS>, rest };
}

/** `known`: the command's options, for "did you mean" after an unknown one. */
function usageMessage(err: unknown, known: string[]): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string }).code;
  const flag = message.match(/'(-[^' ]+)/)?.[1];
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && flag) return `unknown option ${flag}${didYouMean(flag.split("=")[0]!, [...known, "--help"])}`;
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && flag) {
    return message.includes("does not take an argument") ? `${flag} takes no value` : `${flag} needs a value`;
  }
  return message;
}

/** The synopsis line: `baton lease run SESSION [options] -- COMMAND [ARGS...]`. */
function synopsis(command: Command): string {
  const words = ["baton", ...command.path];
  for (const p of command.positionals) words.push(p.required ? p.name : `[${p.name}]`);
  words.push("[options]");
  if (command.rest) words.push("--", command.rest.name);
  return words.join(" ");
}

export function renderHelp(command: Command): string {
  const lines = [`Usage: ${synopsis(command)}`, "", command.summary, ""];
  const args = [...command.positionals.map((p) => [p.name, p.description]), ...(command.rest ? [[command.rest.name, command.rest.description]] : [])];
  if (args.length) lines.push("Arguments:", ...table(args), "");
  const options = Object.entries({ ...command.options, ...COMMON_OPTIONS }).map(([name, spec]: [string, OptionSpec]) =>
    [`--${name}${spec.value ? ` ${spec.value}` : ""}`, spec.description]);
  options.push(["-h, --help", "show this help"]);
  lines.push("Options:", ...table(options), "");
  lines.push("Exit codes:", ...table(exitCodes(command).map((c) => [String(c.code), c.meaning])));
  return `${lines.join("\n")}\n`;
}

/** The common exit codes with the command's own (which may restate one), numbers first. */
export function exitCodes(command: Command): ExitCodeDoc[] {
  const byCode = new Map<number | string, ExitCodeDoc>();
  for (const doc of [...COMMON_EXIT_CODES, ...(command.exitCodes ?? [])]) byCode.set(doc.code, doc);
  const rank = (c: number | string) => (typeof c === "number" ? c : Infinity);
  return [...byCode.values()].sort((a, b) => rank(a.code) - rank(b.code));
}

export function table(rows: string[][]): string[] {
  const width = Math.max(...rows.map((r) => r[0]!.length));
  return rows.map(([left, right]) => `  ${left!.padEnd(width)}  ${right}`);
}

/** A number from a flag, or a UsageError naming the flag, the range and what was given. */
export function numberOption(raw: string, flag: string, range: { min: number; max: number; integer?: boolean; unit?: string }): number {
  const value = Number(raw);
  const unit = range.unit ? ` ${range.unit}` : "";
  if (raw.trim() === "" || !Number.isFinite(value) || value < range.min || value > range.max || (range.integer && !Number.isInteger(value))) {
    throw new UsageError(`--${flag} must be ${range.integer ? "a whole number" : "a number"}${unit ? ` of${unit}` : ""} between ${range.min} and ${range.max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}
