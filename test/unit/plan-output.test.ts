// rules/plan/output.ts as a table: which batches are stored (and how much of the oldest output
// must go), which are refused and why, and the marks a message change leaves in the output.
import { describe, expect, it } from "vitest";
import { decideOutput, outputMarks, type OutputTarget, type OutputWriter } from "../../worker/rules/plan/output.ts";
import type { MessageChange } from "../../worker/rules/plan/types.ts";
import { decline, DEFAULT_POLICY, failAttempt, lease as handOut, retry } from "../../worker/rules/message-lease.ts";
import { message, NOW, running } from "./plan-fixtures.ts";

const lease = running(7, "1", { token: 5, attempts: 2, expiresAt: NOW + 1000 });
const target = (over: Partial<OutputTarget> = {}): OutputTarget => ({ lease, head: { nextOffset: 100, keptBytes: 60 }, machine: "laptop-2", ...over });
const chunks = [{ stream: "stdout" as const, text: "héllo" }, { stream: "stderr" as const, base64: "AP8=" }];

describe("decideOutput", () => {
  const cases: [string, OutputTarget | null, number, OutputWriter, number, string | null, number | null][] = [
    // name, target, token, writer, budget, refusal code, bytes to free
    ["the runner of the current token writes: stored at the head's offset", target(), 5, { runner: "1" }, 1000, null, 0],
    ["past the budget: the oldest bytes must go, as many as it passes", target(), 5, { runner: "1" }, 64, null, 60 + 8 - 64],
    ["an older token is refused as stale", target(), 4, { runner: "1" }, 1000, "stale_token", null],
    ["another runner with the token is refused", target(), 5, { runner: "2" }, 1000, "not_your_message", null],
    ["a matching run key stands for the runner", target(), 5, { runKeyMatches: true }, 1000, null, 0],
    ["a wrong run key is refused", target(), 5, { runKeyMatches: false }, 1000, "not_your_message", null],
    ["after the run deadline it is refused", target({ lease: { ...lease, expiresAt: NOW } }), 5, { runner: "1" }, 1000, "message_not_running", null],
    ["a finished message takes no more output", target({ lease: { ...lease, status: "acknowledged" } }), 5, { runner: "1" }, 1000, "message_not_running", null],
    ["an unknown message", null, 5, { runner: "1" }, 1000, "unknown_message", null],
  ];
  it.each(cases)("%s", (_, t, token, writer, budget, code, free) => {
    const d = decideOutput(t, 7, token, chunks, writer, budget, NOW, "r1");
    if (code !== null) {
      expect(d.change).toBeNull();
      expect(d.reply).toMatchObject({ type: "error", code, req: "r1" });
      return;
    }
    expect(d.reply).toEqual({ type: "result", op: "output", req: "r1", id: 7, token, offset: 108 });
    expect(d.change).toEqual({ kind: "output", id: 7, before: "running", lease: null, output: { token, attempt: 2, machine: "laptop-2", offset: 100, chunks, bytes: 8, free } });
  });
});

describe("outputMarks", () => {
  const ended = (over: object, status: string) => outputMarks({ id: 7, before: "running", lease: { ...lease, status } as never, ...over } as unknown as MessageChange, null).ended;
  const takenBack = { kind: "taken_back", escalate: false };
  it.each([
    ["a reply", { kind: "ack", ack: { fence: 1, key: "k", reply: "x", token: 5, runner: "1" }, commitBlob: null }, "acknowledged", "replied"],
    ["a cancel", { kind: "cancelled", by: { account: "a", token: "t", via: "cli" }, reason: null }, "cancelled", "cancelled"],
    ["a park", { kind: "park", question: null, checkpoint: null }, "parked", "parked"],
    ["a failed run", { kind: "fail", failure: "exit 1" }, "queued", "failed"],
    ["a take-back for a gone runner", { ...takenBack, failure: "gone", ended: "lease_lost" }, "queued", "lease_lost"],
    ["a run timeout", { ...takenBack, failure: "late", ended: "timed_out" }, "failed", "timed_out"],
  ])("%s ends the attempt", (_, over, status, reason) => {
    expect(ended(over, status)).toEqual({ attempt: 2, reason });
  });
  it("a decline ends the attempt it gave back under that attempt's number, and the next hand-out begins the next number: two sections, never one number twice", () => {
    const declined = decline(lease);
    expect(outputMarks({ kind: "declined", id: 7, before: "running", lease: declined }, null)).toEqual({ ended: { attempt: 2, reason: "declined" }, began: null });
    const next = handOut(declined, "2", 6, NOW, DEFAULT_POLICY);
    expect(outputMarks({ kind: "hand_out", id: 7, before: "queued", lease: next, to: 0, fence: 2, machine: "laptop-3", runKey: "rk" }, "laptop-3"))
      .toEqual({ ended: null, began: { attempt: 3, machine: "laptop-3" } });
  });
  it("after a person's retry the next hand-out begins attempt N+1, a section of its own, never attempt 1 again", () => {
    const failed = failAttempt(lease, NOW, { ...DEFAULT_POLICY, maxAttempts: 2 });
    expect(outputMarks({ kind: "fail", id: 7, before: "running", lease: failed, failure: "exit 1" } as MessageChange, null)).toEqual({ ended: { attempt: 2, reason: "failed" }, began: null });
    const retried = retry(failed);
    if (!retried.ok) throw new Error(retried.message);
    const next = handOut(retried.message, "2", 6, NOW, DEFAULT_POLICY);
    expect(outputMarks({ kind: "hand_out", id: 7, before: "queued", lease: next, to: 0, fence: 2, machine: "laptop-3", runKey: "rk" }, "laptop-3"))
      .toEqual({ ended: null, began: { attempt: 3, machine: "laptop-3" } });
  });
  it("a hand-out begins the next attempt on its machine; a write that leaves it running marks nothing", () => {
    expect(outputMarks({ kind: "hand_out", id: 7, before: "queued", lease: { ...lease, attempts: 3 }, to: 0, fence: 1, machine: "laptop-1", runKey: "rk" }, "laptop-1")).toEqual({ ended: null, began: { attempt: 3, machine: "laptop-1" } });
    expect(outputMarks({ kind: "heartbeat", id: 7, before: "running", lease: null, expiresAt: null, progress: null }, null)).toEqual({ ended: null, began: null });
    const cancelled = { kind: "cancelled" as const, id: 7, before: "queued" as const, lease: message(7, { status: "cancelled" }), by: { account: "a", token: "t", via: "cli" }, reason: null };
    expect(outputMarks(cancelled, null)).toEqual({ ended: null, began: null });
  });
});
