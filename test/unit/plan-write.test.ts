// A runner's write decided at its token (worker/rules/plan/write.ts).
import { describe, expect, it } from "vitest";
import { decideWrite, type AttemptTraces, type RunnerWrite, type WriteTarget } from "../../worker/rules/plan/write.ts";
import { DEFAULT_POLICY } from "../../worker/rules/message-lease.ts";
import { NOW, running } from "./plan-fixtures.ts";

function target(over: Partial<WriteTarget> = {}): WriteTarget {
  return { lease: running(7, "1", { token: 12 }), acked: { runner: null, write: { id: 7, fence: 0, key: "ack" } }, asked: null, blob: null, journal: { openIntents: [], record: null }, traces: null, ...over };
}

const reply: RunnerWrite = { type: "reply", id: 7, token: 12, text: "done", key: "k1", req: "r" } as RunnerWrite;
const fail: RunnerWrite = { type: "fail", id: 7, token: 12, reason: "boom", req: "f" } as RunnerWrite;
const parkFrame: RunnerWrite = { type: "park", id: 7, token: 12, deadline_seconds: 5, req: "p" } as RunnerWrite;
const checkpoint: RunnerWrite = { type: "message_checkpoint", id: 7, token: 12, value: { n: 1 }, req: "c" } as RunnerWrite;

describe("decideWrite", () => {
  const cases: { name: string; t: WriteTarget | null; frame: RunnerWrite; writer?: string; reply: object; after: string | null; refused?: string; expired?: boolean }[] = [
    { name: "no message: unknown_message", t: null, frame: reply, reply: { type: "error", code: "unknown_message" }, after: null },
    { name: "a reply from its runner completes it (complete)", t: target(), frame: reply, reply: { type: "result", op: "reply", duplicate: false, fence: 3 }, after: "acknowledged" },
    { name: "a stale token is refused and counted", t: target(), frame: { ...reply, token: 11 } as RunnerWrite, reply: { type: "error", code: "stale_token" }, after: null, refused: "stale_token" },
    { name: "another runner's write: not_your_message", t: target(), frame: reply, writer: "2", reply: { type: "error", code: "not_your_message" }, after: null, refused: "not_your_message" },
    { name: "after the run deadline: refused, and the plan takes it back", t: target({ lease: running(7, "1", { token: 12, expiresAt: NOW }) }), frame: reply,
      reply: { type: "error", code: "message_not_running" }, after: null, refused: "message_not_running", expired: true },
    { name: "a repeated reply from the runner that finished it is a duplicate", t: target({ lease: running(7, "1", { token: 12, status: "acknowledged" }), acked: { runner: "1", write: { id: 7, fence: 2, key: "k1" } } }),
      frame: reply, reply: { type: "result", duplicate: true, fence: 2 }, after: null },
    { name: "a reply while an effect's outcome is unknown: outcome_unknown", t: target({ lease: running(7, "1", { token: 12, pendingAsk: "pay" }) }), frame: reply, reply: { type: "error", code: "outcome_unknown" }, after: null },
    { name: "a reply after asking a person: question_open", t: target({ asked: { text: "ok?", choices: null, step: null, on_deadline: null, token: 12, asked_at: 0 } }), frame: reply,
      reply: { type: "error", code: "question_open" }, after: null },
    { name: "a fail queues it after a backoff", t: target(), frame: fail, reply: { type: "result", op: "fail", status: "queued" }, after: "queued" },
    { name: "a park parks it with its deadline", t: target(), frame: parkFrame, reply: { type: "result", op: "park", deadline: NOW + 5000 }, after: "parked" },
    { name: "a blob the token may not commit is refused", t: target({ blob: { blob: "b", token: 12, bytes: 9, state: "uploading" } }), frame: { ...reply, blob: "b" } as RunnerWrite, reply: { type: "error", code: "bad_request" }, after: null },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const d = decideWrite(c.t, c.frame, c.writer ?? "1", 3, DEFAULT_POLICY, NOW);
      expect(d.reply).toMatchObject(c.reply);
      expect(d.change?.lease?.status ?? null).toBe(c.after);
      expect([d.refused, d.expired]).toEqual([c.refused ?? null, c.expired ?? false]);
    });
  }

  it("a message checkpoint is a change with no lease: stored by the plan, nothing moves", () => {
    const d = decideWrite(target(), checkpoint, "1", 3, DEFAULT_POLICY, NOW);
    expect(d.change).toMatchObject({ id: 7, lease: null, checkpoint: { kept: { value: { n: 1 } }, token: 12 } });
  });

  it("a completed reply carries its write and drops the uploads it never committed", () => {
    expect(decideWrite(target({ blob: { blob: "b", token: 12, bytes: 9, state: "staged" } }), { ...reply, blob: "b" } as RunnerWrite, "1", 3, DEFAULT_POLICY, NOW).change).toMatchObject({
      ack: { fence: 3, key: "k1", reply: { id: "b", bytes: 9 }, token: 12, runner: "1" }, commitBlob: "b", dropUncommitted: true,
    });
  });

  describe("a stopping runner's decline", () => {
    const decline = { type: "decline", id: 7, token: 12, req: "d" } as RunnerWrite;
    const none: AttemptTraces = { steps: 0, checkpoint: false, heartbeatAt: null, output: false, blobs: 0 };
    const decide = (t: WriteTarget) => decideWrite(t, decline, "1", 3, DEFAULT_POLICY, NOW, true);

    it("of an attempt that left nothing: queued again, the attempt keeping its number and counted declined", () => {
      expect(decide(target({ traces: none })).change?.lease).toMatchObject({ status: "queued", attempts: 1, declined: 1 });
    });

    const ran: [string, Partial<WriteTarget>][] = [
      ["a journal record", { traces: { ...none, steps: 1 } }],
      ["a checkpoint", { traces: { ...none, checkpoint: true } }],
      ["a heartbeat", { traces: { ...none, heartbeatAt: NOW - 1 } }],
      ["output", { traces: { ...none, output: true } }],
      ["a blob", { traces: { ...none, blobs: 1 } }],
      ["a question", { traces: none, asked: { text: "ok?", choices: null, step: null, on_deadline: null, token: 12, asked_at: 0 } }],
    ];
    for (const [what, over] of ran) {
      it(`of an attempt that stored ${what}: refused (it ran; fail it), nothing moves`, () => {
        const d = decide(target(over));
        expect(d.reply).toMatchObject({ type: "error", code: "outcome_unknown", message: expect.stringContaining("fail it") });
        expect(d.change).toBeNull();
      });
    }
  });
});
