// The `baton` command: a thin entry that loads one file per subcommand on demand.
import { defineCommand, runCommand, runMain } from "citty";
import { CLIError } from "./lib/errors.ts";

const main = defineCommand({
  meta: { name: "baton", description: "Lease coordinator for AI agents: exactly one machine runs each agent." },
  subCommands: {
    serve: () => import("./commands/serve.ts").then((m) => m.default),
    who: () => import("./commands/who.ts").then((m) => m.default),
    send: () => import("./commands/send.ts").then((m) => m.default),
    history: () => import("./commands/history.ts").then((m) => m.default),
    lease: () => import("./commands/lease.ts").then((m) => m.default),
    login: () => import("./commands/login.ts").then((m) => m.default),
  },
});

process.on("uncaughtException", (err) => {
  if (err instanceof CLIError) {
    process.stderr.write(`baton: ${err.message}\n`);
    process.exit(err.exitCode);
  }
  throw err;
});

// Help flags after `--` belong to the served COMMAND, so only the part before it is checked.
const rawArgs = process.argv.slice(2);
const dashes = rawArgs.indexOf("--");
const ownArgs = dashes === -1 ? rawArgs : rawArgs.slice(0, dashes);
if (ownArgs.length === 0 || ownArgs.some((a) => a === "--help" || a === "-h")) {
  await runMain(main, { rawArgs: ownArgs.length === 0 ? ["--help"] : ownArgs });
} else {
  try {
    await runCommand(main, { rawArgs });
  } catch (err) {
    if (err instanceof CLIError) {
      process.stderr.write(`baton: ${err.message}\n`);
      process.exit(err.exitCode);
    }
    // citty's own usage errors (unknown command, missing argument) are user mistakes too.
    if (err instanceof Error && err.name === "CLIError") {
      const known = (err as Error & { code?: string }).code !== "E_UNKNOWN_COMMAND";
      process.stderr.write(`baton: ${err.message} (see \`baton ${known ? `${ownArgs[0]} ` : ""}--help\`)\n`);
      process.exit(1);
    }
    throw err;
  }
}
