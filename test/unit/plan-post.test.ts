// A post in the plan's event phase (worker/rules/plan/post.ts): the row it inserts under the next
// id, what its group's on_busy policy does, and a question for a person parked from the start.
import { describe, expect, it } from "vitest";
import { DISPATCH_WINDOW, inWindow, newLease, planPost, type NewPost, type PostPlan } from "../../worker/rules/plan/post.ts";
import { DEFAULT_POLICY, type MessagePolicy } from "../../worker/rules/message-lease.ts";
import { message, NOW, running } from "./plan-fixtures.ts";

const POST: NewPost = { text: "hi", group: "g", runTimeoutMs: null, key: "k1", question: null, deadlineSeconds: null, traceparent: null };
const policy = (over: Partial<MessagePolicy>): MessagePolicy => ({ ...DEFAULT_POLICY, ...over });

describe("planPost", () => {
  const cases: { name: string; post?: Partial<NewPost>; policy?: Partial<MessagePolicy>; groupOpen: ReturnType<typeof message>[] | null; expected: object }[] = [
    { name: "a plain post inserts under the next id, queued, with its key", groupOpen: null,
      expected: { ok: true, insert: { id: 8, text: "hi", createdAt: NOW, group: "g", key: "k1", holdUntil: null, first: false, forPerson: false }, lease: { id: 8, status: "queued" }, change: null, interrupt: [], supersede: [] } },
    { name: "reject while the group runs a message refuses it, naming the holder", policy: { onBusy: "reject" }, groupOpen: [running(5, "1", { group: "g" })],
      expected: { ok: false, code: "busy", holder: 5 } },
    { name: "reject while the group is idle stores it", policy: { onBusy: "reject" }, groupOpen: [], expected: { ok: true, insert: { id: 8 } } },
    { name: "interrupt cancels the running one and runs first", policy: { onBusy: "interrupt" }, groupOpen: [running(5, "1", { group: "g" })],
      expected: { ok: true, insert: { first: true }, lease: { first: true }, interrupt: [{ id: 5 }] } },
    { name: "replace with a debounce supersedes the never-started and holds the new one", policy: { onBusy: "replace", debounceMs: 300 }, groupOpen: [message(6, { group: "g" })],
      expected: { ok: true, insert: { holdUntil: NOW + 300, heldSince: NOW }, lease: { retryAt: NOW + 300, heldSince: NOW }, supersede: [{ id: 6 }] } },
    { name: "a question for a person is parked from the start with its question and deadline", post: { question: { text: "ok?", on_deadline: "approve" }, deadlineSeconds: 60 }, groupOpen: null,
      expected: {
        ok: true, insert: { forPerson: true }, lease: { status: "queued", forPerson: true },
        change: { kind: "park", checkpoint: null, id: 8, before: "queued", lease: { status: "parked", expiresAt: NOW + 60_000, onDeadline: "approve", parkMs: 60_000 }, question: { text: "ok?", token: 0, step: null, asked_at: NOW } },
      } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const out: PostPlan = planPost({ ...POST, ...c.post }, 7, c.groupOpen, policy(c.policy ?? {}), NOW);
      expect(out).toMatchObject(c.expected);
    });
  }
});

describe("inWindow", () => {
  const queued = Array.from({ length: DISPATCH_WINDOW }, (_, i) => message(i + 1));
  const fresh = newLease({ id: 9999, text: "", createdAt: NOW, group: null, runTimeoutMs: null, holdUntil: null, heldSince: null, first: false, forPerson: false, traceparent: null, key: null });
  it("a new message joins the open ones while the dispatch window has room", () => expect(inWindow(queued.slice(1), fresh)).toBe(true));
  it("past a full window it waits, as a snapshot would not have read it", () => expect(inWindow(queued, fresh)).toBe(false));
  it("one that interrupted its group joins anyway", () => expect(inWindow(queued, { ...fresh, first: true })).toBe(true));
});
