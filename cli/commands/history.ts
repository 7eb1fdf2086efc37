// `baton history AGENT [--after ID] [--limit N]`: the agent's messages with status, attempts and replies.
import { requestJson } from "../../client/http.ts";
import { messagePageSchema } from "../../worker/wire/http-responses.ts";
import { printable, writeText } from "../lib/printable.ts";
import { answerHint } from "../lib/next-steps.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";
import { LIMITS, unknownOutcomeReason } from "../../worker/wire/protocol.ts";
import { routePath } from "../../worker/wire/routes.ts";
import { tokenLabel } from "../lib/token-label.ts";

const MAX_LIMIT = 1000;

export default defineCommand({
  path: ["history"],
  summary: "List an agent's messages: status, attempts, replies.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: {
    after: { type: "string", value: "ID", description: "only messages after this id (the cursor printed last time; default 0)" },
    limit: { type: "string", value: "N", description: `at most this many (1-${MAX_LIMIT}; default 100); a page also ends at ${LIMITS.historyPageMessages} messages or ${LIMITS.historyPageBytes / 1024} KiB` },
  },
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const after = options.after === undefined ? 0 : numberOption(options.after, "after", { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true });
    const limit = options.limit === undefined ? 100 : numberOption(options.limit, "limit", { min: 1, max: MAX_LIMIT, integer: true });
    const page = await requestJson(resolveConnection(options), "GET", `${routePath("/agents/{agent}/messages", { agent })}?after=${after}&limit=${limit}`, messagePageSchema);
    if (options.json) {
      process.stdout.write(`${JSON.stringify(page)}\n`);
      return;
    }
    let shortened = false;
    if (page.messages.length === 0) {
      writeText(`no messages for ${agent} after ${after}\n`);
      return;
    }
    for (const m of page.messages) {
      const resume = m.waiting_on !== null
        ? `${unknownOutcomeReason(m.waiting_on)}: baton resume ${agent} ${m.id} --done | --redo`
        : `${m.question?.text && m.question.text !== m.text ? `asks: ${printable(oneLine(m.question.text, 60))}; ` : ""}${answerHint(agent, m.id, m.question?.choices ?? [])}`;
      const lease = m.status === "running" ? ` token ${m.token}` : m.status === "parked" ? ` (${resume})` : "";
      const where = m.machine === null ? "" : ` on ${m.machine}`;
      writeText(`${String(m.id).padStart(5)}  ${m.status.padEnd(12)} attempts ${m.attempts}${attemptNotes(m)}${where}${lease}  ${oneLine(m.text)}\n`);
      if (m.steps.length > 0) writeText(`       steps: ${oneLine(m.steps.map((s) => `${s.name} ${s.status === "done" ? "done" : "unknown"}`).join(", "), REPLY_CHARS)}\n`);
      for (const a of m.answers) writeText(`       ${a.choice === "cancel" ? "cancelled" : `answered ${printable(a.choice)}`}${a.text ? ` ${JSON.stringify(oneLine(a.text, 60))}` : ""} by ${tokenLabel(a.token)} (${a.account}, ${a.via}) at ${new Date(a.at).toISOString()}\n`);
      // A question's reply is its answer as JSON: the answered line above says it.
      if (m.reply !== null && !(m.for_person === true && m.answers.length > 0)) writeText(`       reply: ${oneLine(m.reply, REPLY_CHARS)}\n`);
      if (m.reply_blob !== null) {
        writeText(`       reply: ${m.reply_blob.bytes} bytes, kept in R2\n`);
        shortened = true;
      }
      // Why it failed, or why its last attempt did while it is tried again.
      if (m.error && (m.status === "failed" || m.status === "queued")) {
        const again = m.status === "queued" && m.retry_at !== null ? ` (tried again from ${new Date(m.retry_at).toISOString()})` : "";
        writeText(`       ${m.status === "failed" ? "failed" : "last attempt failed"}: ${oneLine(m.error, REPLY_CHARS)}${again}\n`);
      }
      if (cut(m.text, TEXT_CHARS) || cut(m.reply ?? "", REPLY_CHARS) || cut(m.error ?? "", REPLY_CHARS)) shortened = true;
    }
    if (shortened) writeText(`(texts cut with …: \`baton show ${agent} ID\` prints one message whole)\n`);
    // A page ends at its count or its bytes (LIMITS.historyPage*), whichever comes first.
    writeText(page.more ? `cursor ${page.cursor} (more: baton history ${agent} --after ${page.cursor})\n` : `cursor ${page.cursor}\n`);
  },
});

const TEXT_CHARS = 60;
const REPLY_CHARS = 200;

function cut(text: string, max: number): boolean {
  return text.replace(/\s+/g, " ").trim().length > max;
}

function oneLine(text: string, max = TEXT_CHARS): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** " (retried after 3, 1 declined)": the attempts before a person's latest retry, and those since given back unstarted. */
function attemptNotes(m: { declined?: number | undefined; retried_after?: number | undefined }): string {
  const said = [m.retried_after ? `retried after ${m.retried_after}` : "", m.declined ? `${m.declined} declined` : ""].filter(Boolean);
  return said.length === 0 ? "" : ` (${said.join(", ")})`;
}
