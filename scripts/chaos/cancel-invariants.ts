// What a cancel chaos run proves (`npm run chaos -- --mode cancel`): invariants computed from each
// message's final view (status, cancel record, journal), every cancel the driver sent and what it
// was answered, what the runners logged (`baton serve --json`: ran, cancelled, refused), every
// journaled call the served script made (when it started, how it ended), the ledger of commands
// run, and the fenced sink's log of effects. Pure, so the checks themselves are unit-tested
// (test/unit/chaos-cancel.test.ts).
import type { Invariant } from "./invariants.ts";
import { triesOf } from "../../worker/rules/message-lease.ts";
import type { JournalRecord, LedgerLine } from "./steps-invariants.ts";
import type { CancelKind, CancelCall, ResumeCall, RunnerEvent, JournalCall, SinkOffer, CancelledRecord, CancelFinal, CancelInput, CancelTally } from "./cancel-records.ts";

export type { Invariant } from "./invariants.ts";
export type { CancelKind, CancelCall, ResumeCall, RunnerEvent, JournalCall, SinkOffer, CancelledRecord, CancelFinal, CancelInput, CancelTally } from "./cancel-records.ts";

export const CANCEL_INVARIANTS = {
  neverBoth: "no message both cancelled and acknowledged (its view, its reply, its runners, /metrics)",
  noLateWrite: "no write accepted from a cancelled run after its cancel (journal records, journaled calls, replies)",
  noLateEffect: "no effect applied after its run was cancelled, except ones in flight at the cancel, which it lists as unknown",
  answersAgree: "every cancel answer (200 or 409), runner outcome and person's answer agrees with the final status",
  raceOneWinner: "a cancel racing the run's reply has exactly one winner, and both sides are told which",
  interruptsOwnGroup: "interrupts (on_busy interrupt) cancel only their group's running message",
} as const;

const FINISHED_OTHERWISE: ReadonlySet<string> = new Set(["acknowledged", "failed", "rejected", "superseded"]);
/** A runner that cannot hear an outcome: its machine was killed, or the coordinator restarted, within this of the cancel. */
const GONE_WINDOW_MS = 10_000;
const INTERRUPTED = /^interrupted by message (\d+)$/;

export function parseCalls(text: string): JournalCall[] {
  return text.split("\n").filter(Boolean).map((line) => {
    const [id, name, attempt, end, start, rc] = line.trim().split(/\s+/);
    return { id: Number(id), name: name!, attempt: Number(attempt), end: Number(end), start: Number(start), rc: Number(rc) };
  });
}

/** The runner events of `baton serve --json` lines (other lines, such as a command's stderr, are skipped). */
export function parseServeLog(text: string): RunnerEvent[] {
  const out: RunnerEvent[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    const at = Date.parse(String(e.at));
    if (e.type === "ran" || e.type === "cancelled") out.push({ type: e.type, id: Number(e.id), at });
    const named = e.type === "refused" && e.code === "cancelled" ? /message (\d+) was cancelled/.exec(String(e.message)) : null;
    if (named) out.push({ type: "refused_cancelled", id: Number(named[1]), at });
  }
  return out;
}

/** Its tries since a person's latest retry, as the coordinator counts them (rules/message-lease.ts triesOf): 0 when none since ran. */
function triesOfFinal(m: CancelFinal): number {
  return triesOf({ attempts: m.attempts, declined: m.declined ?? 0, retriedAfter: m.retried_after ?? 0 });
}

function list(items: readonly string[], max = 8): string {
  return items.slice(0, max).join("; ") + (items.length > max ? `; ... (${items.length})` : "");
}

function byId<T extends { id: number }>(rows: readonly T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const r of rows) out.set(r.id, [...(out.get(r.id) ?? []), r]);
  return out;
}

export function checkCancel(input: CancelInput): { tally: CancelTally; invariants: Invariant[] } {
  const messages = new Map(input.messages.map((m) => [m.id, m]));
  const runners = byId(input.runners);
  const told = (id: number, type: RunnerEvent["type"]) => (runners.get(id) ?? []).some((e) => e.type === type);
  const toldCancelled = (id: number) => told(id, "cancelled") || told(id, "refused_cancelled");
  const ran = new Set(input.ledger.map((l) => `${l.id} ${l.name} ${l.attempt}`));
  const cancelled = input.messages.filter((m) => m.status === "cancelled");

  const both: string[] = [];
  for (const m of input.messages) {
    if (m.status === "cancelled" && (m.reply !== null || m.acked_at !== null)) both.push(`${m.id}: cancelled with a reply or an acknowledgement`);
    if (m.status === "cancelled" && m.cancelled === null) both.push(`${m.id}: cancelled without a cancel record`);
    if (m.status !== "cancelled" && m.cancelled !== null) both.push(`${m.id}: ${m.status} with a cancel record`);
    if (m.status === "cancelled" && told(m.id, "ran")) both.push(`${m.id}: cancelled, yet a runner was told its reply was accepted`);
  }
  if (input.metricsCancelled !== null && input.metricsCancelled !== cancelled.length) {
    both.push(`/metrics counts ${input.metricsCancelled} cancelled, the coordinator holds ${cancelled.length}`);
  }

  const lateWrites: string[] = [];
  const lateEffects: string[] = [];
  const calls = byId(input.calls);
  const offers = byId(input.sink);
  let inFlightApplied = 0;
  let lateCallsRefused = 0;
  for (const m of cancelled) {
    if (m.cancelled === null) continue;
    const at = m.cancelled.at;
    lateCallsRefused += (calls.get(m.id) ?? []).filter((c) => c.start > at && c.rc !== 0).length;
    for (const s of m.steps) if (s.at > at) lateWrites.push(`${m.id} ${s.name}: recorded at ${s.at}, after the cancel at ${at}`);
    for (const c of calls.get(m.id) ?? []) {
      // A call that began after the cancel and whose command ran wrote to the journal (an intent, or a result) and was accepted.
      if (c.rc === 0 && c.start > at && ran.has(`${c.id} ${c.name} ${c.attempt}`)) lateWrites.push(`${m.id} ${c.name}: attempt ${c.attempt} began at ${c.start}, after the cancel at ${at}, and was recorded`);
    }
    if (triesOfFinal(m) === 0 && input.ledger.some((l) => l.id === m.id && l.attempt > (m.retried_after ?? 0))) {
      lateWrites.push(`${m.id}: cancelled before it ${m.retried_after ? "ran again after its retry" : "ever ran"}, yet its commands ran`);
    }
    const unknown = new Set(m.cancelled.unknown_effects);
    const intents = m.steps.filter((s) => s.kind === "effect" && s.status === "intent").map((s) => s.name).sort();
    if (intents.join(",") !== [...unknown].sort().join(",")) lateEffects.push(`${m.id}: unknown effects ${[...unknown].join(",") || "none"}, the journal's open intents ${intents.join(",") || "none"}`);
    const accepted = (offers.get(m.id) ?? []).filter((o) => o.outcome !== "stale_fence");
    for (const o of accepted.filter((o) => o.at > at)) {
      if (unknown.has(o.name)) inFlightApplied += 1;
      else lateEffects.push(`${m.id} ${o.name}: applied at ${o.at}, after the cancel at ${at}, not listed as unknown`);
    }
    for (const s of m.steps.filter((s) => s.kind === "effect" && s.status === "done")) {
      const mine = accepted.filter((o) => o.name === s.name);
      if (mine.length > 0 && mine.every((o) => o.at > at)) lateEffects.push(`${m.id} ${s.name}: its outcome is recorded, but the sink applied it only after the cancel`);
    }
  }

  const disagree: string[] = [];
  for (const c of input.cancels) {
    const m = messages.get(c.id);
    if (!m || c.status === null || c.status >= 500) continue;
    if (c.status === 200 && m.status !== "cancelled") disagree.push(`${c.id}: cancel answered 200, final status ${m.status}`);
    else if (c.status === 200 && c.cancelledAt !== m.cancelled?.at) disagree.push(`${c.id}: cancel answered a cancel at ${c.cancelledAt}, the record says ${m.cancelled?.at}`);
    else if (c.status === 409 && (c.code !== "message_finished" || !FINISHED_OTHERWISE.has(m.status))) disagree.push(`${c.id}: cancel answered 409 ${c.code}, final status ${m.status}`);
    else if (c.status !== 200 && c.status !== 409) disagree.push(`${c.id}: cancel answered ${c.status} ${c.code ?? ""}`);
  }
  for (const [id, events] of runners) {
    const m = messages.get(id);
    if (!m) continue;
    if (events.some((e) => e.type === "ran") && m.status !== "acknowledged") disagree.push(`${id}: a runner was told its reply was accepted, final status ${m.status}`);
    if (toldCancelled(id) && m.status !== "cancelled") disagree.push(`${id}: a runner was told it was cancelled, final status ${m.status}`);
  }
  for (const r of input.resumes) {
    const m = messages.get(r.id);
    if (!m) continue;
    const saysCancelled = r.status === 409 && (r.code === "cancelled" || / is cancelled\b/.test(r.message ?? ""));
    if (saysCancelled && m.status !== "cancelled") disagree.push(`${r.id}: a person's resume was refused as cancelled, final status ${m.status}`);
    if (r.status === 200 && m.cancelled !== null && m.cancelled.at < r.sentAt) disagree.push(`${r.id}: a person's resume was accepted after its cancel`);
  }

  const raceFaults: string[] = [];
  let raceCancelWon = 0;
  let raceReplyWon = 0;
  let raceRunnerGone = 0;
  const races = input.cancels.filter((c) => c.kind === "race" && (c.status === 200 || c.status === 409));
  for (const c of races) {
    const m = messages.get(c.id);
    if (!m) continue;
    const gone = input.kills.some((k) => k.machine === m.machine && Math.abs(k.at - c.sentAt) < GONE_WINDOW_MS)
      || input.restarts.some((r) => r.to > c.sentAt - GONE_WINDOW_MS && r.from < c.sentAt + GONE_WINDOW_MS);
    const replyTold = told(c.id, "ran");
    const cancelTold = toldCancelled(c.id);
    if (c.status === 200) {
      raceCancelWon += 1;
      if (replyTold) raceFaults.push(`${c.id}: the cancel won (200) and the runner was told its reply won`);
      else if (!cancelTold && !gone) raceFaults.push(`${c.id}: the cancel won (200) and the runner was never told`);
    } else {
      raceReplyWon += 1;
      if (cancelTold) raceFaults.push(`${c.id}: the reply won (409) and the runner was told it was cancelled`);
      else if (!replyTold && !gone) raceFaults.push(`${c.id}: the reply won (409) and the runner was never told`);
    }
    if (!replyTold && !cancelTold && gone) raceRunnerGone += 1;
  }

  const interrupts: string[] = [];
  const interruptedBy = new Map<number, number[]>();
  for (const m of cancelled) {
    const n = INTERRUPTED.exec(m.cancelled?.reason ?? "");
    if (!n) continue;
    const by = Number(n[1]);
    interruptedBy.set(by, [...(interruptedBy.get(by) ?? []), m.id]);
    const newer = messages.get(by);
    if (!newer) interrupts.push(`${m.id}: interrupted by message ${by}, which is not known`);
    else if (newer.group !== m.group) interrupts.push(`${m.id} (group ${m.group}): interrupted by message ${by} of group ${newer.group}`);
    if (by <= m.id) interrupts.push(`${m.id}: interrupted by an older message ${by}`);
    if (triesOfFinal(m) === 0) interrupts.push(`${m.id}: interrupted by message ${by} before it ${m.retried_after ? "ran again after its retry" : "ever ran"} (only a running message is interrupted)`);
  }
  for (const [by, ids] of interruptedBy) if (ids.length > 1) interrupts.push(`message ${by} interrupted ${ids.join(", ")} (a group runs one at a time)`);

  const kinds: CancelKind[] = ["running", "queued", "parked", "finished", "again", "race", "effect"];
  const tally: CancelTally = {
    messages: input.messages.length,
    cancelled: cancelled.length,
    acknowledged: input.messages.filter((m) => m.status === "acknowledged").length,
    interrupted: [...interruptedBy.values()].reduce((n, ids) => n + ids.length, 0),
    cancels: Object.fromEntries(kinds.map((k) => [k, input.cancels.filter((c) => c.kind === k).length])) as Record<CancelKind, number>,
    answered200: input.cancels.filter((c) => c.status === 200).length,
    answered409: input.cancels.filter((c) => c.status === 409).length,
    unanswered: input.cancels.filter((c) => c.status === null || c.status >= 500).length,
    races: races.length,
    raceCancelWon,
    raceReplyWon,
    raceRunnerGone,
    inFlightApplied,
    unknownEffects: cancelled.reduce((n, m) => n + (m.cancelled?.unknown_effects.length ?? 0), 0),
    runnerRefusals: input.runners.filter((e) => e.type === "refused_cancelled").length,
    lateCallsRefused,
  };
  const invariant = (name: string, faults: string[]): Invariant => ({ name, ok: faults.length === 0, detail: list(faults) });
  return {
    tally,
    invariants: [
      invariant(CANCEL_INVARIANTS.neverBoth, both),
      invariant(CANCEL_INVARIANTS.noLateWrite, lateWrites),
      invariant(CANCEL_INVARIANTS.noLateEffect, lateEffects),
      invariant(CANCEL_INVARIANTS.answersAgree, disagree),
      invariant(CANCEL_INVARIANTS.raceOneWinner, raceFaults),
      invariant(CANCEL_INVARIANTS.interruptsOwnGroup, interrupts),
    ],
  };
}
