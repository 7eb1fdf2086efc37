// `baton show AGENT ID`: one message in full: its text, status, attempts, who runs or ran it, its
// reply, why it failed, its checkpoint and resume input, its steps, and the question a person must
// answer when an effect's outcome is unknown.
import { requestJson } from "../../client/http.ts";
import { replyText } from "../../client/run-journal.ts";
import { printable, writeText } from "../lib/printable.ts";
import { answerCommands } from "../lib/next-steps.ts";
import { messageViewSchema, type MessageView, type QuestionQuorum } from "../../worker/wire/http-responses.ts";
import { unknownOutcomeReason } from "../../worker/wire/protocol.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";
import { routePath } from "../../worker/wire/routes.ts";
import { tokenLabel } from "../lib/token-label.ts";

export default defineCommand({
  path: ["show"],
  summary: "Show one message in full: text, status, attempts, the runner, the reply or why it failed, its checkpoint.",
  positionals: [
    { name: "AGENT", description: "agent name", required: true },
    { name: "ID", description: "message id", required: true },
  ],
  options: {},
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const id = numberOption(args[1]!, "ID", { min: 1, max: Number.MAX_SAFE_INTEGER, integer: true });
    const conn = resolveConnection(options);
    const m = await requestJson(conn, "GET", routePath("/agents/{agent}/messages/{id}", { agent, id }), messageViewSchema);
    if (options.json) {
      process.stdout.write(`${JSON.stringify(m)}\n`);
      return;
    }
    const at = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());
    const lines = [
      `message ${m.id} of ${agent}: ${m.status}, ${m.attempts} attempt${m.attempts === 1 ? "" : "s"}${countedOf(m)}`,
      `  posted      ${at(m.created_at)}${m.group ? `, group ${m.group}` : ""}`,
      ...(m.status === "running" ? [`  running     on claim ${m.claim_seq} under token ${m.token}, taken back at ${at(m.expires_at)}`] : []),
      ...(m.status === "running" && m.heartbeat_at !== null ? [`  heartbeat   ${at(m.heartbeat_at)}${m.progress === null ? "" : `, progress ${brief(m.progress)}`}`] : []),
      ...(m.status === "parked" && m.waiting_on !== null
        ? [`  parked      ${unknownOutcomeReason(m.waiting_on)}: did it happen? baton resume ${agent} ${m.id} --done [OUTCOME] | --redo`]
        : []),
      ...(m.status === "parked" && m.waiting_on === null
        ? [`  parked      ${m.question?.text ? (m.question.text === m.text ? "asks a person (the text below)" : `asks: ${printable(m.question.text)}`) : "for approval"}${m.expires_at ? `, until ${at(m.expires_at)} (then ${m.question?.on_deadline ?? "fail"})` : ", with no deadline"}`,
          ...(m.question?.approve ? [`  approves    effect ${m.question.approve.effect} with ${printable(m.question.approve.args)} (sha256 ${m.question.approve.digest}), once`] : []),
          ...(m.question?.quorum ? [`  needs       ${quorumLine(m.question.quorum)}`] : []),
          `  answer      ${answerCommands(agent, m.id, m.question?.choices ?? []).join(" | ")}`]
        : []),
      ...(m.status === "rejected" ? ["  rejected    it will not run again"] : []),
      ...(m.status === "cancelled" ? ["  cancelled   final: it will not run again"] : []),
      ...(m.status === "superseded" ? [`  superseded  by message ${m.superseded_by ?? "?"} of its group before it started (on_busy replace): it will not run`] : []),
      ...(m.cancelled?.unknown_effects.length ? [`  unknown     outcome of ${m.cancelled.unknown_effects.join(", ")}: begun, never recorded as done; not run again`] : []),
      ...m.answers.map((a) => `  ${a.choice === "cancel" ? "cancelled   " : "answered    "}${at(a.at)}${a.choice === "cancel" ? "" : ` ${printable(a.choice)}`}${a.text ? ` ${JSON.stringify(a.text)}` : ""} by ${tokenLabel(a.token)} (${a.account}, ${a.via})`),
      ...(m.status === "queued" && m.retry_at ? [`  retried     from ${at(m.retry_at)}`] : []),
      ...(m.status === "acknowledged" ? [`  done        ${at(m.acked_at)}${doneBy(m)}`] : []),
      ...(m.error ? [`  ${m.status === "failed" ? "failed     " : "last error "} ${m.error}`] : []),
      ...(m.resume_input !== null ? [`  resumed with ${brief(m.resume_input)}`] : []),
      ...(m.checkpoint !== null ? [`  checkpoint  ${brief(m.checkpoint)}`] : []),
      ...(m.checkpoint_blob !== null ? [`  checkpoint  ${m.checkpoint_blob.bytes} B in R2 (blob ${m.checkpoint_blob.id})`] : []),
      ...(m.steps.length > 0 ? [`  steps       ${m.steps.map(describeStep).join(", ")}`] : []),
      ...(m.output_dropped === "agent_budget" ? ["  output dropped: agent budget (the agent's stored output passed BATON_OUTPUT_BYTES_PER_AGENT; the oldest finished messages' output goes first)"] : []),
      ...(m.output_dropped === "message_budget" ? ["  output dropped: its oldest bytes, past the message's budget (BATON_OUTPUT_BYTES_PER_MESSAGE)"] : []),
      ...(m.permits ?? []).map((p) => `  permit      ${p.effect} sha256 ${p.digest.slice(0, 16)}… approved by ${tokenLabel(p.by.token)} (${p.by.account}, ${p.by.via}), ${p.spent_token === null ? "not spent" : `spent by token ${p.spent_token}`}`),
      "  text",
      ...m.text.split("\n").map((l) => `    ${l}`),
    ];
    const reply = await replyText(conn, agent, m);
    // A question's reply is its answer as JSON, which the answered line above already says.
    if (reply !== null && m.for_person === true && m.answers.length > 0) lines.push("  reply       the answer above (--json shows the record)");
    else if (reply !== null) lines.push("  reply", ...reply.replace(/\n$/, "").split("\n").map((l) => `    ${l}`));
    writeText(`${lines.join("\n")}\n`);
  },
});

/** Longest JSON shown whole on one line; a longer value (an Agents SDK RunState is kilobytes) is cut, with its size. */
export const BRIEF_CHARS = 160;

/** A stored value as one short line: its JSON, or its start and size (`--json` shows all). */
export function brief(value: unknown): string {
  const json = JSON.stringify(value);
  if (json.length <= BRIEF_CHARS) return json;
  return `${json.slice(0, BRIEF_CHARS)}… (${Buffer.byteLength(json)} B of JSON; --json shows all)`;
}

/** Who acknowledged it: a run's token and fence, or, for a question, the answer itself. */
function doneBy(m: MessageView): string {
  if (m.acked_token !== null) return ` under token ${m.acked_token}${m.acked_fence === null ? "" : ` (fence ${m.acked_fence})`}`;
  return m.answers.length > 0 ? ", by the answer above (no run)" : "";
}

/** "plan (step, done by attempt 1, 24 B)"; an effect begun with no outcome is "outcome unknown". */
function describeStep(s: MessageView["steps"][number]): string {
  return `${s.name} (${s.kind}, ${s.status === "done" ? `done by attempt ${s.attempt}, ${s.bytes} B` : `begun by attempt ${s.attempt}, outcome unknown`})`;
}

/** Who has answered a question several people decide, and who has not: "2 approvals (1 so far: alice); waiting for bob, carol". */
function quorumLine(q: QuestionQuorum): string {
  const answered = q.answered.map((a) => `${a.choice} by ${tokenLabel(a.token)}`).join(", ");
  const rejects = q.reject_needs > 1 ? `, ${q.reject_needs} rejects to reject (${q.rejections} so far)` : ", any one reject rejects";
  const waiting = q.waiting_for?.length ? `; waiting for ${q.waiting_for.map(tokenLabel).join(", ")}` : "";
  return `${q.needs} approvals from distinct people (${q.approvals} so far${answered ? `: ${answered}` : ""})${rejects}${waiting}`;
}

/**
 * " (retried after 3, 2 failed, 1 declined since)": the attempts before a person's latest retry,
 * attempts that failed, and hand-outs since the retry a stopping runner gave back unstarted (neither
 * of the first nor of the last counts against max attempts).
 */
function countedOf(m: { failures: number; declined?: number | undefined; retried_after?: number | undefined }): string {
  const said = [
    m.retried_after ? `retried after ${m.retried_after}` : "", m.failures ? `${m.failures} failed` : "",
    m.declined ? `${m.declined} declined${m.retried_after ? " since" : ""}` : "",
  ].filter(Boolean);
  return said.length === 0 ? "" : ` (${said.join(", ")})`;
}
