// `baton approve AGENT ID [TEXT]`, `baton reject AGENT ID [REASON]`, `baton answer AGENT ID CHOICE
// [TEXT]` and `baton retry AGENT ID`: a person's side of a parked (or failed) message. Approve or a
// choice runs it again with TEXT as its resume input; reject ends it as `rejected`. The coordinator
// keeps who answered (account, token name, "cli"). Answering twice, or after the deadline, is 409.
import { answer, approve, reject, retry } from "../../client/answers.ts";
import type { MessageView } from "../../worker/wire/http-responses.ts";
import { quorumTally } from "../../worker/wire/quorum-tally.ts";
import { writeText } from "../lib/printable.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";

const REFUSED = { code: 1, meaning: "the message does not exist, is not waiting for an answer (answered already, or its deadline passed), or the choice is not one it offers" };
const positionals = [
  { name: "AGENT", description: "agent name", required: true },
  { name: "ID", description: "message id", required: true },
] as const;

function describe(agent: string, m: MessageView, did: string): string {
  // Answered while a runner is free, it is handed out at once: the view then shows the attempt that runs.
  const then = m.status === "rejected" ? "it will not run again"
    // A question several people decide stays parked until enough of them answered.
    : m.status === "parked" && m.question?.quorum ? `${quorumTally(m.question.quorum)}; it still waits`
    : m.status === "parked" ? "it still waits"
    : m.status === "running" ? `it runs again now (attempt ${m.attempts})`
    : m.status === "queued" ? `it runs again (attempt ${m.attempts + 1})`
    // A question asked on its own (an MCP host's ask) ends with its answer: the answer is its reply.
    : m.status === "acknowledged" ? "done, with the answer as its reply"
    : null;
  return `${did} message ${m.id} of ${agent}: ${m.status}${then === null ? "" : `; ${then}`}\n`;
}

function print(options: { json?: boolean }, agent: string, m: MessageView, did: string): void {
  if (options.json) process.stdout.write(`${JSON.stringify(m)}\n`);
  else writeText(describe(agent, m, did));
}

function target(args: readonly (string | undefined)[]): { agent: string; id: number } {
  return { agent: agentName(args[0]!), id: numberOption(args[1]!, "ID", { min: 1, max: Number.MAX_SAFE_INTEGER, integer: true }) };
}

export default defineCommand({
  path: ["approve"],
  summary: "Approve a parked message: it runs again, with TEXT as its resume input.",
  positionals: [...positionals, { name: "TEXT", description: "what the next attempt gets (BATON_RESUME_INPUT)", required: false }],
  options: {},
  exitCodes: [REFUSED],
  async run({ args, options }) {
    const { agent, id } = target(args);
    print(options, agent, await approve(agent, id, resolveConnection(options), { text: args[2], via: "cli" }), "approved");
  },
});

export const rejectCommand = defineCommand({
  path: ["reject"],
  summary: "Reject a parked message: it ends as rejected and never runs again.",
  positionals: [...positionals, { name: "REASON", description: "why, kept with the answer", required: false }],
  options: {},
  exitCodes: [REFUSED],
  async run({ args, options }) {
    const { agent, id } = target(args);
    print(options, agent, await reject(agent, id, resolveConnection(options), { text: args[2], via: "cli" }), "rejected");
  },
});

export const answerCommand = defineCommand({
  path: ["answer"],
  summary: "Answer a parked message's question with one of its choices (approve or reject when it offers none).",
  positionals: [...positionals, { name: "CHOICE", description: "one of the question's choices", required: true }, { name: "TEXT", description: "what the next attempt gets", required: false }],
  options: {},
  exitCodes: [REFUSED],
  async run({ args, options }) {
    const { agent, id } = target(args);
    print(options, agent, await answer(agent, id, args[2]!, resolveConnection(options), { text: args[3], via: "cli" }), `answered ${JSON.stringify(args[2])} to`);
  },
});

export const retryCommand = defineCommand({
  path: ["retry"],
  summary: "Retry a failed message: it is queued again with a fresh set of tries (max attempts counts from here; its attempt numbers go on).",
  positionals: [...positionals],
  options: {},
  exitCodes: [{ code: 1, meaning: "the message does not exist or has not failed" }],
  async run({ args, options }) {
    const { agent, id } = target(args);
    print(options, agent, await retry(agent, id, resolveConnection(options), { via: "cli" }), "retried");
  },
});
