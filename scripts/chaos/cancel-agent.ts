// The shell agent of the cancel chaos run, written into the run's work dir: `baton` on its PATH (a
// wrapper around the tree's built CLI) and one script that `baton serve` runs per message. It goes
// through the steps run's plan with `baton step` and `baton effect`, and after each call appends a
// call line (message id, name, attempt, end ms, start ms, exit code), so a write that began after
// a cancel can be told from one that raced it. Each COMMAND appends a ledger line as in the steps
// run; an effect's command then posts to the fenced sink (its message token as the fence, the
// coordinator's idempotency key as the key) and fails unless the sink accepted it. The effect's
// command only starts once `baton effect` has recorded its intent, which a cancelled run is refused.
// Every third message's script is stubborn: it ignores SIGTERM and goes on after a call killed by a
// signal, so a stopped run still tries its next writes within serve's --grace (they must be refused),
// and its effects' calls to the sink ignore SIGTERM too, so one stopped mid-call lands after the cancel.
// With `sabotage`, every run is stubborn, and one whose call was killed runs the rest of its plan without the
// journal (its effects straight to the sink, under a key of its own): the checker must report it.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PlanItem } from "./steps-invariants.ts";

export interface AgentFiles {
  /** The directory to put first on the served command's PATH. */
  bin: string;
  script: string;
}

export function writeCancelAgent(dir: string, opts: { cli: string; plan: readonly PlanItem[]; sabotage?: boolean }): AgentFiles {
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "baton"), `#!/bin/sh\nexec "${process.execPath}" "${opts.cli}" "$@"\n`, { mode: 0o755 });
  const script = join(dir, "agent.sh");
  writeFileSync(script, cancelAgentScript(opts.plan, opts.sabotage ?? false), { mode: 0o755 });
  return { bin, script };
}

export function cancelAgentScript(plan: readonly PlanItem[], sabotage = false): string {
  const vars = plan.map((p) => `v_${p.name}`);
  const effects = plan.filter((p) => p.kind === "effect").map((p) => p.name);
  const body = plan.flatMap((p, i) => {
    const call = p.kind === "step"
      ? `baton step ${p.name} -- sh "$0" --do ${p.name}`
      : `baton effect ${p.name} --on-unknown ${p.onUnknown ?? "ask"} -- sh "$0" --do ${p.name}`;
    const journaled = [
      "s=$(date +%s%3N)",
      `if ${vars[i]}=$(${call}); then rc=0; else rc=$?; fi`,
      `echo "$id ${p.name} $BATON_ATTEMPT $(date +%s%3N) $s $rc" >> "$CHAOS_CALLS"`,
      `[ "$rc" -eq 0 ] || { [ -n "$stubborn" ] && [ "$rc" -gt 128 ]; } || exit "$rc"`,
      ...(sabotage ? ['[ "$rc" -gt 128 ] && bypass=1'] : []),
    ];
    const bypassed = `${vars[i]}=$(BATON_IDEMPOTENCY_KEY="bypass:$id:${p.name}" sh "$0" --do ${p.name})`;
    return [
      ...(sabotage ? [`if [ -n "$bypass" ]; then ${bypassed}; else`, ...journaled.map((l) => `  ${l}`), "fi"] : journaled),
      `sleep "$CHAOS_NAP"`,
    ];
  });
  const offer = `{"message_id":%s,"key":"%s","fence":%s,"attempt":%s,"instance":"%s","scope":%s}`;
  return [
    "#!/bin/sh",
    "# One message of `npm run chaos -- --mode cancel` (written by scripts/chaos/cancel-agent.ts).",
    "id=$BATON_MESSAGE_ID",
    "stubborn=",
    `[ $((id % ${sabotage ? 1 : 3})) -eq 0 ] && stubborn=1`,
    'if [ "$1" = "--do" ]; then',
    '  echo "$id $2 $BATON_ATTEMPT ${BATON_IDEMPOTENCY_KEY:--} $(date +%s%3N) $BATON_MACHINE" >> "$CHAOS_LEDGER"',
    `  case "$2" in`,
    `    ${effects.join("|")})`,
    // A stubborn run's external call is not interrupted: stopped mid-call, it lands after the cancel.
    `      [ -n "$stubborn" ] && trap "" TERM`,
    `      sleep "$CHAOS_EFFECT_NAP"`,
    `      body=$(printf '${offer}' "$id" "$BATON_IDEMPOTENCY_KEY" "$BATON_MESSAGE_TOKEN" "$BATON_ATTEMPT" "$BATON_MACHINE" "$id")`,
    `      code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data "$body" "$CHAOS_SINK_URL/effect") || exit 1`,
    `      [ "$code" = 200 ] || exit 3 ;;`,
    `    *) sleep "$CHAOS_NAP" ;;`,
    "  esac",
    `  printf '%s:%s:%s' "$2" "$id" "$BATON_ATTEMPT"`,
    "  exit 0",
    "fi",
    "bypass=",
    '[ -n "$stubborn" ] && trap "" TERM',
    ...body,
    `echo "${vars.map((v) => `$${v}`).join(" ")}"`,
    "",
  ].join("\n");
}
