// What a steps chaos run proves (`npm run chaos -- --mode steps`): counts and invariants computed
// from the ledger every step's and effect's command appended to, the trace the served script
// wrote after each step returned, the answers the driver gave for unknown outcomes, and each
// message's final view with its step journal. Pure, so the checks themselves are unit-tested
// (test/unit/chaos-steps.test.ts).
import type { Invariant } from "./invariants.ts";
import { idempotencyKey } from "../../worker/wire/step-keys.ts";
import { triesOf } from "../../worker/rules/message-lease.ts";
import type { LedgerLine, TraceLine, Answer, JournalRecord, FinalMessage, Approval, StepsInput, StepsTally } from "./steps-records.ts";

export type { Invariant } from "./invariants.ts";
export type { LedgerLine, TraceLine, Answer, JournalRecord, FinalMessage, Approval, StepsInput, StepsTally } from "./steps-records.ts";

export interface PlanItem {
  name: string;
  kind: "step" | "effect";
  onUnknown?: "ask" | "retry";
  /** An effect that runs only on a person's approval of its arguments (`baton effect --approve`): a one-use permit. */
  approve?: boolean;
}

/** What each message's script runs, in order: 5 steps and 3 effects (one retried, one asked, one that needs a person's approval). */
export const PLAN: readonly PlanItem[] = [
  { name: "plan", kind: "step" },
  { name: "fetch", kind: "step" },
  { name: "charge", kind: "effect", onUnknown: "retry" },
  { name: "draft", kind: "step" },
  { name: "notify", kind: "effect", onUnknown: "ask" },
  { name: "pay", kind: "effect", onUnknown: "ask", approve: true },
  { name: "review", kind: "step" },
  { name: "summary", kind: "step" },
];

export const STEPS_INVARIANTS = {
  stepsOnce: "no recorded step ran again (no step command ran after its result was recorded)",
  effectsOnce: "no effect applied twice, except reruns under the same idempotency key that retry or a person's --redo allowed",
  noneLost: "no message lost: every message acknowledged, or parked waiting on a person (waiting_on set)",
  repliesConsistent: "every reply is the recorded step values, each from the run that recorded it (or the person who answered)",
  approvalsSpent: "every run of an effect that needs approval had a permit of its own: none before the first approval, never more runs than approvals, and each acknowledged message's permit spent",
} as const;

const ACKED = "acknowledged";

export function parseLedger(text: string): LedgerLine[] {
  return text.split("\n").filter(Boolean).map((line) => {
    const [id, name, attempt, key, ms, machine] = line.trim().split(/\s+/);
    return { id: Number(id), name: name!, attempt: Number(attempt), key: key === "-" || key === undefined ? null : key, ms: Number(ms), machine: machine ?? "" };
  });
}

export function parseTrace(text: string): TraceLine[] {
  return text.split("\n").filter(Boolean).map((line) => {
    const [id, name, attempt, ms] = line.trim().split(/\s+/);
    return { id: Number(id), name: name!, attempt: Number(attempt), ...(ms === undefined ? {} : { ms: Number(ms) }) };
  });
}

/** What a step's or effect's command prints, and so what the journal holds for it when that run recorded it. */
export function resultOf(name: string, id: number, attempt: number): string {
  return `${name}:${id}:${attempt}`;
}

function list(items: readonly string[], max = 8): string {
  return items.slice(0, max).join("; ") + (items.length > max ? `; ... (${items.length})` : "");
}

const keyOf = (id: number, name: string) => `${id} ${name}`;

function group<T extends { id: number; name: string }>(rows: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) out.set(keyOf(r.id, r.name), [...(out.get(keyOf(r.id, r.name)) ?? []), r]);
  return out;
}

/**
 * A run of a recorded step's or effect's command that came after the record: from a later attempt
 * than the one that recorded it, or from another attempt and later than the record by the clock
 * (`doneBy`: a time the result was surely recorded by, or null when none is known).
 */
function afterRecord(line: LedgerLine, record: JournalRecord | undefined, doneBy: number | null): boolean {
  if (record === undefined || record.status !== "done") return false;
  return line.attempt > record.attempt || (line.attempt !== record.attempt && doneBy !== null && line.ms > doneBy);
}

export function checkSteps(input: StepsInput): { tally: StepsTally; invariants: Invariant[] } {
  const plan = input.plan ?? PLAN;
  const kinds = new Map(plan.map((p) => [p.name, p]));
  const byId = new Map(input.messages.map((m) => [m.id, m]));
  const sent = new Set(input.sentIds);
  const runs = group(input.ledger.filter((l) => sent.has(l.id)));
  const ranAt = new Set(input.ledger.map((l) => `${keyOf(l.id, l.name)} ${l.attempt}`));
  const answers = group(input.answers);
  const recordOf = (id: number, name: string) => byId.get(id)?.steps.find((s) => s.name === name);
  const traced = new Map(input.trace.filter((t) => t.ms !== undefined).map((t) => [`${keyOf(t.id, t.name)} ${t.attempt}`, t.ms!]));
  /**
   * A step's record is written once, at its `at`. An effect's `at` is its intent's, so its outcome
   * was surely recorded by the time the recording attempt traced it (or the person answered).
   */
  const doneBy = (id: number, item: PlanItem, record: JournalRecord | undefined): number | null => {
    if (record?.status !== "done") return null;
    if (item.kind === "step") return record.at;
    const answered = (answers.get(keyOf(id, item.name)) ?? []).filter((a) => a.outcome === "done" && a.at !== undefined).map((a) => a.at!);
    return traced.get(`${keyOf(id, item.name)} ${record.attempt}`) ?? (answered.length > 0 ? Math.min(...answered) : null);
  };

  const stepViolations: string[] = [];
  const effectViolations: string[] = [];
  let stepsInterrupted = 0;
  let retriedReruns = 0;
  let redoReruns = 0;
  for (const [k, lines] of runs) {
    const { id, name } = lines[0]!;
    const item = kinds.get(name);
    const record = recordOf(id, name);
    const attempts = lines.map((l) => l.attempt);
    const twice = attempts.filter((a, i) => attempts.indexOf(a) !== i);
    if (item === undefined) {
      stepViolations.push(`${k}: not in the plan`);
      continue;
    }
    const bound = doneBy(id, item, record);
    const late = lines.filter((l) => afterRecord(l, record, bound));
    if (item.kind === "step") {
      if (twice.length > 0) stepViolations.push(`${k}: attempt ${twice[0]} ran it twice`);
      for (const l of late) stepViolations.push(`${k}: ran by attempt ${l.attempt} on ${l.machine} after attempt ${record!.attempt} recorded it`);
      if (record?.status === "done") stepsInterrupted += lines.filter((l) => l.attempt < record.attempt).length;
      continue;
    }
    const expected = idempotencyKey(input.accountTag, input.agent, id, name);
    const wrongKeys = lines.filter((l) => l.key !== expected);
    if (wrongKeys.length > 0) effectViolations.push(`${k}: ran under key ${wrongKeys[0]!.key ?? "none"}, not ${expected}`);
    if (twice.length > 0) effectViolations.push(`${k}: attempt ${twice[0]} applied it twice`);
    for (const l of late) effectViolations.push(`${k}: applied by attempt ${l.attempt} on ${l.machine} after its outcome was recorded by attempt ${record!.attempt}`);
    const reruns = lines.length - 1;
    if (reruns <= 0) continue;
    if (item.onUnknown === "retry") {
      retriedReruns += reruns;
      continue;
    }
    const redos = (answers.get(k) ?? []).filter((a) => a.outcome === "redo").length;
    redoReruns += Math.min(reruns, redos);
    if (reruns > redos) effectViolations.push(`${k}: applied ${lines.length} times, a person said redo ${redos} times (policy ask)`);
  }

  const lost: string[] = [];
  const inconsistent: string[] = [];
  for (const id of input.sentIds) {
    const m = byId.get(id);
    if (!m) {
      lost.push(`${id}: unknown to the coordinator`);
      continue;
    }
    if (m.status === "parked" && m.waiting_on !== null) continue;
    if (m.status !== ACKED) {
      lost.push(`${id}: ${m.status}${m.status === "parked" ? " without waiting_on" : ""} after ${m.attempts} attempts`);
      continue;
    }
    const values: string[] = [];
    for (const item of plan) {
      const record = recordOf(id, item.name);
      if (record?.status !== "done") {
        inconsistent.push(`${id}: acknowledged without a recorded ${item.name}`);
        values.push("?");
        continue;
      }
      const value = typeof record.value === "string" ? record.value : JSON.stringify(record.value);
      values.push(value);
      const byHand = (answers.get(keyOf(id, item.name)) ?? []).some((a) => a.outcome === "done" && a.text === value);
      if (byHand) continue;
      if (value !== resultOf(item.name, id, record.attempt)) inconsistent.push(`${id}: ${item.name} holds ${value}, recorded by attempt ${record.attempt}`);
      else if (!ranAt.has(`${keyOf(id, item.name)} ${record.attempt}`)) inconsistent.push(`${id}: ${item.name} recorded by attempt ${record.attempt}, whose run of it is not in the ledger`);
    }
    const expected = values.join(" ");
    if ((m.reply ?? "").trim() !== expected) inconsistent.push(`${id}: replied ${JSON.stringify((m.reply ?? "").trim())}, the journal holds ${JSON.stringify(expected)}`);
  }

  const approvalViolations = checkApprovals(plan, input, byId, runs);
  const stepNames = new Set(plan.filter((p) => p.kind === "step").map((p) => p.name));
  const sentLedger = input.ledger.filter((l) => sent.has(l.id));
  const replayed = input.trace.filter((t) => sent.has(t.id) && !ranAt.has(`${keyOf(t.id, t.name)} ${t.attempt}`));
  const messages = input.sentIds.map((id) => byId.get(id)).filter((m): m is FinalMessage => m !== undefined);
  const tally: StepsTally = {
    sent: input.sentIds.length,
    acknowledged: messages.filter((m) => m.status === ACKED).length,
    waiting: messages.filter((m) => m.status === "parked" && m.waiting_on !== null).length,
    attempts: messages.reduce((n, m) => n + m.attempts, 0),
    reattempted: messages.filter((m) => triesOf({ attempts: m.attempts, declined: m.declined ?? 0, retriedAfter: m.retried_after ?? 0 }) > 1).length,
    stepsRun: sentLedger.filter((l) => stepNames.has(l.name)).length,
    stepsInterrupted,
    stepsReplayed: replayed.filter((t) => stepNames.has(t.name)).length,
    effectsRun: sentLedger.filter((l) => !stepNames.has(l.name)).length,
    effectsReplayed: replayed.filter((t) => !stepNames.has(t.name)).length,
    askedDone: input.answers.filter((a) => a.outcome === "done" && sent.has(a.id)).length,
    askedRedo: input.answers.filter((a) => a.outcome === "redo" && sent.has(a.id)).length,
    retriedReruns,
    redoReruns,
    approvals: (input.approvals ?? []).filter((a) => sent.has(a.id)).length,
    approvedRuns: sentLedger.filter((l) => kinds.get(l.name)?.approve === true).length,
  };
  const invariants: Invariant[] = [
    { name: STEPS_INVARIANTS.stepsOnce, ok: stepViolations.length === 0, detail: list(stepViolations) },
    { name: STEPS_INVARIANTS.effectsOnce, ok: effectViolations.length === 0, detail: list(effectViolations) },
    { name: STEPS_INVARIANTS.noneLost, ok: lost.length === 0, detail: list(lost) },
    { name: STEPS_INVARIANTS.repliesConsistent, ok: inconsistent.length === 0, detail: list(inconsistent) },
    { name: STEPS_INVARIANTS.approvalsSpent, ok: approvalViolations.length === 0, detail: list(approvalViolations) },
  ];
  return { tally, invariants };
}

/**
 * Each run of an effect that needs approval began on a permit of its own: it ran after a person
 * first approved it (by the clock of this one machine), its runs never outnumber the approvals
 * given for its message (a permit is spent by the intent that uses it), and an acknowledged
 * message's permit for it is spent.
 */
function checkApprovals(plan: readonly PlanItem[], input: StepsInput, byId: ReadonlyMap<number, FinalMessage>, runs: ReadonlyMap<string, LedgerLine[]>): string[] {
  const out: string[] = [];
  const approvals = new Map<number, number[]>();
  for (const a of input.approvals ?? []) approvals.set(a.id, [...(approvals.get(a.id) ?? []), a.at]);
  for (const item of plan.filter((p) => p.approve)) {
    for (const id of input.sentIds) {
      const lines = runs.get(keyOf(id, item.name)) ?? [];
      const given = approvals.get(id) ?? [];
      const first = given.length > 0 ? Math.min(...given) : Infinity;
      const early = lines.filter((l) => l.ms < first);
      if (early.length > 0) out.push(`${id} ${item.name}: run by attempt ${early[0]!.attempt} before any approval`);
      if (lines.length > given.length) out.push(`${id} ${item.name}: ran ${lines.length} times on ${given.length} approvals`);
      const m = byId.get(id);
      const permit = m?.permits?.find((p) => p.effect === item.name);
      if (m?.status === ACKED && permit?.spent_token == null) out.push(`${id} ${item.name}: acknowledged, its permit ${permit ? "unspent" : "missing"}`);
    }
  }
  return out;
}
