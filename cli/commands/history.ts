// `baton history AGENT [--after ID]`: the agent's messages with status, attempts and replies.
import { defineCommand } from "citty";
import { apiOk } from "../lib/api.ts";
import { resolveConnection } from "../lib/config.ts";

export interface MessageView {
  id: number;
  text: string;
  status: "queued" | "delivered" | "acknowledged";
  attempts: number;
  created_at: number;
  acked_at: number | null;
  acked_fence: number | null;
  reply: string | null;
}

export default defineCommand({
  meta: { name: "history", description: "List an agent's messages: status, attempts, replies" },
  args: {
    agent: { type: "positional", required: true, description: "agent name" },
    after: { type: "string", default: "0", description: "only messages after this id (a cursor)" },
    limit: { type: "string", default: "100", description: "at most this many" },
    json: { type: "boolean", description: "print JSON" },
    url: { type: "string", description: "coordinator URL (env BATON_URL)" },
  },
  async run({ args }) {
    const conn = resolveConnection({ url: args.url });
    const page = await apiOk<{ messages: MessageView[]; cursor: number }>(
      conn, "GET", `/agents/${encodeURIComponent(args.agent)}/messages?after=${Number(args.after)}&limit=${Number(args.limit)}`);
    if (args.json) {
      process.stdout.write(`${JSON.stringify(page)}\n`);
      return;
    }
    if (page.messages.length === 0) {
      process.stdout.write(`no messages for ${args.agent} after ${args.after}\n`);
      return;
    }
    for (const m of page.messages) {
      const reply = m.reply === null ? "" : `  -> ${oneLine(m.reply)}`;
      process.stdout.write(`${String(m.id).padStart(5)}  ${m.status.padEnd(12)} attempts ${m.attempts}  ${oneLine(m.text)}${reply}\n`);
    }
    process.stdout.write(`cursor ${page.cursor}\n`);
  },
});

function oneLine(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
