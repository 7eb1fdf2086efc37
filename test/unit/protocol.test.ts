// The shared wire module in plain Node: every way a client frame is rejected, with its exact
// error code, then the frames that pass.
import { describe, expect, it } from "vitest";
import { AGENT_NAME, answerSchema, approveSchema, LIMITS, parseClientFrame, questionSchema, resumeSchema, SESSION_NAME } from "../../worker/wire/protocol.ts";

function rejection(raw: string | ArrayBuffer) {
  const parsed = parseClientFrame(raw);
  if (parsed.ok) throw new Error(`expected a rejection, got ${JSON.stringify(parsed.frame)}`);
  return parsed;
}

describe("parseClientFrame rejects", () => {
  it("binary frames with binary_frame", () => {
    expect(rejection(new TextEncoder().encode('{"type":"ping"}').buffer as ArrayBuffer).code).toBe("binary_frame");
  });

  it("malformed JSON with bad_json", () => {
    for (const raw of ["", "{", "{type:ping}", "{'type':'ping'}", '{"type":"ping"}}', "NaN"]) {
      expect(rejection(raw).code, raw).toBe("bad_json");
    }
  });

  it("JSON that is not an object with bad_frame", () => {
    for (const raw of ["null", "42", '"ping"', "true", '[{"type":"ping"}]']) {
      expect(rejection(raw).code, raw).toBe("bad_frame");
    }
  });

  it("missing, non-string and unknown types with unknown_type, keeping a valid req id", () => {
    expect(rejection("{}").code).toBe("unknown_type");
    expect(rejection('{"type":7}').code).toBe("unknown_type");
    expect(rejection('{"type":"PING"}').code).toBe("unknown_type");
    expect(rejection('{"type":"__proto__"}').code).toBe("unknown_type");
    expect(rejection('{"type":"pong"}').code).toBe("unknown_type");
    expect(rejection('{"type":"welcome","req":"r9"}')).toMatchObject({ code: "unknown_type", req: "r9" });
  });

  it("does not echo a req id that is not a short string", () => {
    expect(rejection('{"type":"nope","req":5}').req).toBeUndefined();
    expect(rejection(JSON.stringify({ type: "nope", req: "r".repeat(65) })).req).toBeUndefined();
  });

  it("wrong field types with bad_frame", () => {
    const cases: unknown[] = [
      { type: "serve_lease", op: "take" },
      { type: "serve_lease" },
      { type: "serve_lease", op: "claim", fence: -1 },
      { type: "serve_lease", op: "claim", fence: 1.5 },
      { type: "serve_lease", op: "claim", fence: "1" },
      { type: "hello", machine: "" },
      { type: "hello", machine: "m".repeat(LIMITS.machineLabelChars + 1) },
      { type: "hello", machine: 7 },
      // The old hello cursor, which nothing read, is refused like any unknown field.
      { type: "hello", cursor: 0 },
      { type: "sync" },
      { type: "sync", after: -1 },
      { type: "ack", id: 0, token: 1 },
      { type: "ack", id: 1 },
      // The older fence-only ack and reply: a fence says who holds the agent, not who runs the message.
      { type: "ack", id: 1, fence: 1 },
      { type: "reply", id: 1, fence: 1, key: "k", text: "x" },
      { type: "fail", id: 1, token: 1, reason: "x".repeat(LIMITS.failReasonChars + 1) },
      { type: "reply", id: 1, token: 1, key: "", text: "x" },
      { type: "reply", id: 1, token: 1, key: "k".repeat(LIMITS.idempotencyKeyChars + 1), text: "x" },
      { type: "reply", id: 1, token: 1, key: "k", text: 5 },
      { type: "serve_lease", op: "claim", req: "r".repeat(65) },
    ];
    for (const frame of cases) expect(rejection(JSON.stringify(frame)).code, JSON.stringify(frame)).toBe("bad_frame");
  });

  it("machine labels with control or invisible format characters with bad_frame", () => {
    for (const machine of ["\u001b[2J", "evil\u001b]0;title\u0007", "a\u202Eb", "tab\there", "new\nline", "nul\u0000", "zw\u200Bsp"]) {
      expect(rejection(JSON.stringify({ type: "hello", machine })).code, JSON.stringify(machine)).toBe("bad_frame");
    }
    expect(parseClientFrame(JSON.stringify({ type: "hello", machine: "büro-1 (laptop) 🖥" })).ok).toBe(true);
  });

  it("extra fields with bad_frame", () => {
    expect(rejection('{"type":"ping","x":1}').code).toBe("bad_frame");
    expect(rejection('{"type":"serve_lease","op":"claim","held":true}').code).toBe("bad_frame");
    expect(rejection('{"type":"serve_lease","op":"claim","__proto__":{"admin":true}}').code).toBe("bad_frame");
  });

  it("frames over the frame limit with frame_too_large, counting bytes not characters", () => {
    const padding = "x".repeat(LIMITS.frameBytes);
    expect(rejection(JSON.stringify({ type: "ping", pad: padding })).code).toBe("frame_too_large");
    // Fewer characters than the limit, more bytes: three bytes per character in UTF-8.
    const wide = "€".repeat(Math.ceil(LIMITS.frameBytes / 3));
    expect(wide.length).toBeLessThan(LIMITS.frameBytes);
    expect(rejection(JSON.stringify({ type: "hello", machine: wide })).code).toBe("frame_too_large");
  });

  it("reply text and checkpoints over their own limits with too_large", () => {
    const text = "x".repeat(LIMITS.replyTextBytes + 1);
    expect(rejection(JSON.stringify({ type: "reply", id: 1, token: 1, key: "k", text, req: "q" }))).toMatchObject({
      code: "too_large",
      req: "q",
    });
    const value = { blob: "x".repeat(LIMITS.checkpointBytes) };
    expect(rejection(JSON.stringify({ type: "checkpoint", fence: 1, value })).code).toBe("too_large");
  });

  it("a checkpoint without a value with bad_frame", () => {
    expect(rejection('{"type":"checkpoint","fence":1}').code).toBe("bad_frame");
    expect(rejection('{"type":"agent_checkpoint","fence":1}').code).toBe("bad_frame");
    expect(rejection('{"type":"message_checkpoint","id":1,"token":2}').code).toBe("bad_frame");
  });

  it("an agent checkpoint with message fields, or a message checkpoint with a fence, with bad_frame", () => {
    expect(rejection('{"type":"agent_checkpoint","fence":1,"id":1,"token":2,"value":1}').code).toBe("bad_frame");
    expect(rejection('{"type":"message_checkpoint","fence":1,"id":1,"token":2,"value":1}').code).toBe("bad_frame");
    expect(rejection(`{"type":"checkpoint","fence":1,"blob":"b-${"a".repeat(32)}"}`).code).toBe("bad_frame");
    expect(rejection('{"type":"checkpoint","id":1,"value":1}').code).toBe("bad_frame");
  });
});

describe("parseClientFrame accepts", () => {
  it("every client frame type at its limits", () => {
    const frames: unknown[] = [
      { type: "ping" },
      { type: "hello", machine: "m".repeat(LIMITS.machineLabelChars) },
      { type: "serve_lease", op: "claim" },
      { type: "serve_lease", op: "release", fence: 3, req: "r".repeat(64) },
      { type: "sync", after: 0 },
      { type: "ack", id: 1, token: 1 },
      { type: "fail", id: 1, token: 1, reason: "x".repeat(LIMITS.failReasonChars) },
      { type: "reply", id: 1, token: 1, key: "k", text: "x".repeat(LIMITS.replyTextBytes) },
      { type: "checkpoint", fence: 1, value: { step: 3 } },
    ];
    for (const frame of frames) {
      const parsed = parseClientFrame(JSON.stringify(frame));
      expect(parsed.ok, JSON.stringify(parsed).slice(0, 200)).toBe(true);
    }
  });
});

describe("name rules", () => {
  it("agent names: lowercase, digits, '.', '_', '-', starting with a letter or digit, at most 63", () => {
    for (const good of ["a", "0", "my-agent", "a.b_c-d", "a".repeat(63)]) expect(AGENT_NAME.test(good), good).toBe(true);
    for (const bad of ["", "A", "Agent", "..", ".", ".hidden", "-x", "_x", "a/b", "a b", "a%2Fb", "a".repeat(64), "é", "a\n"]) {
      expect(AGENT_NAME.test(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it("session names: letters of either case, digits, '.', '_', '-', at most 128", () => {
    for (const good of ["S", "run-1.2_3", "x".repeat(128)]) expect(SESSION_NAME.test(good), good).toBe(true);
    for (const bad of ["", "..", "-x", "a/b", "a:b", "x".repeat(129), "a\n"]) {
      expect(SESSION_NAME.test(bad), JSON.stringify(bad)).toBe(false);
    }
  });
});

describe("what a person writes", () => {
  it("a question whose deadline approves must offer approve when it offers choices", () => {
    expect(questionSchema.safeParse({ text: "Paint it?", choices: ["red", "blue"], on_deadline: "approve" }).success).toBe(false);
    expect(questionSchema.safeParse({ text: "Paint it?", choices: ["approve", "blue"], on_deadline: "approve" }).success).toBe(true);
    expect(questionSchema.safeParse({ text: "Paint it?", on_deadline: "approve" }).success).toBe(true);
    expect(questionSchema.safeParse({ text: "Paint it?", choices: ["red", "blue"], on_deadline: "reject" }).success).toBe(true);
  });

  it.each([["answer", answerSchema, { choice: "ship" }], ["approve", approveSchema, {}], ["resume", resumeSchema, {}]] as const)(
    "%s text holds no NUL or other control characters (it reaches a command's environment), but newlines and tabs", (_n, schema, base) => {
      const field = schema === resumeSchema ? "input" : "text";
      expect(schema.safeParse({ ...base, [field]: "ok\u0000rm -rf" }).success).toBe(false);
      expect(schema.safeParse({ ...base, [field]: "ok\u001b[2J" }).success).toBe(false);
      expect(schema.safeParse({ ...base, [field]: "line one\n\tline two\r\n" }).success).toBe(true);
    });
});

describe("the checkpoint frame split in two", () => {
  it("an old client's checkpoint is read as the frame it stands for: id and token a message_checkpoint, only a fence an agent_checkpoint", () => {
    expect(parseClientFrame('{"type":"checkpoint","id":3,"token":9,"value":{"n":1},"req":"c1"}')).toEqual({
      ok: true, frame: { type: "message_checkpoint", id: 3, token: 9, value: { n: 1 }, req: "c1" },
    });
    expect(parseClientFrame(`{"type":"checkpoint","id":3,"token":9,"blob":"b-${"a".repeat(32)}"}`)).toEqual({ ok: true, frame: { type: "message_checkpoint", id: 3, token: 9, blob: `b-${"a".repeat(32)}` } });
    // The old form allowed a fence beside the message's token: the token decides, as it did.
    expect(parseClientFrame('{"type":"checkpoint","fence":2,"id":3,"token":9,"value":1}')).toEqual({ ok: true, frame: { type: "message_checkpoint", id: 3, token: 9, value: 1 } });
    expect(parseClientFrame('{"type":"checkpoint","fence":2,"value":{"n":1},"req":"c2"}')).toEqual({ ok: true, frame: { type: "agent_checkpoint", fence: 2, value: { n: 1 }, req: "c2" } });
  });

  it("the new frames parse as themselves", () => {
    expect(parseClientFrame('{"type":"agent_checkpoint","fence":2,"value":null}')).toEqual({ ok: true, frame: { type: "agent_checkpoint", fence: 2, value: null } });
    expect(parseClientFrame('{"type":"message_checkpoint","id":3,"token":9,"value":[1]}')).toEqual({ ok: true, frame: { type: "message_checkpoint", id: 3, token: 9, value: [1] } });
  });
});
