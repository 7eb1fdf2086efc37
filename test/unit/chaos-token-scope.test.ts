// The chaos sink and invariants in pool mode: each message's own lease tokens form a fence
// sequence of their own, so one message's tokens never fence another's.
import { describe, expect, it } from "vitest";
import { checkRun, INVARIANTS } from "../../scripts/chaos/invariants.ts";
import { EffectSink, type Effect } from "../../scripts/chaos/sink.ts";

const effect = (id: number, token: number, instance: string): Effect => ({ message_id: id, key: `${id}:effect`, fence: token, instance, attempt: 1, scope: id });

describe("chaos sink with per-message tokens", () => {
  it("refuses an older token of the same message, and never because of another message's token", () => {
    const sink = new EffectSink();
    expect(sink.offer(effect(1, 5, "a"))).toEqual({ accepted: true, duplicate: false });
    expect(sink.offer(effect(2, 3, "b"))).toEqual({ accepted: true, duplicate: false });
    expect(sink.offer(effect(1, 4, "a"))).toEqual({ accepted: false, reason: "stale_fence", highest: 5 });
  });

  it("checks exactly-once against the acknowledging token, and flags one token accepted from two runners", () => {
    const sink = new EffectSink();
    sink.offer(effect(1, 2, "a"));
    sink.offer(effect(2, 1, "b"));
    const messages = [
      { id: 1, status: "acknowledged", attempts: 2, acked_fence: 9, acked_token: 2 },
      { id: 2, status: "acknowledged", attempts: 1, acked_fence: 9, acked_token: 1 },
    ];
    expect(checkRun({ sentIds: [1, 2], messages, effects: sink.log }).invariants.every((i) => i.ok)).toBe(true);
    sink.offer({ ...effect(2, 1, "c"), key: "2:again" });
    const shared = checkRun({ sentIds: [1, 2], messages, effects: sink.log }).invariants.find((i) => i.name === INVARIANTS.oneHolderPerFence)!;
    expect(shared).toMatchObject({ ok: false, detail: "message 2 fence 1: b & c" });
    const late = [{ ...messages[0]!, acked_token: 1 }, messages[1]!];
    const once = checkRun({ sentIds: [1, 2], messages: late, effects: sink.log.slice(0, 2) }).invariants.find((i) => i.name === INVARIANTS.exactlyOnce)!;
    expect(once.ok).toBe(false);
  });
});
