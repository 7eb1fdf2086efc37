// A run that lost its message replays nothing: the recorded result it would return may be another
// attempt's (issue 46: a stale `baton step` printed the new holder's output and exited 0). The
// library's runs (frames) and `baton step` (HTTP, refused by the coordinator) both throw LeaseLostError.
import { describe, expect, it } from "vitest";
import { LeaseLostError } from "../../client/errors.ts";
import { FrameJournal } from "../../client/core/frame-journal.ts";
import { runEffect, runStep } from "../../client/core/journal-rules.ts";
import { RunBlobs } from "../../client/core/run-blobs.ts";
import { Run } from "../../client/core/run.ts";
import { Writer } from "../../client/core/writes.ts";
import { systemClock } from "../../client/core/clock.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";

function handedOut(): Run {
  const msg = {
    type: "message", id: 7, token: 3, text: "work", run: true, attempt: 1, at: 0,
    steps: [
      { name: "draft", kind: "step", status: "done", value: "wrote-by-other", on_unknown: null, attempt: 1 },
      { name: "mail", kind: "effect", status: "done", value: "sent-by-other", on_unknown: "ask", attempt: 1 },
    ],
  } as unknown as MessageFrame & { token: number };
  return new Run(msg, systemClock);
}

const neverWrites = new Writer({
  link: { ttlMs: 1000, isOpen: true, send: () => {}, request: () => Promise.reject(new Error("no write expected")), nextReq: () => "r1", reconnectNow: () => {} },
  mayAct: () => true, mayRun: () => true, event: () => {},
});

describe("a replayed step of a run that lost its message", () => {
  it("returns the recorded result while the run holds its message", async () => {
    const run = handedOut();
    const journal = new FrameJournal(run, neverWrites, new RunBlobs("a", undefined));
    expect(await runStep(journal, "draft", () => "ran")).toBe("wrote-by-other");
    expect(await runEffect(journal, "mail", "ask", () => "ran", { agent: "a", id: 7 })).toBe("sent-by-other");
  });

  it("throws LeaseLostError instead of the recorded result once the run lost its message, for a step and an effect", async () => {
    const run = handedOut();
    run.abort(new LeaseLostError("the coordinator refused the step: stale_token", "stale_token"));
    const journal = new FrameJournal(run, neverWrites, new RunBlobs("a", undefined));
    let ran = false;
    await expect(runStep(journal, "draft", () => (ran = true))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(runEffect(journal, "mail", "ask", () => (ran = true), { agent: "a", id: 7 })).rejects.toMatchObject({ code: "stale_token" });
    expect(ran).toBe(false);
  });
});
