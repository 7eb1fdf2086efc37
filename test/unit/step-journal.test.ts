// The step journal's rules and what they change in a message's lease: a done record is final, an
// effect's intent comes before its outcome, the journal is bounded in bytes and records, an attempt
// that ends with an effect's outcome unknown (ask) parks instead of running again, a resume of it
// needs the person's answer, and heartbeats move a run's deadline but never past its cap.
import { describe, expect, it } from "vitest";
import {
  decideStepWrite, openEffectOf, pendingAsk, questionStepRefusal, runWriteRefusal, type StepRecord, type StepWrite,
} from "../../worker/rules/step-journal.ts";
import { DEFAULT_POLICY, extendRun, failAttempt, lease, resume, takeBack, type MessageLease, type MessagePolicy } from "../../worker/rules/message-lease.ts";
import { accountTag, idempotencyKey, LIMITS } from "../../worker/wire/protocol.ts";

const budget = { steps: 3, bytes: 100 };
const empty = { steps: 0, bytes: 0 };
const at = { attempt: 2, token: 7 };
const write = (over: Partial<StepWrite> = {}): StepWrite => ({ name: "s", kind: "step", phase: "done", value: '"x"', onUnknown: null, ...over });
const record = (over: Partial<StepRecord> = {}): StepRecord => ({
  name: "s", kind: "step", status: "done", value: '"old"', blob: null, onUnknown: null, attempt: 1, token: 3, at: 0, ...over,
});

describe("decideStepWrite", () => {
  it("records a new step under the attempt and token of the write", () => {
    expect(decideStepWrite(null, write(), at, empty, budget)).toEqual({
      action: "record", record: { name: "s", kind: "step", status: "done", value: '"x"', blob: null, onUnknown: null, attempt: 2, token: 7 },
    });
  });

  it("a done record is final: writing it again is a duplicate that keeps the stored value", () => {
    expect(decideStepWrite(record(), write(), at, empty, budget)).toMatchObject({ action: "duplicate", record: { value: '"old"', attempt: 1 } });
    const effect = record({ kind: "effect", onUnknown: "ask" });
    expect(decideStepWrite(effect, write({ kind: "effect", phase: "intent", value: null }), at, empty, budget)).toMatchObject({ action: "duplicate" });
  });

  it("an effect records its intent (ask by default) and then its outcome", () => {
    const intent = decideStepWrite(null, write({ kind: "effect", phase: "intent", value: null }), at, empty, budget);
    expect(intent).toMatchObject({ action: "record", record: { status: "intent", value: null, onUnknown: "ask" } });
    const open = { ...(intent as { record: StepRecord }).record, at: 0 };
    expect(decideStepWrite(open, write({ kind: "effect", value: '"ok"', onUnknown: "ask" }), at, empty, budget)).toMatchObject({
      action: "record", record: { status: "done", value: '"ok"' },
    });
  });

  it("refuses an intent for a plain step and a name used by the other kind", () => {
    expect(decideStepWrite(null, write({ phase: "intent" }), at, empty, budget)).toMatchObject({ action: "refuse", code: "bad_request" });
    expect(decideStepWrite(record(), write({ kind: "effect" }), at, empty, budget)).toMatchObject({ action: "refuse", code: "bad_request" });
  });

  it("bounds the journal in records and in bytes (UTF-8, not characters)", () => {
    expect(decideStepWrite(null, write(), at, { steps: 3, bytes: 0 }, budget)).toMatchObject({ action: "refuse", code: "too_large" });
    expect(decideStepWrite(null, write({ value: `"${"é".repeat(40)}"` }), at, { steps: 0, bytes: 20 }, budget)).toMatchObject({ action: "refuse", code: "too_large" });
    expect(decideStepWrite(null, write({ value: `"${"e".repeat(40)}"` }), at, { steps: 0, bytes: 20 }, budget)).toMatchObject({ action: "record" });
  });

  it("only an open intent whose policy is ask is pending; of several, the first in the journal", () => {
    expect(pendingAsk([record({ kind: "effect", status: "intent", onUnknown: "ask", name: "pay" })])).toBe("pay");
    expect(pendingAsk([record({ kind: "effect", status: "intent", onUnknown: "retry" })])).toBeNull();
    expect(pendingAsk([record({ kind: "effect", status: "done", onUnknown: "ask" })])).toBeNull();
    const two = [
      record({ kind: "effect", status: "done", onUnknown: "ask", name: "a" }),
      record({ kind: "effect", status: "intent", onUnknown: "ask", name: "mail" }),
      record({ kind: "effect", status: "intent", onUnknown: "ask", name: "pay" }),
    ];
    expect(pendingAsk(two)).toBe("mail");
    expect(pendingAsk(two.slice(2))).toBe("pay");
  });

  it("a second intent of one effect in the same attempt is refused; a later attempt may begin it again", () => {
    const open = record({ kind: "effect", status: "intent", value: null, onUnknown: "retry", token: at.token });
    const again = write({ kind: "effect", phase: "intent", value: null, onUnknown: "retry" });
    expect(decideStepWrite(open, again, at, empty, budget)).toMatchObject({ action: "refuse", code: "effect_in_progress" });
    expect(decideStepWrite({ ...open, token: at.token - 1 }, again, at, empty, budget)).toMatchObject({ action: "record", record: { status: "intent", token: at.token } });
    expect(decideStepWrite(open, write({ kind: "effect", value: '"ok"', onUnknown: "retry" }), at, empty, budget)).toMatchObject({ action: "record", record: { status: "done" } });
  });

  it("an effect's key names the account's tag, agent, message and step: the same on every attempt, different in every account, bounded", async () => {
    const [acme, other] = [await accountTag("acme"), await accountTag("globex")];
    expect(acme).toMatch(/^[0-9a-f]{16}$/);
    expect(acme).not.toBe(other);
    expect(await accountTag("acme")).toBe(acme);
    expect(idempotencyKey(acme, "billing", 12, "refund")).toBe(`baton:${acme}:billing:12:refund`);
    expect(idempotencyKey(acme, "billing", 12, "refund")).not.toBe(idempotencyKey(other, "billing", 12, "refund"));
    const longest = idempotencyKey(acme, "a".repeat(63), Number.MAX_SAFE_INTEGER, "n".repeat(LIMITS.stepNameChars));
    expect(longest.length).toBe(LIMITS.effectKeyChars);
  });

  it("an answer is a record of its own kind: a run's step or effect cannot take its name, nor replace it, and ask: names are kept for answers", () => {
    const answered = record({ kind: "answer", value: '{"choice":"hold"}' });
    expect(decideStepWrite(answered, write({ value: '{"choice":"apply"}' }), at, empty, budget)).toMatchObject({ action: "refuse", code: "bad_request", message: expect.stringContaining("a person's answer") });
    expect(decideStepWrite(answered, write({ kind: "effect", phase: "intent", value: null }), at, empty, budget)).toMatchObject({ action: "refuse" });
    expect(decideStepWrite(record(), write({ kind: "answer" }), at, empty, budget)).toMatchObject({ action: "refuse", message: expect.stringContaining("recorded as a step") });
    expect(decideStepWrite(null, write({ kind: "answer" }), at, empty, budget)).toMatchObject({ action: "record", record: { kind: "answer", status: "done" } });
    expect(runWriteRefusal("ask:1")).toMatch(/kept for a person's answers/);
    expect(runWriteRefusal("ask-1")).toBeNull();
    expect(questionStepRefusal("approval", null)).toBeNull();
    expect(questionStepRefusal("approval", { kind: "step" })).toMatch(/recorded as a step already: an ask needs a name of its own/);
    expect(questionStepRefusal("ask:1", { kind: "answer" })).toMatch(/a person's answer already/);
  });

  it("the effect an attempt began and has not finished is its own: another attempt's open intent is not", () => {
    const journal = [
      { name: "plan", kind: "step" as const, status: "done" as const, token: 7 },
      { name: "old", kind: "effect" as const, status: "intent" as const, token: 6 },
      { name: "pay", kind: "effect" as const, status: "intent" as const, token: 7 },
    ];
    expect(openEffectOf(journal, 7)).toBe("pay");
    expect(openEffectOf(journal, 8)).toBeNull();
    expect(openEffectOf(journal.slice(0, 2), 7)).toBeNull();
  });
});

const policy: MessagePolicy = { ...DEFAULT_POLICY, runTimeoutMs: 10_000, maxAttempts: 1, heartbeatTimeoutMs: 1000 };
const msg = (over: Partial<MessageLease> = {}): MessageLease => ({
  id: 1, status: "queued", attempts: 0, token: 0, runner: null, expiresAt: null, group: null, runTimeoutMs: null, retryAt: null, capAt: null, pendingAsk: null, onDeadline: null, parkMs: null, forPerson: false, ...over,
});

describe("an effect's unknown outcome in the message's lease", () => {
  it("an attempt that ends with an open ask intent parks the message, even with its attempts used up", () => {
    const running = { ...lease(msg(), "r", 1, 0, policy), pendingAsk: "pay" };
    expect(takeBack(running, policy)).toMatchObject({ status: "parked", runner: null, expiresAt: null });
    expect(failAttempt(running, 5, policy)).toMatchObject({ status: "parked", retryAt: null });
    expect(takeBack({ ...running, pendingAsk: null }, policy).status).toBe("failed");
  });

  it("a resume of such a message needs the person's answer, and an answer needs such a message", () => {
    const parked = { ...msg({ status: "parked", attempts: 1 }), pendingAsk: "pay" };
    expect(resume(parked, 0)).toMatchObject({ ok: false, code: "outcome_unknown" });
    expect(resume(parked, 0, "done")).toMatchObject({ ok: true, message: { status: "queued", pendingAsk: null } });
    expect(resume({ ...parked, pendingAsk: null }, 0, "redo")).toMatchObject({ ok: false, code: "bad_request" });
  });
});

describe("heartbeats", () => {
  it("a hand-out's deadline is the heartbeat timeout's, capped by the run timeout", () => {
    expect(lease(msg(), "r", 1, 100, policy)).toMatchObject({ expiresAt: 1100, capAt: 10_100 });
    expect(lease(msg(), "r", 1, 100, { ...policy, heartbeatTimeoutMs: null })).toMatchObject({ expiresAt: 10_100, capAt: 10_100 });
  });

  it("a heartbeat moves the deadline a timeout from now, never past the cap and never back", () => {
    const running = lease(msg(), "r", 1, 0, policy);
    expect(extendRun(running, 500, policy).expiresAt).toBe(1500);
    expect(extendRun(running, 9800, policy).expiresAt).toBe(10_000);
    expect(extendRun({ ...running, expiresAt: 5000 }, 100, policy).expiresAt).toBe(5000);
    expect(extendRun(running, 500, { ...policy, heartbeatTimeoutMs: null }).expiresAt).toBe(1000);
  });
});
