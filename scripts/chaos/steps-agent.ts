// The shell agent of the steps chaos run, written into the run's work dir: `baton` on its PATH (a
// wrapper around the tree's built CLI) and one script that `baton serve` runs per message. The
// script goes through the plan with `baton step NAME -- COMMAND` and `baton effect NAME
// --on-unknown ask|retry [--approve Q --args JSON] -- COMMAND`, napping between them so kills land mid-step, writes a trace
// line (message id, name, attempt, ms) after each result it gets back, and replies with every result in order. Each COMMAND is the
// script itself with `--do NAME`: one ledger line (message id, name, attempt, idempotency key,
// ms, machine), a nap (longer for an effect, as an external call is), and `NAME:ID:ATTEMPT` on stdout, so the journal shows which run recorded it.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PlanItem } from "./steps-invariants.ts";

export interface AgentFiles {
  /** The directory to put first on the served command's PATH. */
  bin: string;
  script: string;
}

/**
 * With `sabotage`, the script ignores the journal for the last step and for the asked effect on
 * every attempt after the first (it runs their commands directly): the checker must report it.
 */
export function writeAgent(dir: string, opts: { cli: string; plan: readonly PlanItem[]; sabotage?: boolean }): AgentFiles {
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  const baton = join(bin, "baton");
  writeFileSync(baton, `#!/bin/sh\nexec "${process.execPath}" "${opts.cli}" "$@"\n`, { mode: 0o755 });
  const script = join(dir, "agent.sh");
  writeFileSync(script, agentScript(opts.plan, opts.sabotage ?? false), { mode: 0o755 });
  return { bin, script };
}

export function agentScript(plan: readonly PlanItem[], sabotage: boolean): string {
  const vars = plan.map((p) => `v_${p.name}`);
  const sabotaged = new Set(sabotage ? [plan.filter((p) => p.kind === "step").at(-1)!.name, plan.find((p) => p.onUnknown === "ask")?.name, plan.find((p) => p.approve)?.name] : []);
  const body = plan.flatMap((p, i) => {
    const approve = p.approve ? ` --approve "Run ${p.name} for message $id?" --args "{\\"message\\":$id,\\"effect\\":\\"${p.name}\\"}"` : "";
    const journaled = p.kind === "step"
      ? `baton step ${p.name} -- sh "$0" --do ${p.name}`
      : `baton effect ${p.name} --on-unknown ${p.onUnknown ?? "ask"}${approve} -- sh "$0" --do ${p.name}`;
    const direct = p.kind === "effect" ? `env BATON_IDEMPOTENCY_KEY="baton:$BATON_AGENT:$id:${p.name}" sh "$0" --do ${p.name}` : `sh "$0" --do ${p.name}`;
    const run = sabotaged.has(p.name)
      ? [`if [ "$BATON_ATTEMPT" -gt 1 ]; then ${vars[i]}=$(${direct}); else ${vars[i]}=$(${journaled}); fi`]
      : [`${vars[i]}=$(${journaled})`];
    return [...run, `echo "$id ${p.name} $BATON_ATTEMPT $(date +%s%3N)" >> "$CHAOS_TRACE"`, `sleep "$CHAOS_NAP"`];
  });
  return [
    "#!/bin/sh",
    "# One message of `npm run chaos -- --mode steps` (written by scripts/chaos/steps-agent.ts).",
    "set -e",
    "id=$BATON_MESSAGE_ID",
    'if [ "$1" = "--do" ]; then',
    '  echo "$id $2 $BATON_ATTEMPT ${BATON_IDEMPOTENCY_KEY:--} $(date +%s%3N) $BATON_MACHINE" >> "$CHAOS_LEDGER"',
    `  case "$2" in ${plan.filter((p) => p.kind === "effect").map((p) => p.name).join("|")}) sleep "$CHAOS_EFFECT_NAP" ;; *) sleep "$CHAOS_NAP" ;; esac`,
    `  printf '%s:%s:%s' "$2" "$id" "$BATON_ATTEMPT"`,
    "  exit 0",
    "fi",
    ...body,
    `echo "${vars.map((v) => `$${v}`).join(" ")}"`,
    "",
  ].join("\n");
}
