// `baton pause AGENT` and `baton unpause AGENT`: stop handing out an agent's messages (they queue,
// the lease stays where it is), and start again.
import { pause, unpause } from "../../client/controls.ts";
import { writeText } from "../lib/printable.ts";
import { defineCommand } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";
import type { AgentControls } from "../../worker/wire/http-responses.ts";

/** What pause and unpause did, in words about pausing (drains are `baton drain`'s business). */
function describePause(c: AgentControls): string {
  const state = c.paused ? "paused: messages queue, nothing is handed out; a run in progress finishes" : "unpaused: queued messages are handed out again";
  return `${c.agent}: ${state}${c.changed ? "" : ` (it was already ${c.paused ? "paused" : "unpaused"})`}\n`;
}

export default defineCommand({
  path: ["pause"],
  summary: "Pause an agent: nothing is handed out, messages queue, the lease stays; a run in progress finishes.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: {},
  async run({ args, options }) {
    const answer = await pause(agentName(args[0]!), resolveConnection(options));
    if (options.json) process.stdout.write(`${JSON.stringify(answer)}\n`);
    else writeText(describePause(answer));
  },
});

export const unpauseCommand = defineCommand({
  path: ["unpause"],
  summary: "Unpause an agent: queued messages are handed to the holder again.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: {},
  async run({ args, options }) {
    const answer = await unpause(agentName(args[0]!), resolveConnection(options));
    if (options.json) process.stdout.write(`${JSON.stringify(answer)}\n`);
    else writeText(describePause(answer));
  },
});
