// A person's retry of a failed message, in a real agent object: it runs again with a fresh set of
// tries (max_attempts counts from the retry) while its attempt numbers go on, so its output
// sections, step records and the message view never show one attempt number twice.
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { outputSections as sections, runCopy as run } from "./output-sections.ts";
import { call, claimant, message, post, write, type TestSocket } from "./helpers.ts";
import { advanceClock, frozenAgent, passTime } from "./clock.ts";

/** One attempt that writes a line of output and a step named after its number, then fails. */
async function failingAttempt(sock: TestSocket, id: number, expected: number): Promise<MessageFrame> {
  const m = await run(sock, id);
  expect(m, `attempt ${expected}`).toMatchObject({ attempt: expected });
  expect(await write(sock, { type: "output", id, token: m.token, chunks: [{ stream: "stdout", text: `try ${expected}` }] })).toMatchObject({ type: "result" });
  expect(await write(sock, { type: "step", id, token: m.token, name: `s${expected}`, kind: "step", phase: "done", value: expected })).toMatchObject({ op: "step" });
  expect(await write(sock, { type: "fail", id, token: m.token, reason: `boom ${expected}` })).toMatchObject({ type: "result" });
  return m;
}

describe("a person's retry", () => {
  it("a failed message retried by a person runs as attempt N+1 with its own output section, and gets its full max_attempts again", async () => {
    const agent = await frozenAgent();
    await call("PUT", `/agents/${agent}/policy`, { max_attempts: 2 });
    const a = await claimant(agent, "a");
    const id = await post(agent, "flaky");
    const first = await failingAttempt(a.sock, id, 1);
    await passTime(agent, 1000);
    await failingAttempt(a.sock, id, 2);
    expect(await message(agent, id)).toMatchObject({ status: "failed", attempts: 2, retried_after: 0, failures: 2, error: "boom 2" });

    const retried = await call("POST", `/agents/${agent}/messages/${id}/retry`, {});
    // Its answer is the row as stored, already handed out again to the idle runner: as attempt 3.
    expect(retried).toMatchObject({ status: 200, body: { status: "running", attempts: 3, retried_after: 2, declined: 0 } });
    const third = await failingAttempt(a.sock, id, 3);
    expect(third.token).toBeGreaterThan(first.token!);
    // One try of the fresh set is used: queued again after the first backoff, not failed for its ten attempts' worth.
    const queued = await message(agent, id);
    expect(queued).toMatchObject({ status: "queued", attempts: 3, retried_after: 2, failures: 3 });
    expect(queued.retry_at).toBe((await advanceClock(0, { agent })).now + 1000);
    await passTime(agent, 1000);
    const fourth = await run(a.sock, id);
    expect(fourth).toMatchObject({ attempt: 4 });
    expect(fourth.steps?.map((s) => [s.name, s.attempt])).toEqual([["s1", 1], ["s2", 2], ["s3", 3]]);
    expect(await write(a.sock, { type: "output", id, token: fourth.token, chunks: [{ stream: "stdout", text: "try 4" }] })).toMatchObject({ type: "result" });
    expect(await write(a.sock, { type: "fail", id, token: fourth.token, reason: "boom 4" })).toMatchObject({ type: "result" });
    // Its second try since the retry used up max_attempts 2: failed, its numbers still growing.
    expect(await message(agent, id)).toMatchObject({ status: "failed", attempts: 4, retried_after: 2, failures: 4, error: "boom 4" });
    expect(await sections(agent, id)).toEqual([
      "1@a", "1:chunk", "1:failed", "2@a", "2:chunk", "2:failed", "3@a", "3:chunk", "3:failed", "4@a", "4:chunk", "4:failed",
    ]);
  });
});
