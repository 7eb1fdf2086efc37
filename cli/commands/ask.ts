// `baton ask QUESTION [--choices a,b] [--deadline S] [--on-deadline fail|approve|reject|escalate]`:
// inside a command `baton serve` runs, asks a person. The first time, it stores the question under
// the run's token and exits 75, which parks the message with it; when a person answers, the command
// runs again from the top, and this time `baton ask` prints the choice (the text is in
// BATON_RESUME_INPUT, the choice also in BATON_RESUME_CHOICE) and exits 0. A rejected message
// never runs again. Scripts write `choice=$(baton ask …) || exit $?`: an assignment alone does not
// stop on 75 (the coordinator refuses to finish a run whose question is open, and serve parks it).
import { requestJson } from "../../client/http.ts";
import { ON_DEADLINE } from "../../worker/wire/enums.ts";
import { LIMITS, questionSchema } from "../../worker/wire/protocol.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { createHash } from "node:crypto";
import { CLIError, UsageError } from "../lib/errors.ts";
import { PARK_EXIT_CODE } from "../lib/serve-handler.ts";
import { answerHint } from "../lib/next-steps.ts";
import { writeText } from "../lib/printable.ts";
import { currentRun, stepName } from "./step.ts";
import * as z from "zod/mini";
import { plainChoices } from "../../client/person-question.ts";
import { routePath } from "../../worker/wire/routes.ts";

const asked = z.object({ id: z.number(), token: z.number() });

export default defineCommand({
  path: ["ask"],
  summary: "Inside a served command: ask a person and park; once answered, print the choice.",
  positionals: [{ name: "QUESTION", description: "what the person must decide", required: true }],
  options: {
    choices: { type: "string", value: "A,B", description: "what the person picks from; reject is always offered besides them (default: approve or reject)" },
    deadline: { type: "string", value: "SECONDS", description: "if nobody answers by then, --on-deadline decides" },
    "on-deadline": { type: "string", value: "ACTION", description: "fail (default), approve, reject, or escalate (notify again and wait)" },
    needs: { type: "string", value: "N", description: "approvals from N distinct people (tokens) decide approve (default 1); any one reject rejects unless --reject-needs" },
    approvers: { type: "string", value: "A,B", description: "only these token names may answer" },
    "reject-needs": { type: "string", value: "N", description: "rejects from N distinct people decide reject (default 1)" },
    name: { type: "string", value: "NAME", description: "the journal name the answer is kept under (default: ask: and a hash of the question and its choices)" },
  },
  exitCodes: [
    { code: 0, meaning: "answered: the choice is printed" },
    { code: PARK_EXIT_CODE, meaning: "asked: the question is stored, and this exit code parks the message (serve does it)" },
  ],
  async run({ args, options }) {
    const run = currentRun("ask", options);
    const choices = options.choices === undefined ? undefined : questionChoices(options.choices);
    // Each question its own journal name, so a second question is never answered with the first one's answer.
    const name = stepName(options.name ?? `ask:${createHash("sha256").update(JSON.stringify([args[0], choices ?? null])).digest("hex").slice(0, 16)}`);
    const onDeadline = options["on-deadline"];
    if (onDeadline !== undefined && !(ON_DEADLINE as readonly string[]).includes(onDeadline)) throw new UsageError(`--on-deadline takes ${ON_DEADLINE.join(", ")}`);
    if (onDeadline !== undefined && options.deadline === undefined) throw new UsageError("--on-deadline needs --deadline");
    const { min, max } = LIMITS.parkDeadlineSeconds;
    const deadline = options.deadline === undefined ? undefined : numberOption(options.deadline, "deadline", { min, max, integer: true, unit: "seconds" });
    const question = questionSchema.safeParse({
      text: args[0], step: name,
      ...(choices === undefined ? {} : { choices }),
      ...(onDeadline === undefined ? {} : { on_deadline: onDeadline }),
      ...quorumOptions(options),
    });
    if (!question.success) throw new UsageError(`bad question: ${z.prettifyError(question.error)}`);
    const answered = await run.get(name);
    // Only the coordinator's answer path writes a record of kind answer: anything else under this name is no person's answer.
    if (answered && answered.kind !== "answer") throw new CLIError(`"${name}" is recorded as ${answered.kind === "step" ? "a step" : "an effect"}, not as a person's answer; give this question its own --name`);
    if (answered?.status === "done") {
      const value = answered.value as { choice?: unknown } | null;
      const choice = typeof value?.choice === "string" ? value.choice : "";
      if (!(choices ?? ["approve"]).includes(choice)) {
        throw new CLIError(`the answer kept under ${name} (${JSON.stringify(choice)}) is not one this question offers; give each question its own --name`);
      }
      process.stdout.write(`${choice}\n`);
      return;
    }
    const { agent, id, token, runKey } = run.proof;
    await requestJson(run.connection, "POST", routePath("/agents/{agent}/messages/{id}/ask", { agent, id }), asked, {
      body: { token, run_key: runKey, question: question.data, ...(deadline === undefined ? {} : { deadline_seconds: deadline }) },
    });
    writeText(`baton: asked a person: ${question.data.text}; message ${id} parks until someone answers (${answerHint(agent, id, choices ?? [])})\n`, process.stderr);
    return PARK_EXIT_CODE;
  },
});

/** `--choices` as a person plainly meant them (client/person-question.ts plainChoices): `approve,reject` is the plain approve-or-reject question. */
export function questionChoices(raw: string): string[] | undefined {
  return plainChoices(raw.split(",").map((c) => c.trim()).filter((c) => c !== ""));
}

/** --needs, --reject-needs and --approvers as the question's fields (the schema checks them together). */
function quorumOptions(options: { needs?: string; "reject-needs"?: string; approvers?: string }) {
  const count = (raw: string | undefined, name: string) => raw === undefined ? undefined : numberOption(raw, name, { min: 1, max: LIMITS.approvers, integer: true });
  const needs = count(options.needs, "needs");
  const rejectNeeds = count(options["reject-needs"], "reject-needs");
  const approvers = options.approvers?.split(",").map((a) => a.trim()).filter((a) => a !== "");
  return { ...(needs === undefined ? {} : { needs }), ...(rejectNeeds === undefined ? {} : { reject_needs: rejectNeeds }), ...(approvers === undefined ? {} : { approvers }) };
}
