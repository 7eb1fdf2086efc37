// The message-lease frames of the wire module in plain Node: what a write must name, park, and the HTTP bodies.
import { describe, expect, it } from "vitest";
import { parseBody, parseClientFrame, policySchema, postMessageSchema, resumeSchema } from "../../worker/wire/protocol.ts";

const parse = (frame: unknown) => parseClientFrame(JSON.stringify(frame));

describe("message lease frames", () => {
  it("reject writes that name no lease, or half of a message checkpoint, with bad_frame", () => {
    for (const frame of [
      { type: "reply", id: 1, key: "k", text: "t" },
      { type: "ack", id: 1 },
      { type: "checkpoint", value: 1 },
      { type: "checkpoint", id: 1, value: 1, fence: 2 },
      { type: "checkpoint", token: 3, value: 1 },
      { type: "park", id: 1 },
      { type: "park", id: 1, token: 0 },
      { type: "park", id: 1, token: 2, deadline_seconds: 0 },
      { type: "serve_lease", op: "claim", concurrency: 0 },
      { type: "hello", concurrency: 65 },
    ]) {
      expect(parse(frame), JSON.stringify(frame)).toMatchObject({ ok: false, code: "bad_frame" });
    }
  });

  it("reject an oversized park checkpoint with too_large", () => {
    expect(parse({ type: "park", id: 1, token: 2, value: "x".repeat(17 * 1024) })).toMatchObject({ ok: false, code: "too_large" });
  });

  it("accept token writes, failures, the agent's fenced checkpoint, message checkpoints, parks and slots", () => {
    for (const frame of [
      { type: "reply", id: 1, token: 4, key: "k", text: "t" },
      { type: "fail", id: 1, token: 3, reason: "exit 3" },
      { type: "ack", id: 1, token: 4 },
      { type: "checkpoint", fence: 2, value: { a: 1 } },
      { type: "checkpoint", id: 1, token: 4, value: null },
      { type: "park", id: 1, token: 4, value: { step: 3 }, deadline_seconds: 3600 },
      { type: "serve_lease", op: "claim", concurrency: 8 },
    ]) {
      expect(parse(frame), JSON.stringify(frame)).toMatchObject({ ok: true });
    }
  });

  it("HTTP bodies: policy, post with group and run timeout, resume input", () => {
    expect(parseBody(policySchema, { mode: "pool", max_running: 4, run_timeout_seconds: 90, max_attempts: 3 }).ok).toBe(true);
    expect(parseBody(policySchema, { mode: "swarm" }).ok).toBe(false);
    expect(parseBody(postMessageSchema, { text: "x", group: "chat-1", run_timeout_seconds: 30 }).ok).toBe(true);
    expect(parseBody(postMessageSchema, { text: "x", group: "a\u202eb" }).ok).toBe(false);
    expect(parseBody(resumeSchema, { input: "yes" }).ok).toBe(true);
    expect(parseBody(resumeSchema, { input: 5 }).ok).toBe(false);
  });
});
