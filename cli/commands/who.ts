// `baton who [AGENT]`: who holds each agent's serve lease and who stands by. Without AGENT, every
// agent with connections (the coordinator's directory, GET /agents).
import { defineCommand } from "citty";
import { resolveConnection, type Connection } from "../lib/config.ts";
import { CLIError } from "../lib/errors.ts";
import { renderPresence, type PresenceReport } from "../lib/presence-table.ts";
import { watch } from "../lib/who-watch.ts";
import { AGENT_NAME } from "../../worker/wire/protocol.ts";

export const WATCH_INTERVAL_MS = 1000;

export default defineCommand({
  meta: { name: "who", description: "Show the holder and standbys of an agent (or of every agent with connections)." },
  args: {
    agent: { type: "positional", description: "Agent name (omit for every agent)", required: false },
    url: { type: "string", description: "Coordinator URL (env BATON_URL; default http://127.0.0.1:8787)" },
    token: { type: "string", description: "Bearer token (env BATON_TOKEN or `baton login`)" },
    json: { type: "boolean", description: "Print JSON (one document; one line per refresh with --watch)" },
    watch: { type: "boolean", description: "Redraw on every change (observer socket; polls every second on older coordinators)" },
  },
  async run({ args }) {
    const agent = args.agent ? String(args.agent) : undefined;
    if (agent !== undefined && !AGENT_NAME.test(agent)) {
      throw new CLIError(`bad agent name ${JSON.stringify(agent)}: 1-63 chars of a-z, 0-9, '.', '_' or '-', starting with a letter or digit`);
    }
    const conn = resolveConnection({ url: args.url, token: args.token });
    const json = Boolean(args.json);
    if (!args.watch) {
      const reports = await load(conn, agent);
      process.stdout.write(json ? `${JSON.stringify(agent ? reports[0] : { agents: reports }, null, 2)}\n` : render(reports));
      return;
    }
    const tty = !json && process.stdout.isTTY === true;
    const show = (text: string): void => {
      process.stdout.write(tty ? `\x1b[H\x1b[2J${new Date().toLocaleTimeString()}  (live; Ctrl-C to stop)\n\n${text}` : text);
    };
    const draw = (reports: PresenceReport[]): void => {
      if (json) return show(`${JSON.stringify(agent ? reports[0] ?? null : { agents: reports })}\n`);
      show(agent && reports.length === 0 ? `${agent}: no connections\n` : render(reports));
    };
    await watch({
      conn, agent, draw, pollIntervalMs: WATCH_INTERVAL_MS,
      poll: async () => {
        try {
          draw(await load(conn, agent));
        } catch (err) {
          if (err instanceof CLIError && err.message.startsWith("unauthorized")) throw err;
          show(json ? `${JSON.stringify({ error: (err as Error).message })}\n` : `${(err as Error).message}\n`);
        }
      },
    });
  },
});

function render(reports: PresenceReport[]): string {
  if (reports.length === 0) return "no agent has serve connections\n";
  return reports.map((p) => renderPresence(p)).join("\n");
}

/** Presence of one agent, or of every agent the directory lists. */
async function load(conn: Connection, agent: string | undefined): Promise<PresenceReport[]> {
  const path = agent ? `/agents/${encodeURIComponent(agent)}/presence` : "/agents";
  const body = await getJson(conn, path);
  if (agent) return [body as PresenceReport];
  const agents = (body as { agents?: unknown }).agents;
  if (!Array.isArray(agents)) throw new Error(`unexpected answer from ${conn.url}/agents`);
  return agents as PresenceReport[];
}

async function getJson(conn: Connection, path: string): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${conn.url}${path}`, { headers: { authorization: `Bearer ${conn.token}` } });
  } catch (err) {
    throw new CLIError(`cannot reach the coordinator at ${conn.url}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`);
  }
  const text = await res.text();
  if (res.status === 401) throw new CLIError(`unauthorized: ${conn.url} refused the token (run \`baton login\` or set BATON_TOKEN)`);
  if (res.status === 404 && path === "/agents") throw new CLIError(`${conn.url} has no agent directory (GET /agents); name an agent: baton who AGENT`);
  if (!res.ok) throw new CLIError(`${conn.url}${path} answered ${res.status}: ${text.slice(0, 200)}`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CLIError(`${conn.url}${path} did not answer JSON`);
  }
}
