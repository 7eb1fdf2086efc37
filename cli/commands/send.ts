// `baton send AGENT TEXT [--wait]`: posts a message for the agent; with --wait, prints its reply.
import { defineCommand } from "citty";
import { apiOk } from "../lib/api.ts";
import { resolveConnection } from "../lib/config.ts";
import { CLIError } from "../lib/errors.ts";
import type { MessageView } from "./history.ts";

export default defineCommand({
  meta: { name: "send", description: "Send a message to an agent; --wait prints the reply" },
  args: {
    agent: { type: "positional", required: true, description: "agent name" },
    text: { type: "positional", required: true, description: "message text ('-' reads stdin)" },
    wait: { type: "boolean", description: "wait for the reply and print it" },
    timeout: { type: "string", default: "300", description: "seconds to wait with --wait" },
    json: { type: "boolean", description: "print JSON" },
    url: { type: "string", description: "coordinator URL (env BATON_URL)" },
  },
  async run({ args }) {
    const conn = resolveConnection({ url: args.url });
    const text = args.text === "-" ? await readStdin() : args.text;
    const agent = encodeURIComponent(args.agent);
    const sent = await apiOk<MessageView>(conn, "POST", `/agents/${agent}/messages`, { text });
    if (!args.wait) {
      process.stdout.write(args.json ? `${JSON.stringify(sent)}\n` : `sent message ${sent.id} to ${args.agent}\n`);
      return;
    }
    const deadline = Date.now() + Number(args.timeout) * 1000;
    for (;;) {
      const m = await apiOk<MessageView>(conn, "GET", `/agents/${agent}/messages/${sent.id}`);
      if (m.status === "acknowledged") {
        process.stdout.write(args.json ? `${JSON.stringify(m)}\n` : (m.reply ?? ""));
        return;
      }
      if (Date.now() > deadline) throw new CLIError(`no reply to message ${sent.id} within ${args.timeout} s (status ${m.status})`, 2);
      await new Promise((r) => setTimeout(r, 200));
    }
  },
});

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
