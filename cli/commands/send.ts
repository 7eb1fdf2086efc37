// `baton send AGENT TEXT [--wait]`: posts a message for the agent; with --wait, prints its reply,
// saying so when nobody serves the agent (the message then waits in the queue).
import { requestJson, type Connection } from "../../client/http.ts";
import { replyText } from "../../client/run-journal.ts";
import { messageViewSchema, presenceSchema } from "../../worker/wire/http-responses.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { CLIError, UsageError } from "../lib/errors.ts";
import { agentName } from "../lib/names.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";

export const SEND_EXIT = { noReply: 3, failed: 4 } as const;
const POLL_MS = 250;
const PRESENCE_EVERY_MS = 5000;

export default defineCommand({
  path: ["send"],
  summary: "Send a message to an agent. With --wait, print the reply once the serving machine has run it.",
  positionals: [
    { name: "AGENT", description: "agent name", required: true },
    { name: "TEXT", description: "message text ('-' reads stdin)", required: true },
  ],
  options: {
    wait: { type: "boolean", description: "wait for the reply and print it" },
    timeout: { type: "string", value: "SECONDS", description: "with --wait, give up after this long (0.1-86400; default 300)" },
    group: { type: "string", value: "KEY", description: "messages with the same group (a conversation) run one at a time, in order" },
    "run-timeout": { type: "string", value: "SECONDS", description: "take the message back from a run that is not done by then (default: the agent's)" },
  },
  exitCodes: [
    { code: SEND_EXIT.noReply, meaning: "with --wait: no reply within --timeout (the message stays queued)" },
    { code: SEND_EXIT.failed, meaning: "with --wait: the message failed (every attempt allowed was used; the reason is printed)" },
  ],
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const timeoutS = options.timeout === undefined ? 300 : numberOption(options.timeout, "timeout", { min: 0.1, max: 86_400, unit: "seconds" });
    if (options.timeout !== undefined && !options.wait) throw new UsageError("--timeout only applies with --wait");
    const text = args[1] === "-" ? await readStdin() : args[1]!;
    if (text === "") throw new UsageError("the message text is empty");
    const conn = resolveConnection(options);
    const { min, max } = LIMITS.runTimeoutSeconds;
    const body = {
      text,
      ...(options.group === undefined ? {} : { group: options.group }),
      ...(options["run-timeout"] === undefined ? {} : { run_timeout_seconds: numberOption(options["run-timeout"], "run-timeout", { min, max, unit: "seconds" }) }),
    };
    const sent = await requestJson(conn, "POST", `/agents/${agent}/messages`, messageViewSchema, { body });
    if (!options.wait) {
      process.stdout.write(options.json ? `${JSON.stringify(sent)}\n` : `sent message ${sent.id} to ${agent}\n`);
      return;
    }
    const deadline = performance.now() + timeoutS * 1000;
    let served = await isServed(conn, agent);
    if (!served) process.stderr.write(`baton: nobody serves ${agent} right now; message ${sent.id} waits in its queue until \`baton serve ${agent}\` runs (waiting up to ${timeoutS} s)\n`);
    let presenceAt = performance.now();
    for (;;) {
      const m = await requestJson(conn, "GET", `/agents/${agent}/messages/${sent.id}`, messageViewSchema);
      if (m.status === "acknowledged") {
        process.stdout.write(options.json ? `${JSON.stringify(m)}\n` : ((await replyText(conn, agent, m)) ?? ""));
        return;
      }
      if (m.status === "failed") {
        if (options.json) process.stdout.write(`${JSON.stringify(m)}\n`);
        const why = m.error ? `: ${m.error}` : "";
        throw new CLIError(`message ${sent.id} failed after ${m.attempts} attempt${m.attempts === 1 ? "" : "s"}${why}`, SEND_EXIT.failed);
      }
      if (performance.now() >= deadline) {
        const why = served ? "" : `; nobody serves ${agent}`;
        throw new CLIError(`no reply to message ${sent.id} within ${timeoutS} s (status ${m.status}${why})`, SEND_EXIT.noReply);
      }
      if (performance.now() - presenceAt >= PRESENCE_EVERY_MS) {
        presenceAt = performance.now();
        const now = await isServed(conn, agent);
        if (now && !served) process.stderr.write(`baton: ${agent} is served now; waiting for the reply\n`);
        if (!now && served) process.stderr.write(`baton: nobody serves ${agent} any more; message ${sent.id} waits in its queue\n`);
        served = now;
      }
      await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - performance.now()))));
    }
  },
});

async function isServed(conn: Connection, agent: string): Promise<boolean> {
  const presence = await requestJson(conn, "GET", `/agents/${agent}/presence`, presenceSchema);
  return presence.serve_candidates > 0;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
