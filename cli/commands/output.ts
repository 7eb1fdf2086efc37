// `baton output [TEXT]`: inside a command `baton serve` started, adds TEXT (or, without it, all
// of stdin as it comes) to the message's live output, under the run's token and run key
// (BATON_* as `baton step` uses). Batched like ctx.output; refused once the run no longer holds
// the message. serve already streams the command's own stdout and stderr: this is for output
// that goes elsewhere (an LLM's tokens, a log file followed with tail -f).
import { systemClock } from "../../client/core/clock.ts";
import { OutputBatcher } from "../../client/core/output-batcher.ts";
import { OUTPUT_STREAMS, type OutputStream } from "../../worker/wire/output.ts";
import { defineCommand } from "../lib/command.ts";
import { UsageError } from "../lib/errors.ts";
import { currentRun } from "./step.ts";

export default defineCommand({
  path: ["output"],
  summary: "Inside a served command: add TEXT (or stdin, as it comes) to the message's live output.",
  positionals: [{ name: "TEXT", description: "text to add (default: read stdin to its end)", required: false }],
  options: {
    stream: { type: "string", value: "NAME", description: "mark it as stdout, stderr or text (default text)" },
  },
  async run({ args, options }) {
    const run = currentRun("output", options);
    const stream = (options.stream ?? "text") as OutputStream;
    if (!(OUTPUT_STREAMS as readonly string[]).includes(stream)) throw new UsageError(`--stream is one of ${OUTPUT_STREAMS.join(", ")}`);
    let refused: unknown = null;
    const batcher = new OutputBatcher(async (chunks) => {
      try {
        return await run.output(chunks);
      } catch (err) {
        refused ??= err;
        throw err;
      }
    }, systemClock);
    if (args[0] !== undefined) await batcher.write(args[0], stream);
    else for await (const chunk of process.stdin) await batcher.write(new Uint8Array(chunk as Buffer), stream);
    await batcher.flush();
    if (refused !== null) throw refused;
  },
});
