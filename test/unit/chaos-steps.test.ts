// The steps chaos run's checker (scripts/chaos/steps-invariants.ts): a run in which everything went
// right passes, and each way durable steps can go wrong is reported by its invariant.
import { describe, expect, it } from "vitest";
import { agentScript } from "../../scripts/chaos/steps-agent.ts";
import {
  checkSteps, parseLedger, PLAN, resultOf, STEPS_INVARIANTS, type Answer, type FinalMessage, type JournalRecord, type LedgerLine, type StepsInput, type TraceLine,
} from "../../scripts/chaos/steps-invariants.ts";

const AGENT = "a";
const TAG = "0123456789abcdef";
const key = (id: number, name: string) => `baton:${TAG}:${AGENT}:${id}:${name}`;

/** One message run by attempt 1 up to `crashAfter` items (its commands' ledger lines written), then by attempt 2 to the end. */
function history(id: number, crashAfter: number): { message: FinalMessage; ledger: LedgerLine[]; trace: TraceLine[] } {
  const ledger: LedgerLine[] = [];
  const trace: TraceLine[] = [];
  const steps: JournalRecord[] = [];
  let ms = 1000;
  PLAN.forEach((p, i) => {
    const attempt = i < crashAfter ? 1 : 2;
    ledger.push({ id, name: p.name, attempt, key: p.kind === "effect" ? key(id, p.name) : null, ms: ms++, machine: `m${attempt}` });
    steps.push({ name: p.name, kind: p.kind, status: "done", attempt, at: ms++, on_unknown: p.onUnknown ?? null, value: resultOf(p.name, id, attempt) });
    trace.push({ id, name: p.name, attempt, ms: ms++ });
  });
  if (crashAfter < PLAN.length) for (const p of PLAN.slice(0, crashAfter)) trace.push({ id, name: p.name, attempt: 2, ms: ms++ });
  const reply = steps.map((s) => s.value).join(" ");
  const permits = PLAN.filter((p) => p.approve).map((p) => ({ effect: p.name, spent_token: 2 }));
  return { message: { id, status: "acknowledged", attempts: crashAfter < PLAN.length ? 2 : 1, reply: `${reply}\n`, waiting_on: null, steps, permits }, ledger, trace };
}

function input(parts: ReturnType<typeof history>[], answers: Answer[] = []): StepsInput {
  return {
    agent: AGENT, accountTag: TAG, sentIds: parts.map((p) => p.message.id), messages: parts.map((p) => p.message),
    ledger: parts.flatMap((p) => p.ledger), trace: parts.flatMap((p) => p.trace), answers,
    approvals: parts.map((p) => ({ id: p.message.id, at: 0 })),
  };
}

const failed = (i: StepsInput) => checkSteps(i).invariants.filter((v) => !v.ok).map((v) => v.name);

describe("steps chaos checker", () => {
  it("reports an effect that needs approval run more often than it was approved, run before any approval, or acknowledged with its permit unspent", () => {
    const ok = history(1, PLAN.length);
    expect(failed(input([ok]))).toEqual([]);
    const twice = history(2, PLAN.length);
    const pay = twice.ledger.find((l) => l.name === "pay")!;
    twice.ledger.push({ ...pay, attempt: 2, ms: pay.ms + 1 });
    expect(failed({ ...input([twice]) })).toContain(STEPS_INVARIANTS.approvalsSpent);
    expect(failed({ ...input([history(3, PLAN.length)]), approvals: [{ id: 3, at: 10_000_000 }] })).toEqual([STEPS_INVARIANTS.approvalsSpent]);
    const unspent = history(4, PLAN.length);
    unspent.message.permits = [{ effect: "pay", spent_token: null }];
    expect(failed(input([unspent]))).toEqual([STEPS_INVARIANTS.approvalsSpent]);
  });

  it("passes a run where a successor replayed what its killed predecessor recorded", () => {
    const { tally, invariants } = checkSteps(input([history(1, PLAN.length), history(2, 3)]));
    expect(invariants.every((v) => v.ok)).toBe(true);
    expect(tally).toMatchObject({ sent: 2, acknowledged: 2, attempts: 3, reattempted: 1, stepsRun: 10, stepsReplayed: 2, effectsRun: 6, effectsReplayed: 1 });
  });

  it("counts re-attempted messages by tries as the coordinator does: a declined hand-out, or one before a person's retry, is none", () => {
    const declinedFirst = history(1, PLAN.length);
    declinedFirst.message.attempts = 2;
    declinedFirst.message.declined = 1;
    const retried = history(2, PLAN.length);
    Object.assign(retried.message, { attempts: 3, retried_after: 2 });
    const twice = history(3, 3);
    expect(checkSteps(input([declinedFirst, retried, twice])).tally).toMatchObject({ attempts: 7, reattempted: 1 });
  });

  it("reports a recorded step whose command ran again", () => {
    const h = history(1, 3);
    h.ledger.push({ id: 1, name: "plan", attempt: 2, key: null, ms: 5000, machine: "m2" });
    expect(failed(input([h]))).toEqual([STEPS_INVARIANTS.stepsOnce]);
  });

  it("reports a step run by an older attempt after it was recorded (an orphan), and a step the journal never held", () => {
    const h = history(1, 3);
    h.ledger.push({ id: 1, name: "draft", attempt: 1, key: null, ms: 9999, machine: "m1" });
    expect(failed(input([h]))).toEqual([STEPS_INVARIANTS.stepsOnce]);
    const missing = history(2, 7);
    missing.message.steps = missing.message.steps.filter((s) => s.name !== "review");
    expect(failed(input([missing]))).toEqual([STEPS_INVARIANTS.repliesConsistent]);
  });

  it("allows an asked effect to rerun once per --redo, under its key; more, or another key, is applied twice", () => {
    const h = history(1, 4);
    h.ledger.push({ id: 1, name: "notify", attempt: 1, key: key(1, "notify"), ms: 1, machine: "m1" });
    expect(failed(input([h]))).toEqual([STEPS_INVARIANTS.effectsOnce]);
    const redo: Answer = { id: 1, name: "notify", outcome: "redo", text: null };
    const { tally, invariants } = checkSteps(input([h], [redo]));
    expect(invariants.every((v) => v.ok)).toBe(true);
    expect(tally).toMatchObject({ askedRedo: 1, redoReruns: 1 });
    h.ledger.at(-1)!.key = "other";
    expect(failed(input([h], [redo]))).toEqual([STEPS_INVARIANTS.effectsOnce]);
  });

  it("counts reruns of a retry effect, and reports one applied after its outcome was recorded", () => {
    const h = history(1, 2);
    h.ledger.push({ id: 1, name: "charge", attempt: 1, key: key(1, "charge"), ms: 1, machine: "m1" });
    // An effect's `at` is its intent's, from the first attempt: a run after it is no violation by itself.
    h.message.steps.find((s) => s.name === "charge")!.at = 0;
    expect(checkSteps(input([h])).tally.retriedReruns).toBe(1);
    expect(failed(input([h]))).toEqual([]);
    const orphan = history(2, 2);
    orphan.ledger.push({ id: 2, name: "charge", attempt: 1, key: key(2, "charge"), ms: 99_999, machine: "m1" });
    expect(failed(input([orphan]))).toEqual([STEPS_INVARIANTS.effectsOnce]);
    h.ledger.push({ id: 1, name: "charge", attempt: 3, key: key(1, "charge"), ms: 9999, machine: "m1" });
    expect(failed(input([h]))).toEqual([STEPS_INVARIANTS.effectsOnce]);
  });

  it("accepts an outcome a person recorded with --done in the reply", () => {
    const h = history(1, 7);
    const notify = h.message.steps.find((s) => s.name === "notify")!;
    notify.value = "by-hand:1:1";
    h.message.reply = h.message.steps.map((s) => s.value).join(" ");
    expect(failed(input([h]))).toEqual([STEPS_INVARIANTS.repliesConsistent]);
    expect(failed(input([h], [{ id: 1, name: "notify", outcome: "done", text: "by-hand:1:1" }]))).toEqual([]);
  });

  it("reports a reply that is not the journal's values", () => {
    const h = history(1, 3);
    h.message.reply = h.message.reply!.replace("review:1:2", "review:1:3");
    expect(failed(input([h]))).toEqual([STEPS_INVARIANTS.repliesConsistent]);
  });

  it("counts a message parked on a person as not lost, and one stuck or failed as lost", () => {
    const parked = history(1, 4);
    parked.message = { ...parked.message, status: "parked", waiting_on: "notify", reply: null };
    expect(failed(input([parked]))).toEqual([]);
    const stuck = history(2, 4);
    stuck.message = { ...stuck.message, status: "queued", reply: null };
    const gone = history(3, 4);
    gone.message = { ...gone.message, status: "failed", reply: null };
    const { invariants } = checkSteps(input([stuck, gone]));
    expect(invariants.find((v) => v.name === STEPS_INVARIANTS.noneLost)).toMatchObject({ ok: false, detail: expect.stringMatching(/2: queued.*3: failed/) });
  });

  it("parses ledger lines, and the agent script runs every item of the plan through baton step or effect", () => {
    expect(parseLedger("4 charge 2 baton:a:4:charge 1700000000123 chaos-m1\n4 plan 1 - 17 chaos-m0\n")).toEqual([
      { id: 4, name: "charge", attempt: 2, key: "baton:a:4:charge", ms: 1700000000123, machine: "chaos-m1" },
      { id: 4, name: "plan", attempt: 1, key: null, ms: 17, machine: "chaos-m0" },
    ]);
    const script = agentScript(PLAN, false);
    expect(script).toContain("baton step plan -- sh \"$0\" --do plan");
    expect(script).toContain("baton effect charge --on-unknown retry --");
    expect(script).toContain("baton effect notify --on-unknown ask --");
    expect(script.match(/baton (step|effect) /g)).toHaveLength(PLAN.length);
    expect(agentScript(PLAN, true)).toMatch(/BATON_ATTEMPT" -gt 1 \]; then v_summary=\$\(sh "\$0" --do summary\)/);
  });
});
