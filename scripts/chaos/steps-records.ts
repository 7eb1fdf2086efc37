// The records a steps chaos run checks (steps-invariants.ts): the ledger and trace lines the
// served script wrote, the answers the driver gave, each message's final view with its journal,
// and the tally the checks count.
import type { PlanItem } from "./steps-invariants.ts";

/** One run of a step's or effect's command: `ID NAME ATTEMPT KEY MS MACHINE` (KEY is "-" for a step). */
export interface LedgerLine {
  id: number;
  name: string;
  attempt: number;
  key: string | null;
  ms: number;
  machine: string;
}

/** The script got a step's or effect's result back (run now or replayed): `ID NAME ATTEMPT MS`. */
export interface TraceLine {
  id: number;
  name: string;
  attempt: number;
  ms?: number;
}

/** A person's answer to an effect whose outcome was unknown (`baton resume AGENT ID [TEXT] --done | --redo`). */
export interface Answer {
  id: number;
  name: string;
  outcome: "done" | "redo";
  /** The outcome the person recorded with --done. */
  text: string | null;
  /** When the answer was taken (ms, after the coordinator confirmed it). */
  at?: number;
}

export interface JournalRecord {
  name: string;
  kind: "step" | "effect";
  status: "intent" | "done";
  attempt: number;
  /** Server ms of the record's first write (an effect's intent; a step's result). */
  at: number;
  on_unknown: "ask" | "retry" | null;
  /** The recorded result (GET …/steps/NAME), when it was read. */
  value?: unknown;
}

export interface FinalMessage {
  id: number;
  status: string;
  attempts: number;
  /** Of its hand-outs since a person's latest retry, those a stopping runner gave back unstarted (absent: none). */
  declined?: number;
  /** Hand-outs before a person's latest retry (absent: never retried). */
  retried_after?: number;
  reply: string | null;
  waiting_on: string | null;
  steps: JournalRecord[];
  /** Its permits (the latest approval of each effect) and the token that spent each (null: unspent). */
  permits?: { effect: string; spent_token: number | null }[];
}

/** A person approved an effect's question (`baton approve AGENT ID`); `at`: when the approving command started (ms). */
export interface Approval {
  id: number;
  at: number;
}

export interface StepsInput {
  agent: string;
  /** The account's tag in its effects' keys (wire/step-keys.ts accountTag). */
  accountTag: string;
  plan?: readonly PlanItem[];
  sentIds: readonly number[];
  messages: readonly FinalMessage[];
  ledger: readonly LedgerLine[];
  trace: readonly TraceLine[];
  answers: readonly Answer[];
  /** Approvals the driver gave, for effects that need one (absent: none were asked). */
  approvals?: readonly Approval[];
}

export interface StepsTally {
  sent: number;
  acknowledged: number;
  /** Still parked at the end, waiting on a person (waiting_on set). */
  waiting: number;
  attempts: number;
  /** Messages that needed more than one try, as the coordinator counts tries (rules/message-lease.ts triesOf: a declined hand-out is none). */
  reattempted: number;
  stepsRun: number;
  /** Runs of a step's command that ended before its result was recorded (the next attempt ran it again; allowed). */
  stepsInterrupted: number;
  /** Times the script got a step's recorded result back without its command running. */
  stepsReplayed: number;
  effectsRun: number;
  effectsReplayed: number;
  /** Unknown outcomes a person answered: done (not run again) or redo (run again under the same key). */
  askedDone: number;
  askedRedo: number;
  /** Reruns under the same key: of retry effects whose outcome was unknown, and of asked effects a person said redo to. */
  retriedReruns: number;
  redoReruns: number;
  /** Approvals a person gave, and runs of effects that need one. */
  approvals: number;
  approvedRuns: number;
}
