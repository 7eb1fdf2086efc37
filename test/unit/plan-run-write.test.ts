// A run's own writes decided at its token over the rows they touch (worker/rules/plan/run-write.ts).
import { describe, expect, it } from "vitest";
import { planAsk, planHeartbeat, planReserve, planStage, planStep, type RunWrite, type StepRows } from "../../worker/rules/plan/run-write.ts";
import { DEFAULT_POLICY } from "../../worker/rules/message-lease.ts";
import { NOW, running } from "./plan-fixtures.ts";

const BUDGET = { steps: 3, bytes: 100 };
const lease = running(7, "1", { token: 12, attempts: 2 });
const run = { id: 7, token: 12, writer: { runner: "1" } as const, lease };
const rows = (over: Partial<StepRows> = {}): StepRows => ({
  openIntents: [], record: null, usage: { steps: 0, bytes: 0 }, blob: null, keptKey: null, keys: { tag: "t", agent: "a" }, permit: null, ...over,
});
const intent = { name: "pay", kind: "effect" as const, status: "intent" as const, value: null, blob: null, onUnknown: "ask" as const, attempt: 1, token: 11, at: 0 };
type StepCase = Extract<RunWrite, { kind: "step" }>;
const step = (over: Partial<StepCase["step"]> = {}, r: StepRows = rows(), w: Partial<StepCase> = {}): StepCase => ({
  kind: "step", ...run, step: { name: "s", kind: "step", phase: "done", value: "1", blob: null, onUnknown: null, ...over }, rows: r, ...w,
});

describe("planStep", () => {
  const cases: { name: string; w: StepCase; answer: object; change: object | null }[] = [
    { name: "a result under the current token is journaled", w: step(), answer: { ok: true, status: "done", duplicate: false, value: 1 }, change: { journal: { record: { name: "s", attempt: 2, token: 12 } } } },
    { name: "a stale token is refused and nothing changes", w: step({}, rows(), { token: 11 }), answer: { ok: false, status: 409, code: "stale_token" }, change: null },
    { name: "a wrong run key is not_your_message", w: step({}, rows(), { writer: { runKeyMatches: false } }), answer: { ok: false, status: 403, code: "not_your_message" }, change: null },
    { name: "a done record is final: a second write is a duplicate and changes nothing", w: step({ value: "2" }, rows({ record: { ...intent, name: "s", kind: "step", status: "done", value: "1" } })),
      answer: { ok: true, duplicate: true, value: 1 }, change: null },
    { name: "a duplicate of a record whose stored value is corrupt is refused as internal, naming the row, and changes nothing (never replayed as another value)", w: step({ value: "2" }, rows({ record: { ...intent, name: "s", kind: "step", status: "done", value: "{not json" } })),
      answer: { ok: false, status: 500, code: "internal", message: expect.stringContaining("message_steps.value") }, change: null },
    { name: "past the journal's byte budget: too_large (413)", w: step({ value: JSON.stringify("x".repeat(200)) }), answer: { ok: false, status: 413, code: "too_large" }, change: null },
    { name: "a name kept for a person's answers is refused", w: step({ name: "ask:1" }), answer: { ok: false, status: 400, code: "bad_request" }, change: null },
    { name: "a blob the token may not commit is refused", w: step({ value: null, blob: { id: "b", bytes: 0 } }, rows({ blob: { blob: "b", token: 11, bytes: 5, state: "staged" } })),
      answer: { ok: false, code: "bad_request" }, change: null },
    { name: "a first intent of an asking effect mints its key, keeps it and marks the message", w: step({ name: "pay", kind: "effect", phase: "intent", value: null, onUnknown: "ask" }),
      answer: { ok: true, status: "intent", idempotency_key: "baton:t:a:7:pay" }, change: { kind: "step", keepKey: { name: "pay", key: "baton:t:a:7:pay" }, pendingAsk: { step: "pay" } } },
    { name: "an intent the previous release kept without a key gets that release's key", w: step({ name: "pay", kind: "effect", phase: "done", value: "1" }, rows({ record: intent, openIntents: [intent] })),
      answer: { ok: true, idempotency_key: "baton:a:7:pay" }, change: { keepKey: { name: "pay", key: "baton:a:7:pay" } } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = planStep(c.w, NOW, BUDGET);
      expect(d.answer).toMatchObject(c.answer);
      if (c.change === null) expect(d.change).toBeNull();
      else expect(d.change).toMatchObject(c.change);
    });
  }
});

describe("a heartbeat, an ask, an upload", () => {
  it("a heartbeat moves the run deadline on and keeps its details as progress; after the deadline it is refused, expired", () => {
    const d = planHeartbeat({ kind: "heartbeat", ...run, details: { p: 1 } }, DEFAULT_POLICY, NOW);
    expect(d.change).toMatchObject({ kind: "heartbeat", progress: '{"p":1}' });
    const late = planHeartbeat({ kind: "heartbeat", ...run, lease: { ...lease, expiresAt: NOW }, details: null }, DEFAULT_POLICY, NOW);
    expect([late.answer, late.change]).toMatchObject([{ ok: false, code: "message_not_running", expired: true }, null]);
  });

  it("a question inside an open effect of the attempt is refused; a second question keeps the first", () => {
    const inside = { name: "pay", kind: "effect" as const, status: "intent" as const, onUnknown: "ask" as const, token: 12 };
    const ask = { kind: "ask" as const, ...run, question: { text: "ok?" }, deadlineSeconds: null, open: null, rows: { openIntents: [inside], record: null } };
    expect(planAsk(ask, NOW).answer).toMatchObject({ ok: false, code: "effect_in_progress" });
    const asked = { text: "first?", choices: null, step: "q1", on_deadline: null, token: 12, asked_at: 0 };
    expect(planAsk({ ...ask, rows: { openIntents: [], record: null }, question: { text: "again?", step: "q2" }, open: asked }, NOW)).toEqual({ answer: { ok: true, id: 7, token: 12 }, change: null });
  });

  it("a reserve drops earlier attempts' uncommitted uploads whatever the verdict, and reserves within the budget", () => {
    const reserve = { kind: "reserve" as const, ...run, bytes: 10, budget: { bytes: 100, count: 2, perBlob: 50 }, rows: { blobs: [], fresh: { blob: "b-1", r2Key: "k/b-1" } } };
    expect(planReserve(reserve, NOW)).toMatchObject({ answer: { ok: true, blob: "b-1", r2Key: "k/b-1" }, change: { kind: "reserve", dropBefore: 12, reserve: { blob: "b-1", bytes: 10 } } });
    const full = planReserve({ ...reserve, bytes: 60 }, NOW);
    expect([full.answer, full.change]).toMatchObject([{ ok: false, status: 413, code: "too_large" }, { kind: "reserve", dropBefore: 12, reserve: null }]);
  });

  it("a stored upload is staged under its token; one whose run ended meanwhile is discarded and refused", () => {
    const row = { blob: "b-1", token: 12, bytes: 10, state: "uploading" as const };
    const stage = { kind: "stage" as const, ...run, blob: "b-1", stored: true, row };
    expect(planStage(stage, NOW)).toMatchObject({ answer: { ok: true }, change: { kind: "stage", blob: "b-1", staged: true } });
    expect(planStage({ ...stage, lease: { ...lease, status: "cancelled" } }, NOW)).toMatchObject({ answer: { ok: false, code: "cancelled" }, change: { kind: "stage", blob: "b-1", staged: false } });
    expect(planStage({ ...stage, row: null }, NOW)).toMatchObject({ answer: { ok: false, code: "bad_request" }, change: null });
  });
});
