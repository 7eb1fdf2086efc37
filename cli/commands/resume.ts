// `baton resume AGENT ID [TEXT]`: queues a parked message again; it is handed out with attempt + 1,
// its checkpoint, and TEXT as the resume input (env BATON_RESUME_INPUT for the served command).
// A message parked because an effect's outcome is unknown needs the person's answer: --done (it
// happened; TEXT is recorded as its outcome) or --redo (run it again).
import { requestJson } from "../../client/http.ts";
import { messageViewSchema } from "../../worker/wire/http-responses.ts";
import { unknownOutcomeReason } from "../../worker/wire/protocol.ts";
import { writeText } from "../lib/printable.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { UsageError } from "../lib/errors.ts";
import { agentName } from "../lib/names.ts";
import { routePath } from "../../worker/wire/routes.ts";

export default defineCommand({
  path: ["resume"],
  summary: "Resume a parked message: it runs again (attempt + 1) from its checkpoint, with TEXT as its resume input.",
  positionals: [
    { name: "AGENT", description: "agent name", required: true },
    { name: "ID", description: "id of the parked message", required: true },
    { name: "TEXT", description: "the input to resume with, e.g. an approval (env BATON_RESUME_INPUT for the command)", required: false },
  ],
  options: {
    done: { type: "boolean", description: "the effect whose outcome was unknown happened: it is recorded done (with TEXT as its outcome) and not run again" },
    redo: { type: "boolean", description: "the effect whose outcome was unknown did not happen: the next attempt runs it again" },
  },
  exitCodes: [{ code: 1, meaning: "the message does not exist, is not parked, or needs --done or --redo (not_found, not_parked, outcome_unknown)" }],
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const id = numberOption(args[1]!, "ID", { min: 1, max: Number.MAX_SAFE_INTEGER, integer: true });
    if (options.done && options.redo) throw new UsageError("--done and --redo exclude each other", true);
    const outcome = options.done ? "done" : options.redo ? "redo" : undefined;
    const body = { ...(args[2] === undefined ? {} : { input: args[2] }), ...(outcome === undefined ? {} : { outcome }) };
    const m = await requestJson(resolveConnection(options), "POST", routePath("/agents/{agent}/messages/{id}/resume", { agent, id }), messageViewSchema, { body, headers: { "x-baton-via": "cli" } });
    if (options.json) process.stdout.write(`${JSON.stringify(m)}\n`);
    else if (m.status === "parked" && m.waiting_on !== null) {
      // Several effects were left unknown: each is answered in turn.
      writeText(`answered; message ${m.id} of ${agent} still waits: ${unknownOutcomeReason(m.waiting_on)}: baton resume ${agent} ${m.id} --done [OUTCOME] | --redo\n`);
    } else writeText(`resumed message ${m.id} of ${agent}: ${m.status}\n`);
  },
});
