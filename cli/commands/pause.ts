// `baton pause AGENT` and `baton unpause AGENT`: stop handing out an agent's messages (they queue,
// the lease stays where it is), and start again.
import { pause, unpause } from "../../client/controls.ts";
import { defineCommand } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";
import { describe } from "./drain.ts";

export default defineCommand({
  path: ["pause"],
  summary: "Pause an agent: nothing is handed out, messages queue, the lease stays; a run in progress finishes.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: {},
  async run({ args, options }) {
    const answer = await pause(agentName(args[0]!), resolveConnection(options));
    process.stdout.write(options.json ? `${JSON.stringify(answer)}\n` : describe(answer));
  },
});

export const unpauseCommand = defineCommand({
  path: ["unpause"],
  summary: "Unpause an agent: queued messages are handed to the holder again.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: {},
  async run({ args, options }) {
    const answer = await unpause(agentName(args[0]!), resolveConnection(options));
    process.stdout.write(options.json ? `${JSON.stringify(answer)}\n` : describe(answer));
  },
});
