// `baton heartbeat [DETAILS]`: inside a command `baton serve` started, tells the coordinator the
// run is alive and keeps DETAILS (JSON, or text) as its progress, shown by `baton show`. serve
// already heartbeats for its command while it lives; this is for the progress, and for commands
// that outlive nothing but want their deadline confirmed.
import { LIMITS } from "../../worker/wire/protocol.ts";
import { defineCommand } from "../lib/command.ts";
import { currentRun } from "./step.ts";

export default defineCommand({
  path: ["heartbeat"],
  summary: "Inside a served command: the run is alive; DETAILS are kept as its progress. Prints the run's deadline.",
  positionals: [{ name: "DETAILS", description: `progress as JSON, or plain text (at most ${LIMITS.progressBytes} bytes)`, required: false }],
  options: {},
  async run({ args, options }) {
    const run = currentRun("heartbeat", options);
    const raw = args[0];
    const details = raw === undefined ? undefined : parseDetails(raw);
    const beat = await run.heartbeat(details);
    const deadline = beat.expires_at === null ? "none" : new Date(beat.expires_at).toISOString();
    process.stdout.write(options.json ? `${JSON.stringify(beat)}\n` : `message ${beat.id} runs until ${deadline}\n`);
  },
});

function parseDetails(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}
