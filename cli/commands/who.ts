// `baton who [AGENT] [--watch]`: who holds each agent's serve lease and who stands by. Without
// AGENT, every agent with connections (the coordinator's directory, GET /agents).
import { requestJson, type Connection } from "../../client/http.ts";
import { agentListSchema, agentWhoListSchema, presenceSchema } from "../../worker/wire/http-responses.ts";
import { defineCommand } from "../lib/command.ts";
import { printable, writeText } from "../lib/printable.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";
import { renderPresence, type PresenceReport } from "../lib/presence-table.ts";
import { REPEAT_MS } from "../lib/status-line.ts";
import { onTermination } from "../lib/termination.ts";
import { routePath } from "../../worker/wire/routes.ts";

export default defineCommand({
  path: ["who"],
  summary: "Show the holder and standbys of an agent, or of every agent with connections.",
  positionals: [{ name: "AGENT", description: "agent name (omit for every agent)", required: false }],
  options: {
    watch: { type: "boolean", description: "redraw on every change (follows the coordinator's observer socket); Ctrl-C to stop" },
  },
  async run({ args, options }) {
    const agent = args[0] === undefined ? undefined : agentName(args[0]);
    const conn = resolveConnection(options);
    if (!options.watch) {
      const reports = await load(conn, agent, options.json);
      if (options.json) process.stdout.write(`${JSON.stringify(agent ? reports[0] : { agents: reports }, null, 2)}\n`);
      else writeText(render(reports));
      return;
    }
    await watch(conn, agent, options.json);
  },
});

async function watch(conn: Connection, agent: string | undefined, json: boolean): Promise<void> {
  const tty = !json && process.stdout.isTTY === true;
  const show = (text: string): void => {
    process.stdout.write(tty ? `\x1b[H\x1b[2J${new Date().toLocaleTimeString()}  (live; Ctrl-C to stop)\n\n${text}` : text);
  };
  const showTable = (text: string): void => show(printable(text));
  let lastReason = "";
  let lastSaidAt = -Infinity;
  let failing = false;
  // Loaded only here: the WebSocket stack is a noticeable share of a one-shot `baton who`'s start.
  const { observe } = await import("../../client/node.ts");
  const handle = observe({
    ...conn,
    onChange(all) {
      const reports = agent ? all.filter((a) => a.agent === agent) : all;
      if (json) return show(`${JSON.stringify(agent ? reports[0] ?? null : { agents: reports })}\n`);
      showTable(agent && reports.length === 0 ? `${agent}: no connections\n` : render(reports));
    },
    onStatus(status) {
      if (status.kind === "connecting") {
        process.stderr.write(`baton who: connecting to ${conn.url}\n`);
        return;
      }
      if (status.kind === "following") {
        if (failing) process.stderr.write(`baton who: connected to ${conn.url}\n`);
        failing = false;
        return;
      }
      failing = true;
      const t = performance.now();
      if (status.reason === lastReason && t - lastSaidAt < REPEAT_MS) return;
      lastReason = status.reason;
      lastSaidAt = t;
      writeText(`baton who: ${status.reason}; retrying in ${(status.delayMs / 1000).toFixed(1)} s\n`, process.stderr);
    },
  });
  const stopWatching = onTermination(() => void handle.stop(), { watchParent: true });
  try {
    await handle.done;
  } finally {
    stopWatching();
  }
}

function render(reports: PresenceReport[]): string {
  if (reports.length === 0) return "no agent has serve connections or waiting messages\n";
  return reports.map((p) => renderPresence(p)).join("\n");
}

/**
 * Presence of one agent, or of every agent the directory lists: for the table only what it prints
 * (`?view=who`); for --json everything.
 */
async function load(conn: Connection, agent: string | undefined, full: boolean): Promise<PresenceReport[]> {
  if (agent) return [await requestJson(conn, "GET", routePath("/agents/{agent}/presence", { agent }), presenceSchema)];
  if (full) return (await requestJson(conn, "GET", routePath("/agents"), agentListSchema)).agents;
  return (await requestJson(conn, "GET", `${routePath("/agents")}?view=who`, agentWhoListSchema)).agents;
}
