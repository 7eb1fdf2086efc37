// `baton drain AGENT [--machine LABEL]` and `baton undrain AGENT [--machine LABEL]`: take a machine
// out of an agent's serve line for maintenance without killing a run, and put it back.
import { drain, undrain, type AgentControls } from "../../client/controls.ts";
import { writeText } from "../lib/printable.ts";
import { defineCommand } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";

const machine = { type: "string", value: "LABEL", description: "the machine label (as in `baton who`)" } as const;

export default defineCommand({
  path: ["drain"],
  summary: "Drain a machine (default: the holder's): it finishes the message it runs, hands the lease on and stays connected " +
    "without taking work until undrained. Draining the last machine leaves messages queued.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: { machine },
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const answer = await drain(agent, resolveConnection(options), options.machine);
    if (options.json) process.stdout.write(`${JSON.stringify(answer)}\n`);
    else writeText(describe(answer));
  },
});

export const undrainCommand = defineCommand({
  path: ["undrain"],
  summary: "Undrain a machine (default: every drained machine of the agent): it may hold the lease and take work again.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: { machine },
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const answer = await undrain(agent, resolveConnection(options), options.machine);
    if (options.json) process.stdout.write(`${JSON.stringify(answer)}\n`);
    else writeText(describe(answer));
  },
});

export function describe(c: AgentControls): string {
  const drained = c.drained.length === 0 ? "no machine drained" : `drained: ${c.drained.map((d) => d.machine).join(", ")}`;
  return `${c.agent}: ${drained}${c.paused ? "; paused" : ""}${c.changed ? "" : " (unchanged)"}\n`;
}
