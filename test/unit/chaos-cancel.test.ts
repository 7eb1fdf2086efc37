// The cancel chaos run's checker (scripts/chaos/cancel-invariants.ts): a run in which every cancel,
// interrupt and race went right passes, and each way a cancel can go wrong is reported by its invariant.
import { describe, expect, it } from "vitest";
import { cancelAgentScript } from "../../scripts/chaos/cancel-agent.ts";
import {
  CANCEL_INVARIANTS, checkCancel, parseCalls, parseServeLog, type CancelFinal, type CancelInput,
} from "../../scripts/chaos/cancel-invariants.ts";
import { PLAN, type JournalRecord } from "../../scripts/chaos/steps-invariants.ts";

const CANCEL_AT = 5000;
/** A run the cases below change in place. */
type Run = { -readonly [K in keyof CancelInput]: CancelInput[K] extends readonly (infer T)[] ? T[] : CancelInput[K] };
const done = (name: string, at: number, kind: "step" | "effect" = "step"): JournalRecord => ({ name, kind, status: "done", attempt: 1, at, on_unknown: kind === "effect" ? "retry" : null });
const intent = (name: string, at: number): JournalRecord => ({ name, kind: "effect", status: "intent", attempt: 1, at, on_unknown: "retry" });

function message(id: number, over: Partial<CancelFinal> = {}): CancelFinal {
  return { id, status: "acknowledged", attempts: 1, group: `solo-${id}`, machine: "m0", reply: "ok", acked_at: 4000, cancelled: null, steps: [done("plan", 1000)], ...over };
}

function cancelledAt(id: number, over: Partial<CancelFinal> = {}, reason = "chaos running", unknown: string[] = []): CancelFinal {
  return message(id, { status: "cancelled", reply: null, acked_at: null, cancelled: { at: CANCEL_AT, reason, unknown_effects: unknown }, ...over });
}

/**
 * 1 acknowledged; 2 cancelled while running with charge in flight (applied after the cancel, so
 * unknown); 3 a race the reply won; 4 a race the cancel won; 5 interrupted by 6 in its group; 7
 * cancelled while queued, never run.
 */
function run(): Run {
  return {
    messages: [
      message(1),
      cancelledAt(2, { steps: [done("plan", 1000), done("charge", 1500, "effect"), intent("notify", 4500)] }, "chaos running", ["notify"]),
      message(3, { steps: PLAN.map((p, i) => done(p.name, 1000 + i, p.kind)) }),
      cancelledAt(4, { steps: PLAN.map((p, i) => done(p.name, 1000 + i, p.kind)) }, "chaos race"),
      cancelledAt(5, { group: "talk-0" }, "interrupted by message 6"),
      message(6, { group: "talk-0" }),
      cancelledAt(7, { attempts: 0, steps: [], machine: null }, "chaos queued"),
    ],
    cancels: [
      { id: 2, kind: "running", sentAt: 4990, status: 200, cancelledAt: CANCEL_AT },
      { id: 2, kind: "again", sentAt: 9000, status: 200, cancelledAt: CANCEL_AT },
      { id: 3, kind: "race", sentAt: 4990, status: 409, code: "message_finished" },
      { id: 4, kind: "race", sentAt: 4990, status: 200, cancelledAt: CANCEL_AT },
      { id: 7, kind: "queued", sentAt: 4990, status: 200, cancelledAt: CANCEL_AT },
      { id: 6, kind: "running", sentAt: 4990, status: null },
    ],
    resumes: [{ id: 2, sentAt: 6000, status: 409, code: "not_parked", message: "message 2 is cancelled, not parked" }, { id: 1, sentAt: 2000, status: 200 }],
    runners: [
      { type: "ran", id: 1, at: 4000 }, { type: "cancelled", id: 2, at: 5001 }, { type: "ran", id: 3, at: 4999 },
      { type: "refused_cancelled", id: 4, at: 5002 }, { type: "cancelled", id: 5, at: 5001 }, { type: "ran", id: 6, at: 7000 },
    ],
    calls: [
      { id: 2, name: "charge", attempt: 1, start: 1400, end: 2100, rc: 0 },
      // Began before the cancel, refused after it: no write.
      { id: 2, name: "notify", attempt: 1, start: 4400, end: 5200, rc: 143 },
      // A stubborn run's next call, after the cancel: refused.
      { id: 2, name: "draft", attempt: 1, start: 5300, end: 5600, rc: 1 },
    ],
    ledger: [
      { id: 2, name: "charge", attempt: 1, key: "k", ms: 1500, machine: "m0" },
      { id: 2, name: "notify", attempt: 1, key: "k", ms: 4600, machine: "m0" },
    ],
    sink: [
      { id: 2, name: "charge", outcome: "applied", at: 2000 },
      { id: 2, name: "notify", outcome: "applied", at: 5100 },
      { id: 4, name: "charge", outcome: "applied", at: 1002 },
      { id: 4, name: "notify", outcome: "applied", at: 1004 },
    ],
    kills: [],
    restarts: [],
    metricsCancelled: 4,
  };
}

const failed = (i: CancelInput) => checkCancel(i).invariants.filter((v) => !v.ok).map((v) => v.name);

describe("cancel chaos checker", () => {
  it("passes a run of cancels, an interrupt, both outcomes of a race and an effect in flight at its cancel", () => {
    const { tally, invariants } = checkCancel(run());
    expect(invariants.filter((v) => !v.ok)).toEqual([]);
    expect(tally).toMatchObject({
      messages: 7, cancelled: 4, acknowledged: 3, interrupted: 1, answered200: 4, answered409: 1, unanswered: 1,
      races: 2, raceCancelWon: 1, raceReplyWon: 1, raceRunnerGone: 0, inFlightApplied: 1, unknownEffects: 1, runnerRefusals: 1, lateCallsRefused: 1,
    });
  });

  const cases: [string, (i: Run) => void, string[]][] = [
    ["a cancelled message with an acknowledgement", (i) => void (i.messages[1]!.acked_at = 6000), [CANCEL_INVARIANTS.neverBoth]],
    ["/metrics counting another number of cancels", (i) => void (i.metricsCancelled = 5), [CANCEL_INVARIANTS.neverBoth]],
    ["a step recorded after the cancel", (i) => void i.messages[1]!.steps.push(done("draft", 5300)), [CANCEL_INVARIANTS.noLateWrite]],
    ["a journaled call begun after the cancel that ran and was recorded", (i) => {
      i.calls.push({ id: 2, name: "draft", attempt: 1, start: 5050, end: 5400, rc: 0 });
      i.ledger.push({ id: 2, name: "draft", attempt: 1, key: null, ms: 5100, machine: "m0" });
    }, [CANCEL_INVARIANTS.noLateWrite]],
    ["a message cancelled while queued whose commands ran", (i) => void i.ledger.push({ id: 7, name: "plan", attempt: 1, key: null, ms: 6000, machine: "m1" }), [CANCEL_INVARIANTS.noLateWrite]],
    ["an effect applied after the cancel that is not listed as unknown", (i) => void i.sink.push({ id: 4, name: "notify", outcome: "duplicate", at: 5200 }), [CANCEL_INVARIANTS.noLateEffect]],
    ["an effect recorded done that the sink applied only after the cancel", (i) => void (i.sink[0]!.at = 5050), [CANCEL_INVARIANTS.noLateEffect]],
    ["unknown effects that are not the journal's open intents", (i) => void (i.messages[1]!.cancelled!.unknown_effects = []), [CANCEL_INVARIANTS.noLateEffect]],
    ["a cancel answered 200 for a message that ended acknowledged", (i) => void i.cancels.push({ id: 1, kind: "running", sentAt: 3000, status: 200, cancelledAt: 3000 }), [CANCEL_INVARIANTS.answersAgree]],
    ["a cancel answered with another cancel than the one that stands", (i) => void (i.cancels[1]!.cancelledAt = 9000), [CANCEL_INVARIANTS.answersAgree]],
    ["a cancel refused 409 for a message that ended cancelled", (i) => void i.cancels.push({ id: 5, kind: "running", sentAt: 6000, status: 409, code: "message_finished" }), [CANCEL_INVARIANTS.answersAgree]],
    ["a person told the message was cancelled when it was not", (i) => void i.resumes.push({ id: 1, sentAt: 3000, status: 409, code: "not_parked", message: "message 1 is cancelled, not parked" }), [CANCEL_INVARIANTS.answersAgree]],
    ["a person's resume accepted after the cancel", (i) => void i.resumes.push({ id: 2, sentAt: 5500, status: 200 }), [CANCEL_INVARIANTS.answersAgree]],
    ["a race the reply won whose runner was told it was cancelled", (i) => void i.runners.push({ type: "refused_cancelled", id: 3, at: 5000 }), [CANCEL_INVARIANTS.answersAgree, CANCEL_INVARIANTS.raceOneWinner]],
    ["a race both sides won", (i) => void i.runners.push({ type: "ran", id: 4, at: 5000 }), [CANCEL_INVARIANTS.neverBoth, CANCEL_INVARIANTS.answersAgree, CANCEL_INVARIANTS.raceOneWinner]],
    ["a race the cancel won whose live runner was never told", (i) => void (i.runners = i.runners.filter((e) => e.id !== 4)), [CANCEL_INVARIANTS.raceOneWinner]],
    ["an interrupt of another group's message", (i) => void (i.messages[5]!.group = "talk-1"), [CANCEL_INVARIANTS.interruptsOwnGroup]],
    ["an interrupt of a message that never ran", (i) => void (i.messages[4]!.attempts = 0), [CANCEL_INVARIANTS.interruptsOwnGroup]],
    ["an interrupt of a message a person retried that had not run again", (i) => void Object.assign(i.messages[4]!, { attempts: 2, retried_after: 2 }), [CANCEL_INVARIANTS.interruptsOwnGroup]],
    ["a message a person retried, cancelled while queued, whose commands ran again after the retry", (i) => {
      Object.assign(i.messages[6]!, { attempts: 1, retried_after: 1 });
      i.ledger.push({ id: 7, name: "plan", attempt: 2, key: null, ms: 6000, machine: "m1" });
    }, [CANCEL_INVARIANTS.noLateWrite]],
    ["one message interrupting two", (i) => void i.messages.splice(6, 1, cancelledAt(7, { group: "talk-0" }, "interrupted by message 6")), [CANCEL_INVARIANTS.interruptsOwnGroup]],
  ];
  it.each(cases)("reports %s", (_name, mutate, expected) => {
    const input = run();
    mutate(input);
    expect(failed(input)).toEqual(expected);
  });

  it("passes a message a person retried and cancelled while queued again, whose commands ran only before the retry", () => {
    const input = run();
    Object.assign(input.messages[6]!, { attempts: 1, retried_after: 1 });
    input.ledger.push({ id: 7, name: "plan", attempt: 1, key: null, ms: 1000, machine: "m1" });
    expect(failed(input)).toEqual([]);
  });

  it("excuses a race whose runner was killed before it could hear, and counts it", () => {
    const input = run();
    input.runners = input.runners.filter((e) => e.id !== 4);
    input.kills = [{ machine: "m0", at: 5100 }];
    const { tally, invariants } = checkCancel(input);
    expect(invariants.every((v) => v.ok)).toBe(true);
    expect(tally.raceRunnerGone).toBe(1);
  });

  it("parses calls and serve logs, and the agent script traces every journaled call with its start and exit code", () => {
    expect(parseCalls("4 charge 2 1700000000900 1700000000123 0\n4 notify 2 9 8 75\n")).toEqual([
      { id: 4, name: "charge", attempt: 2, end: 1700000000900, start: 1700000000123, rc: 0 },
      { id: 4, name: "notify", attempt: 2, end: 9, start: 8, rc: 75 },
    ]);
    const log = [
      `{"at":"2026-12-06T02:00:00.000Z","event":"log","message":"ran message 3","type":"ran","id":3,"attempt":1,"fence":2,"token":7}`,
      "baton step: a command's stderr",
      `{"at":"2026-12-06T02:00:01.000Z","event":"log","message":"x","type":"refused","frame":"reply","code":"cancelled","message2":"","message":"message 12 was cancelled: its run must stop"}`,
      `{"at":"2026-12-06T02:00:02.000Z","event":"log","type":"cancelled","id":5,"token":9,"by":"dev","reason":null}`,
    ].join("\n");
    expect(parseServeLog(log)).toEqual([
      { type: "ran", id: 3, at: Date.parse("2026-12-06T02:00:00.000Z") },
      { type: "refused_cancelled", id: 12, at: Date.parse("2026-12-06T02:00:01.000Z") },
      { type: "cancelled", id: 5, at: Date.parse("2026-12-06T02:00:02.000Z") },
    ]);
    const script = cancelAgentScript(PLAN);
    expect(script.match(/if v_\w+=\$\(baton (step|effect) /g)).toHaveLength(PLAN.length);
    expect(script.match(/>> "\$CHAOS_CALLS"/g)).toHaveLength(PLAN.length);
    expect(script).toContain(`"$CHAOS_SINK_URL/effect"`);
    expect(script).toContain(`[ "$rc" -eq 0 ] || { [ -n "$stubborn" ] && [ "$rc" -gt 128 ]; } || exit "$rc"`);
  });
});
