// How a chaos run reads: the tally table, the messages executed more than once, the attempts of
// first runs against the lease changes they waited through, and the invariants; as terminal text
// and as a markdown block for docs/chaos.md.
import { markdownTable } from "../bench/stats.ts";
import type { FirstRun, Invariant, Tally } from "./invariants.ts";
import type { LoggedEffect } from "./sink.ts";

export interface RunReport {
  command: string;
  date: string;
  revision: string;
  seed: number;
  operations: { kill: number; pause: number; restart: number; coordinator: number; resume?: number };
  tally: Tally;
  invariants: Invariant[];
  firstRuns: FirstRun[];
  /** Faults injected over the chaos window, lease changes the serve logs saw (those no fault explains), and the agent's max_attempts. */
  faultRate?: { faults: number; seconds: number; leaseChanges: number; unexplained: readonly number[]; holderUnknown?: readonly number[]; maxAttempts: number };
}

/**
 * The odds a message faces: a message fails when `maxAttempts` holders in a row lose the lease
 * before its reply, so the fault rate against a run's length is what max_attempts must outlast.
 */
export function faultRateLine(f: NonNullable<RunReport["faultRate"]>): string {
  const perMinute = (f.faults / f.seconds) * 60;
  const unexplained = f.unexplained.length === 0 ? "every one after a fault the run injected" : `${f.unexplained.length} after no injected fault (into fence ${f.unexplained.slice(0, 10).join(", ")})`;
  const unknown = f.holderUnknown?.length ? ` (${f.holderUnknown.length} of them lost by a process frozen or dying as it was elected, which never logged holding: into fence ${f.holderUnknown.slice(0, 10).join(", ")})` : "";
  return `${f.faults} faults in ${f.seconds} s (${perMinute.toFixed(1)}/min); ${f.leaseChanges} lease changes, ${unexplained}${unknown}; max_attempts ${f.maxAttempts}: a message fails when ${f.maxAttempts} holders in a row lose the lease before its reply`;
}

export function tallyTable(t: Tally): string {
  return markdownTable(
    ["messages sent", "run", "run twice", "applied twice", "lost", "failed by faults", "stale writes rejected", "duplicates absorbed", "acknowledged", "redelivered (handed out again after a hand-out not declined)"],
    [[t.sent, t.run, t.runTwice, t.appliedTwice, t.lost, t.failedByFaults, t.staleRejected, t.duplicatesAbsorbed, t.acknowledged, t.redelivered].map(String)],
  );
}

export function operationsLine(o: RunReport["operations"]): string {
  const resumes = o.resume === undefined || o.resume === 0 ? "" : `, ${o.resume} resumes of parked messages`;
  return `${o.kill} SIGKILL, ${o.pause} SIGSTOP/SIGCONT, ${o.restart} graceful restarts, ${o.coordinator} coordinator restarts${resumes}`;
}

/** One line per message that reached the sink more than once, at most `max` lines. */
export function reExecutions(effects: readonly LoggedEffect[], max = 15): string[] {
  const byId = new Map<number, LoggedEffect[]>();
  for (const e of effects) byId.set(e.message_id, [...(byId.get(e.message_id) ?? []), e]);
  const lines = [...byId]
    .filter(([, runs]) => runs.length > 1)
    .map(([id, runs]) => `  message ${id}: ${runs.map((e) => `${e.instance} fence ${e.fence} attempt ${e.attempt} -> ${e.outcome}`).join(", then ")}`);
  return lines.length > max ? [...lines.slice(0, max), `  ... and ${lines.length - max} more`] : lines;
}

/** Summarises first runs: how many carried exactly one attempt per holder they waited through. */
export function attemptsSummary(runs: readonly FirstRun[]): string {
  if (runs.length === 0) return "no first run with a known posting fence";
  const equal = runs.filter((r) => r.attempt === r.leaseChanges + 1).length;
  const fewer = runs.filter((r) => r.attempt < r.leaseChanges + 1).length;
  const more = runs.filter((r) => r.attempt > r.leaseChanges + 1);
  const histogram = new Map<number, number>();
  for (const r of runs) histogram.set(r.attempt, (histogram.get(r.attempt) ?? 0) + 1);
  const spread = [...histogram].sort(([a], [b]) => a - b).map(([a, n]) => `attempt ${a}: ${n}`).join(", ");
  return [
    `${runs.length} first runs (${spread});`,
    `attempt = lease changes since posting + 1 for ${equal}, fewer for ${fewer} (a fence passed without a connected holder to take it),`,
    `more for ${more.length}${more.length ? ` (handed over twice under one fence: ${more.slice(0, 5).map((r) => r.id).join(", ")})` : ""}`,
  ].join(" ");
}

export function invariantLines(invariants: readonly Invariant[]): string[] {
  return invariants.map((inv) => `${inv.ok ? "ok  " : "FAIL"} ${inv.name}${inv.ok ? "" : `: ${inv.detail}`}`);
}

export function markdownReport(r: RunReport): string {
  return [
    `### ${r.command}`,
    "",
    `${r.date}, baton ${r.revision}, seed ${r.seed}; operations: ${operationsLine(r.operations)}.`,
    "",
    tallyTable(r.tally),
    "",
    `First runs: ${attemptsSummary(r.firstRuns)}.`,
    "",
    ...(r.faultRate ? [`Faults: ${faultRateLine(r.faultRate)}.`, ""] : []),
    ...r.invariants.map((inv) => `- ${inv.ok ? "ok" : "**FAIL**"}: ${inv.name}${inv.ok ? "" : ` (${inv.detail})`}`),
  ].join("\n");
}
