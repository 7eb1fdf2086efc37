// The `baton` command: a thin entry that loads one file per subcommand on demand.
import { defineCommand, runMain } from "citty";
import { CLIError } from "./errors.ts";

const main = defineCommand({
  meta: { name: "baton", description: "Lease coordinator for AI agents: exactly one machine runs each agent." },
  subCommands: {
    serve: () => import("./commands/serve.ts").then((m) => m.default),
    who: () => import("./commands/who.ts").then((m) => m.default),
  },
});

process.on("uncaughtException", (err) => {
  if (err instanceof CLIError) {
    process.stderr.write(`baton: ${err.message}\n`);
    process.exit(err.exitCode);
  }
  throw err;
});

await runMain(main);
