// docs/reference/cli.md: `baton --help` as the CLI prints it, then each command's `--help`, rendered
// by the same renderHelp the CLI calls, from the command definitions in cli/commands/*.ts, in the
// order `baton --help` lists them. A listed command without a definition (or the reverse) fails.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { renderHelp, type Command } from "../../cli/lib/command.ts";
import { generatedHeader } from "./markdown.ts";

export const CLI_PAGE = "docs/reference/cli.md";
const ROOT = join(import.meta.dirname, "../..");

function isCommand(value: unknown): value is Command {
  return typeof value === "object" && value !== null && Array.isArray((value as Command).path) && typeof (value as Command).run === "function";
}

/** Every command defined in cli/commands/*.ts, by its path ("lease run"). */
export async function definedCommands(): Promise<Map<string, Command>> {
  const byName = new Map<string, Command>();
  for (const file of readdirSync(join(ROOT, "cli/commands")).filter((f) => f.endsWith(".ts")).sort()) {
    const module = (await import(join(ROOT, "cli/commands", file))) as Record<string, unknown>;
    for (const value of Object.values(module)) if (isCommand(value)) byName.set(value.path.join(" "), value);
  }
  return byName;
}

function mainHelp(): string {
  const run = spawnSync(join(ROOT, "node_modules/.bin/tsx"), ["cli/main.ts", "--help"], { cwd: ROOT, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`baton --help exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}

export async function cliPage(): Promise<string> {
  const main = mainHelp();
  const listed = main.slice(main.indexOf("Commands:\n") + 10, main.indexOf("\n\n", main.indexOf("Commands:\n")))
    .split("\n").map((line) => line.trim().split(/\s{2,}/)[0]!);
  const defined = await definedCommands();
  const unlisted = [...defined.keys()].filter((name) => !listed.includes(name));
  const undefinedOnes = listed.filter((name) => !defined.has(name));
  if (unlisted.length || undefinedOnes.length) throw new Error(`scripts/docs/cli-help.ts: listed without a definition: ${undefinedOnes.join(", ") || "none"}; defined but not listed: ${unlisted.join(", ") || "none"}`);
  const fence = (text: string) => ["```", text.trimEnd(), "```"];
  return [
    generatedHeader("scripts/docs/cli-help.ts", "the CLI's own help (`baton --help`, `baton COMMAND --help`)"),
    "# CLI reference",
    "",
    "Every command also takes `--url`, `--token` and `--json` (below under each), reads `BATON_URL` and",
    "`BATON_TOKEN`, then what `baton login` stored; against a loopback URL with nothing else it uses the",
    "dev token. Options go before `--`; everything after it belongs to COMMAND. A mistyped command or",
    "option gets the closest one offered (`baton sned` → `did you mean send?`, exit 2).",
    "`BATON_CONNECT_TIMEOUT_SECONDS` (0.1 to 300, default 10) bounds how long a connection to the",
    "coordinator, TLS included, may take to come up.",
    "",
    ...fence(main),
    "",
    ...listed.flatMap((name) => [`## baton ${name}`, "", ...fence(renderHelp(defined.get(name)!)), ""]),
  ].join("\n");
}
