// The records a cancel chaos run checks (cancel-invariants.ts): every cancel the driver sent and
// its answer, what the runners logged, the served script's journaled calls, the sink's offers,
// each message's final view, and the tally the checks count.
import type { JournalRecord, LedgerLine } from "./steps-records.ts";

/**
 * How the driver chose a cancel's target: by its status then; `race`: just after its run's last
 * step, so it races the reply; `effect`: just after an effect's command began.
 */
export type CancelKind = "running" | "queued" | "parked" | "finished" | "again" | "race" | "effect";

/** One POST …/cancel and its answer (status null: no answer, e.g. the coordinator was restarting). */
export interface CancelCall {
  id: number;
  kind: CancelKind;
  sentAt: number;
  status: number | null;
  /** The error code of a refusal. */
  code?: string;
  /** With 200: the cancel record's time in the answer (the first cancel's, when it was cancelled before). */
  cancelledAt?: number;
}

/** A person's answer to a message parked on an unknown outcome (POST …/resume), and the refusal's words. */
export interface ResumeCall {
  id: number;
  sentAt: number;
  status: number | null;
  code?: string;
  message?: string;
}

/** What a runner was told about a message, from `baton serve --json` (a refused write names its message in its text). */
export interface RunnerEvent {
  type: "ran" | "cancelled" | "refused_cancelled";
  id: number;
  at: number;
}

/** One `baton step`/`baton effect` call of the served script: `ID NAME ATTEMPT END START RC`. */
export interface JournalCall {
  id: number;
  name: string;
  attempt: number;
  start: number;
  end: number;
  rc: number;
}

/** One offer the sink logged: its message, its effect's name, the verdict, and when. */
export interface SinkOffer {
  id: number;
  name: string;
  outcome: "applied" | "duplicate" | "stale_fence";
  at: number;
}

export interface CancelledRecord {
  at: number;
  reason: string | null;
  unknown_effects: string[];
}

export interface CancelFinal {
  id: number;
  status: string;
  attempts: number;
  /** Of its hand-outs since a person's latest retry, those a stopping runner gave back unstarted: none since ran when these are all of them. */
  declined?: number;
  /** Hand-outs before a person's latest retry (absent: never retried). */
  retried_after?: number;
  group: string | null;
  /** The machine of the runner it was last handed to. */
  machine: string | null;
  reply: string | null;
  acked_at: number | null;
  cancelled: CancelledRecord | null;
  steps: JournalRecord[];
}

export interface CancelInput {
  messages: readonly CancelFinal[];
  cancels: readonly CancelCall[];
  resumes: readonly ResumeCall[];
  runners: readonly RunnerEvent[];
  calls: readonly JournalCall[];
  ledger: readonly LedgerLine[];
  sink: readonly SinkOffer[];
  /** Machines killed with -9, and the coordinator's restarts (down from..to): why a runner may never have heard. */
  kills: readonly { machine: string; at: number }[];
  restarts: readonly { from: number; to: number }[];
  /** baton_messages_cancelled_total of the agent by /metrics at the end (null: not read). */
  metricsCancelled: number | null;
}

export interface CancelTally {
  messages: number;
  cancelled: number;
  acknowledged: number;
  interrupted: number;
  cancels: Record<CancelKind, number>;
  answered200: number;
  answered409: number;
  unanswered: number;
  races: number;
  raceCancelWon: number;
  raceReplyWon: number;
  /** Races whose runner was killed (or whose coordinator restarted) before it could hear the outcome. */
  raceRunnerGone: number;
  /** Effects the sink applied after their run was cancelled: in flight at the cancel, so shown as unknown. */
  inFlightApplied: number;
  /** Unknown effects (intent, no outcome) of cancelled messages, in all. */
  unknownEffects: number;
  /** Writes of cancelled runs the runners were refused (`cancelled`), as they logged them. */
  runnerRefusals: number;
  /** Journaled calls of cancelled messages begun after the cancel (by stubborn runs): each refused, or killed before it wrote. */
  lateCallsRefused: number;
}
