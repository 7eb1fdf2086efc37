// `baton cancel AGENT ID [--reason TEXT]`: stops a message wherever it is. Queued or parked, it
// ends `cancelled` at once and never runs; running, its runner is told to stop (`baton serve`
// stops the command's tree: docs/architecture.md#stopping-a-command) and nothing that run writes afterwards is kept.
// Cancelling again prints the first cancel, unchanged; a message that already ended is refused.
import { cancel } from "../../client/cancel.ts";
import { CoordinatorError } from "../../client/errors.ts";
import type { MessageView } from "../../worker/wire/http-responses.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { CLIError, UsageError } from "../lib/errors.ts";
import { agentName } from "../lib/names.ts";
import { printable } from "../lib/printable.ts";
import { tokenLabel } from "../lib/token-label.ts";

/** What a cancel did, for people: who cancelled, why, and the effects left with an unknown outcome. */
export function describeCancel(agent: string, m: MessageView): string {
  const c = m.cancelled;
  if (!c) return `message ${m.id} of ${agent}: ${m.status}\n`;
  const why = c.reason ? `: ${printable(c.reason)}` : "";
  const unknown = c.unknown_effects.length === 0 ? "" : `\n  outcome unknown (it may or may not have happened; never run again): ${c.unknown_effects.join(", ")}`;
  return `message ${m.id} of ${agent} cancelled by ${tokenLabel(c.token)} (${c.via}) at ${new Date(c.at).toISOString()}${why}; it will not run again${unknown}\n`;
}

export default defineCommand({
  path: ["cancel"],
  summary: "Cancel a message: queued or parked it never runs; running, its run is stopped. Final.",
  positionals: [
    { name: "AGENT", description: "agent name", required: true },
    { name: "ID", description: "message id", required: true },
  ],
  options: {
    reason: { type: "string", value: "TEXT", description: "why, kept with the message and told to its runner (at most 1000 characters)" },
  },
  exitCodes: [{ code: 1, meaning: "the message does not exist, ended before the cancel (acknowledged, failed, rejected), or the token may not cancel (scope answer)" }],
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const id = numberOption(args[1]!, "ID", { min: 1, max: Number.MAX_SAFE_INTEGER, integer: true });
    if (options.reason !== undefined && options.reason.length > 1000) throw new UsageError("--reason is at most 1000 characters");
    let m: MessageView;
    try {
      m = await cancel(agent, id, resolveConnection(options), { ...(options.reason === undefined ? {} : { reason: options.reason }), via: "cli" });
    } catch (error) {
      if (error instanceof CoordinatorError && error.code === "message_finished") throw new CLIError(`cannot cancel: ${error.message}`);
      throw error;
    }
    process.stdout.write(options.json ? `${JSON.stringify(m)}\n` : describeCancel(agent, m));
  },
});
