// `baton logs AGENT ID [--follow] [--from SEQ]`: a message's live output (what its runs wrote to
// stdout and stderr, or with ctx.output), with each attempt and takeover said in place; --follow
// keeps reading until the message is final, resuming by itself after a dropped connection.
import { readOutput } from "../../client/output.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";
import { OutputPrinter } from "../lib/output-printer.ts";
import { UsageError } from "../lib/errors.ts";

export default defineCommand({
  path: ["logs"],
  summary: "Print a message's live output: stdout, stderr and text its runs wrote, with each attempt said in place.",
  positionals: [
    { name: "AGENT", description: "agent name", required: true },
    { name: "ID", description: "message id", required: true },
  ],
  options: {
    follow: { type: "boolean", description: "keep printing as the run writes, until the message is final" },
    from: { type: "string", value: "SEQ", description: "start after this event (the seq --json prints; default: from the start)" },
  },
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const id = Number(args[1]);
    if (!Number.isInteger(id) || id < 1) throw new UsageError(`message id must be a whole number from 1, got ${JSON.stringify(args[1])}`);
    const from = options.from === undefined ? 0 : numberOption(options.from, "from", { min: 0, max: Number.MAX_SAFE_INTEGER, unit: "" });
    if (!Number.isInteger(from)) throw new UsageError("--from is the seq of an event: a whole number");
    const printer = new OutputPrinter();
    const stop = new AbortController();
    process.once("SIGINT", () => stop.abort());
    try {
      for await (const event of readOutput(resolveConnection(options), agent, id, { from, follow: options.follow === true, signal: stop.signal })) {
        if (options.json) process.stdout.write(`${JSON.stringify(event)}\n`);
        else printer.print(event);
      }
    } catch (err) {
      if (!stop.signal.aborted) throw err;
    }
  },
});
