// The rules of large values: room is reserved in bytes and count before anything is stored, and
// only a staged blob of the same token may be committed; a step result is a value or a blob.
import { describe, expect, it } from "vitest";
import { commitRefusal, decideReserve } from "../../worker/rules/blob-ledger.ts";
import { decideStepWrite } from "../../worker/rules/step-journal.ts";

const budget = { bytes: 100, count: 2, perBlob: 60 };

describe("decideReserve", () => {
  it("refuses a blob over the per-blob limit, past the count, or past the message's bytes", () => {
    expect(decideReserve([], 60, budget)).toEqual({ ok: true });
    expect(decideReserve([], 61, budget)).toMatchObject({ ok: false, code: "too_large", message: expect.stringMatching(/a blob is at most 60/) });
    expect(decideReserve([{ bytes: 1 }, { bytes: 1 }], 1, budget)).toMatchObject({ ok: false, message: expect.stringMatching(/at most 2 blobs/) });
    expect(decideReserve([{ bytes: 50 }], 51, budget)).toMatchObject({ ok: false, message: expect.stringMatching(/100 bytes together/) });
  });
});

describe("commitRefusal", () => {
  it("lets only a staged or committed blob of the same token be committed", () => {
    expect(commitRefusal({ blob: "b", token: 3, bytes: 9, state: "staged" }, 3)).toBeNull();
    expect(commitRefusal({ blob: "b", token: 3, bytes: 9, state: "committed" }, 3)).toMatch(/already committed/);
    expect(commitRefusal({ blob: "b", token: 3, bytes: 9, state: "uploading" }, 3)).toMatch(/not finished/);
    expect(commitRefusal({ blob: "b", token: 2, bytes: 9, state: "staged" }, 3)).toMatch(/another token/);
    expect(commitRefusal(null, 3)).toMatch(/no such blob/);
  });
});

describe("decideStepWrite with a blob", () => {
  const at = { attempt: 1, token: 3 };
  const usage = { steps: 0, bytes: 0 };
  const journal = { steps: 10, bytes: 10 };
  it("records the blob instead of a value, and counts none of it against the inline journal budget", () => {
    const d = decideStepWrite(null, { name: "s", kind: "step", phase: "done", value: null, blob: { id: "b-1", bytes: 5000 }, onUnknown: null }, at, usage, journal);
    expect(d).toMatchObject({ action: "record", record: { value: null, blob: { id: "b-1", bytes: 5000 } } });
  });
  it("refuses a value and a blob together, and a blob on an intent", () => {
    expect(decideStepWrite(null, { name: "s", kind: "step", phase: "done", value: "1", blob: { id: "b", bytes: 1 }, onUnknown: null }, at, usage, journal))
      .toMatchObject({ action: "refuse", code: "bad_request" });
    expect(decideStepWrite(null, { name: "e", kind: "effect", phase: "intent", value: null, blob: { id: "b", bytes: 1 }, onUnknown: "ask" }, at, usage, journal))
      .toMatchObject({ action: "refuse", code: "bad_request" });
  });
});
