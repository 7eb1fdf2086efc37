// A run copy's text (worker/objects/run-copy.ts): its journal spliced in from the values' stored
// JSON reads, under the wire schema, as the same frame built value by value.
import { describe, expect, it } from "vitest";
import { runCopyText } from "../../worker/objects/run-copy.ts";
import type { StepRecord } from "../../worker/rules/step-journal.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { parseServerFrame } from "../../worker/wire/server-frames.ts";

const FRAME: MessageFrame = {
  type: "message", id: 7, text: "work", attempt: 2, created_at: 1_700_000_000_000, run: true, token: 9, run_timeout_ms: 60_000,
  group: null, resume_input: null, resume_choice: null, checkpoint: { at: "b" }, run_key: "0123456789abcdef",
};

const record = (name: string, value: unknown, extra: Partial<StepRecord> = {}): StepRecord => ({
  name, kind: "step", status: "done", value: value === undefined ? null : JSON.stringify(value), blob: null, onUnknown: null, attempt: 1, token: 3, at: 1, ...extra,
});

/** As the run copy was built before: every value parsed into the frame, the frame stringified. */
const valueByValue = (journal: StepRecord[]) => ({
  ...FRAME,
  ...(journal.length === 0 ? {} : {
    steps: journal.map((r) => ({
      name: r.name, kind: r.kind, status: r.status, on_unknown: r.onUnknown, attempt: r.attempt,
      ...(r.value === null ? {} : { value: JSON.parse(r.value) as unknown }), ...(r.blob === null ? {} : { blob: r.blob }),
    })),
  }),
});

describe("a run copy's text", () => {
  it("without a journal is the frame itself", () => {
    expect(runCopyText(FRAME, [])).toBe(JSON.stringify(FRAME));
  });

  it("carries every stored value as the frame built value by value would, and the wire schema reads it", () => {
    const journal = [
      record("object", { a: [1, 2, { b: null }], "q\"uote": "back\\slash", nl: "line\nnext" }),
      record("unicode", "naïve 日本 😀 \u2028 \u0000"),
      record("lone-surrogate", "\ud800 alone"),
      record("json-null", null),
      record("zero", 0),
      record("false", false),
      record("float", -1.5e-7),
      record("empty", ""),
      record("intent", undefined, { kind: "effect", status: "intent", onUnknown: "ask", attempt: 2 }),
      record("big", undefined, { blob: { id: "b-0123456789abcdef0123456789abcdef", bytes: 5_000_000 } }),
      record("answered", { choice: "approve", text: null, by: { account: "dev", token: "t", via: "cli" }, at: 5 }, { kind: "answer" }),
    ];
    const text = runCopyText(FRAME, journal);
    expect(JSON.parse(text)).toEqual(valueByValue(journal));
    const parsed = parseServerFrame(text);
    expect(parsed).toEqual(valueByValue(journal));
  });

  it("keeps the journal's order", () => {
    const journal = ["c", "a", "b"].map((n) => record(n, n));
    expect((JSON.parse(runCopyText(FRAME, journal)) as { steps: { name: string }[] }).steps.map((s) => s.name)).toEqual(["c", "a", "b"]);
  });
});
