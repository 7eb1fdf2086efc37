// How the steps chaos run (scripts/chaos/steps.ts) reads its end: each message's final view with its
// journal, and the tally, summary and invariants as terminal text and as a markdown block for
// docs/chaos.md.
import { loadavg } from "node:os";
import { markdownTable } from "../bench/stats.ts";
import { invariantLines } from "./report.ts";
import type { FinalMessage, Invariant, JournalRecord, StepsTally } from "./steps-invariants.ts";

export type ReadJson = <T>(path: string) => Promise<T>;

/** The kills the driver made, (of them) while the machine was running a message. */
export interface KillCounts {
  kills: number;
  killedBusy: number;
}

/** What the report names beside the tally: the run's command, tree, seed and fleet. */
export interface StepsRunInfo {
  revision: string;
  seed: number;
  servers: number;
  policy: string;
  pool: boolean;
  concurrency: string;
  startedAt: number;
  load0: number;
}

/** Each message's final view with its journal, and the value of every record. */
export async function finalMessages(json: ReadJson, agent: string, ids: readonly number[]): Promise<FinalMessage[]> {
  const out: FinalMessage[] = [];
  for (const id of ids) {
    const m = await json<FinalMessage>(`/agents/${agent}/messages/${id}`);
    const steps: JournalRecord[] = [];
    for (const s of m.steps) {
      const record = s.status === "done" ? await json<{ value: unknown; blob: unknown }>(`/agents/${agent}/messages/${id}/steps/${s.name}`) : null;
      steps.push({ name: s.name, kind: s.kind, status: s.status, attempt: s.attempt, at: s.at, on_unknown: s.on_unknown, ...(record ? { value: record.value } : {}) });
    }
    out.push({ id: m.id, status: m.status, attempts: m.attempts, declined: m.declined ?? 0, retried_after: m.retried_after ?? 0, reply: m.reply, waiting_on: m.waiting_on, steps, permits: m.permits ?? [] });
  }
  return out;
}

function tallyTable(t: StepsTally, counts: KillCounts): string {
  return markdownTable(
    ["messages", "acknowledged", "parked on a person", "attempts", "re-attempted", "kills (busy)", "steps run", "run again before recorded", "steps replayed", "effects run", "effects replayed", "unknown → asked (done / redo)", "reruns, same key (retry / redo)", "approvals (approved runs)"],
    [[
      String(t.sent), String(t.acknowledged), String(t.waiting), String(t.attempts), String(t.reattempted), `${counts.kills} (${counts.killedBusy})`,
      String(t.stepsRun), String(t.stepsInterrupted), String(t.stepsReplayed), String(t.effectsRun), String(t.effectsReplayed),
      `${t.askedDone + t.askedRedo} (${t.askedDone} / ${t.askedRedo})`, `${t.retriedReruns} / ${t.redoReruns}`, `${t.approvals} (${t.approvedRuns})`,
    ]],
  );
}

/** Prints the tally, summary and invariants, then the same as markdown. */
export function printStepsReport(tally: StepsTally, invariants: Invariant[], counts: KillCounts, run: StepsRunInfo): void {
  const took = Math.round((Date.now() - run.startedAt) / 1000);
  const command = ["npm run chaos -- --mode steps", ...process.argv.slice(2)].join(" ");
  const summary = [
    `${counts.kills} machines killed with -9 (${counts.killedBusy} while running a message), ${tally.attempts} attempts for ${tally.sent} messages (${tally.reattempted} needed more than one try);`,
    `steps: ${tally.stepsRun} runs of a step's command (${tally.stepsInterrupted} of them killed before the result was recorded, so run again), ${tally.stepsReplayed} results replayed from the journal;`,
    `effects: ${tally.effectsRun} runs, ${tally.effectsReplayed} outcomes replayed; unknown outcomes: ${tally.askedDone + tally.askedRedo} asked a person (${tally.askedDone} --done, ${tally.askedRedo} --redo), ` +
      `${tally.retriedReruns} reruns under retry and ${tally.redoReruns} after --redo, all under the same idempotency key.`,
  ];
  console.log(`\n${tallyTable(tally, counts)}\n`);
  for (const line of summary) console.log(line);
  console.log("\ninvariants:");
  for (const line of invariantLines(invariants)) console.log(`  ${line}`);
  if (tally.sent === 0) console.log("  FAIL no message was sent");
  console.log(`\n--- markdown ---\n#### ${command}\n`);
  console.log(`${new Date().toISOString()}, baton ${run.revision}, seed ${run.seed}, ${run.servers} serve processes (${run.policy}${run.pool ? `, concurrency ${run.concurrency}` : ""}), ${took} s in all, load average ${run.load0.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end.\n`);
  console.log(tallyTable(tally, counts));
  console.log(`\n${summary.join(" ")}\n`);
  for (const inv of invariants) console.log(`- ${inv.ok ? "ok" : "**FAIL**"}: ${inv.name}${inv.ok ? "" : ` (${inv.detail})`}`);
  console.log("--- end ---");
}
