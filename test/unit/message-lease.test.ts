// The message lifecycle rules: dispatch order, groups, slots, tokens, run timeouts, park and resume.
import { describe, expect, it } from "vitest";
import {
  answer, checkMessageWrite, complete, decline, DEFAULT_POLICY, expireDue, failAttempt, lease, nextMessageDeadline, park, planDispatch, resume, retry, retryBackoffMs, takeBack, triesOf,
  type MessageLease, type MessagePolicy,
} from "../../worker/rules/message-lease.ts";

const msg = (id: number, over: Partial<MessageLease> = {}): MessageLease => ({
  id, status: "queued", attempts: 0, token: 0, runner: null, expiresAt: null, group: null, runTimeoutMs: null, retryAt: null, capAt: null, pendingAsk: null, onDeadline: null, parkMs: null, forPerson: false, ...over,
});
const pool: MessagePolicy = { ...DEFAULT_POLICY, mode: "pool", maxRunning: 10, runTimeoutMs: 1000, maxAttempts: 3 };

describe("planDispatch", () => {
  it("hands the oldest queued messages to the runners with free slots, roomiest first", () => {
    const plan = planDispatch([msg(3), msg(1), msg(2)], [{ id: "a", free: 1 }, { id: "b", free: 2 }], pool);
    expect(plan).toEqual([{ id: 1, runner: "b" }, { id: 2, runner: "a" }, { id: 3, runner: "b" }]);
  });

  it("never runs more than maxRunning at once, counting what already runs", () => {
    const plan = planDispatch([msg(1, { status: "running" }), msg(2), msg(3)], [{ id: "a", free: 5 }], { ...pool, maxRunning: 2 });
    expect(plan).toEqual([{ id: 2, runner: "a" }]);
  });

  it("runs one message of a group at a time, in id order; a parked one blocks its group", () => {
    const open = [msg(1, { group: "g", status: "parked" }), msg(2, { group: "g" }), msg(3, { group: "h" }), msg(4, { group: "h" }), msg(5)];
    expect(planDispatch(open, [{ id: "a", free: 9 }], pool).map((p) => p.id)).toEqual([3, 5]);
  });

  it("a message just taken from a runner goes to another runner with room, and back to it only when none has", () => {
    const avoid = new Map([[1, "a"]]);
    expect(planDispatch([msg(1)], [{ id: "a", free: 2 }, { id: "b", free: 1 }], pool, avoid)).toEqual([{ id: 1, runner: "b" }]);
    expect(planDispatch([msg(1)], [{ id: "a", free: 2 }, { id: "b", free: 0 }], pool, avoid)).toEqual([{ id: 1, runner: "a" }]);
  });

  it("a group whose oldest message waits for a slot still holds back its younger ones", () => {
    expect(planDispatch([msg(1, { group: "g" }), msg(2, { group: "g" })], [], pool)).toEqual([]);
  });
});

describe("a message's own lease", () => {
  it("lease raises the attempt, takes the token and sets the run deadline (per-message timeout wins)", () => {
    expect(lease(msg(1), "a", 7, 100, pool)).toMatchObject({ status: "running", attempts: 1, token: 7, runner: "a", expiresAt: 1100 });
    expect(lease(msg(1, { runTimeoutMs: 50 }), "a", 8, 100, pool).expiresAt).toBe(150);
  });

  it("a write with an older token is refused as stale; a finished message refuses its own token too", () => {
    const running = lease(msg(1), "a", 7, 0, pool);
    expect(checkMessageWrite(running, 7, "a", 0)).toEqual({ ok: true });
    expect(checkMessageWrite(running, 6, "a", 0)).toMatchObject({ ok: false, code: "stale_token" });
    expect(checkMessageWrite(complete(running), 7, "a", 0)).toMatchObject({ ok: false, code: "message_not_running" });
  });

  it("a token is honoured only from the runner it was handed to", () => {
    const running = lease(msg(1), "a", 7, 0, pool);
    expect(checkMessageWrite(running, 7, "b", 0)).toMatchObject({ ok: false, code: "not_your_message" });
    expect(checkMessageWrite(running, 7, "null", 0)).toMatchObject({ ok: false, code: "not_your_message" });
  });

  it("the run deadline is decided at the write: one millisecond late is refused, whether or not the alarm ran", () => {
    const running = lease(msg(1), "a", 7, 0, pool);
    expect(checkMessageWrite(running, 7, "a", 999)).toEqual({ ok: true });
    expect(checkMessageWrite(running, 7, "a", 1000)).toMatchObject({ ok: false, code: "message_not_running" });
  });

  it("a failed attempt queues the message again after a growing backoff; the last allowed attempt fails it", () => {
    const first = lease(msg(1), "a", 1, 0, pool);
    expect(failAttempt(first, 50, pool)).toMatchObject({ status: "queued", runner: null, retryAt: 50 + retryBackoffMs(1) });
    expect(retryBackoffMs(1)).toBe(1000);
    expect(retryBackoffMs(3)).toBe(4000);
    expect(retryBackoffMs(30)).toBe(60_000);
    expect(failAttempt(lease(msg(1, { attempts: 2 }), "a", 3, 0, pool), 0, pool)).toMatchObject({ status: "failed", retryAt: null });
    // Not handed out during its backoff, handed out after it.
    const waiting = failAttempt(first, 0, pool);
    expect(planDispatch([waiting], [{ id: "a", free: 1 }], pool, new Map(), 999)).toEqual([]);
    expect(planDispatch([waiting], [{ id: "a", free: 1 }], pool, new Map(), 1000)).toEqual([{ id: 1, runner: "a" }]);
    expect(nextMessageDeadline([waiting])).toBe(1000);
  });

  it("a run past its deadline is taken back and queued again; after maxAttempts it fails", () => {
    const first = lease(msg(1), "a", 1, 0, pool);
    expect(expireDue([first], 999, pool)).toEqual([]);
    expect(expireDue([first], 1000, pool)).toEqual([{ ...first, status: "queued", runner: null, expiresAt: null, capAt: null }]);
    const third = lease(msg(1, { attempts: 2 }), "a", 3, 0, pool);
    expect(takeBack(third, pool).status).toBe("failed");
  });

  it("park gives the lease up; resume queues it again; a park deadline fails it", () => {
    const parked = park(lease(msg(1), "a", 1, 0, pool), 0, 5000);
    expect(parked).toMatchObject({ status: "parked", runner: null, expiresAt: 5000 });
    expect(resume(parked, 4999)).toMatchObject({ ok: true, message: { status: "queued", attempts: 1, expiresAt: null } });
    expect(resume(parked, 5000)).toMatchObject({ ok: false, code: "not_parked" });
    expect(resume(msg(2), 0)).toMatchObject({ ok: false, code: "not_parked" });
    expect(expireDue([parked], 5000, pool)[0]?.status).toBe("failed");
  });

  it("an answer queues a parked message again; reject ends it; choices are the question's or approve; twice or too late is refused", () => {
    const parked = park(lease(msg(1), "a", 1, 0, pool), 0, 5000);
    expect(answer(parked, { choice: "approve", text: "ok" }, null, 10)).toMatchObject({ ok: true, message: { status: "queued", expiresAt: null, onDeadline: null } });
    expect(answer(parked, { choice: "reject", text: null }, null, 10)).toMatchObject({ ok: true, message: { status: "rejected" } });
    expect(answer(parked, { choice: "ship", text: null }, ["ship", "hold"], 10)).toMatchObject({ ok: true, message: { status: "queued" } });
    expect(answer(parked, { choice: "approve", text: null }, ["ship", "hold"], 10)).toMatchObject({ ok: false, code: "bad_request" });
    expect(answer(parked, { choice: "ship", text: null }, null, 10)).toMatchObject({ ok: false, code: "bad_request" });
    expect(answer(parked, { choice: "approve", text: null }, null, 5000)).toMatchObject({ ok: false, code: "not_parked" });
    const answered = (answer(parked, { choice: "approve", text: null }, null, 10) as { message: MessageLease }).message;
    expect(answer(answered, { choice: "approve", text: null }, null, 11)).toMatchObject({ ok: false, code: "not_parked" });
    expect(answer({ ...parked, pendingAsk: "pay" }, { choice: "approve", text: null }, null, 10)).toMatchObject({ ok: false, code: "outcome_unknown" });
  });

  it("a question's deadline does what it says: fail, approve, reject, or wait once more (escalate, at most once a minute)", () => {
    const asked = (onDeadline: "fail" | "approve" | "reject" | "escalate") => park(lease(msg(1), "a", 1, 0, pool), 1000, 5000, onDeadline);
    expect(expireDue([asked("fail")], 6000, pool)[0]).toMatchObject({ status: "failed" });
    expect(expireDue([asked("approve")], 6000, pool)[0]).toMatchObject({ status: "queued", onDeadline: null, expiresAt: null });
    expect(expireDue([asked("reject")], 6000, pool)[0]).toMatchObject({ status: "rejected" });
    expect(expireDue([asked("escalate")], 6100, pool)[0]).toMatchObject({ status: "parked", expiresAt: 66_100, onDeadline: "escalate" });
    expect(expireDue([asked("approve")], 5999, pool)).toEqual([]);
  });

  it("a deadline never settles a message waiting on an effect whose outcome is unknown: it lapses, and only done or redo releases it", () => {
    const unknown = (onDeadline: "fail" | "approve" | "reject") => ({ ...park(lease(msg(1), "a", 1, 0, pool), 1000, 5000, onDeadline), pendingAsk: "pay" });
    for (const onDeadline of ["fail", "approve", "reject"] as const) {
      const after = expireDue([unknown(onDeadline)], 6000, pool)[0]!;
      expect(after).toMatchObject({ status: "parked", pendingAsk: "pay", expiresAt: null, onDeadline: null });
      expect(answer(after, { choice: "approve", text: null }, null, 6001)).toMatchObject({ ok: false, code: "outcome_unknown" });
      expect(resume(after, 6001, "done")).toMatchObject({ ok: true, message: { status: "queued", pendingAsk: null } });
    }
    // Between the deadline and the alarm, too: the person's done or redo is taken.
    expect(resume(unknown("approve"), 6000, "redo")).toMatchObject({ ok: true, message: { status: "queued" } });
  });

  it("an escalating question past its deadline still takes its answer (it waits again, so refusing would be untrue)", () => {
    const asked = park(lease(msg(1), "a", 1, 0, pool), 1000, 5000, "escalate");
    expect(answer(asked, { choice: "approve", text: null }, null, 6000)).toMatchObject({ ok: true, message: { status: "queued", expiresAt: null, onDeadline: null } });
    const escalated = expireDue([asked], 6000, pool)[0]!;
    expect(answer(escalated, { choice: "reject", text: null }, null, 6001)).toMatchObject({ ok: true, message: { status: "rejected" } });
    expect(resume(asked, 6000)).toMatchObject({ ok: true, message: { status: "queued" } });
    // A deadline that decides (fail, approve, reject) still refuses a late answer: the alarm applies it.
    expect(answer(park(lease(msg(2), "a", 2, 0, pool), 1000, 5000, "approve"), { choice: "approve", text: null }, null, 6000)).toMatchObject({ ok: false, code: "not_parked" });
  });

  it("a group with a running message takes no other, even an older one queued again by a retry", () => {
    const open = [msg(1, { group: "g" }), msg(2, { group: "g", status: "running", runner: "a" }), msg(3, { group: "h" })];
    expect(planDispatch(open, [{ id: "a", free: 3 }], pool)).toEqual([{ id: 3, runner: "a" }]);
  });

  it("a failed message is retried with a fresh set of tries, keeping its attempts (the next is attempt 4); nothing else is", () => {
    const retried = retry(msg(1, { status: "failed", attempts: 3, token: 9 }));
    expect(retried).toMatchObject({ ok: true, message: { status: "queued", attempts: 3, retriedAfter: 3, token: 9 } });
    expect(retried.ok && triesOf(retried.message)).toBe(0);
    expect(retried.ok && lease(retried.message, "a", 10, 0, pool)).toMatchObject({ attempts: 4, token: 10 });
    expect(retry(msg(1, { status: "running" }))).toMatchObject({ ok: false });
  });

  it("the next deadline is the earliest among running and parked messages", () => {
    const open = [lease(msg(1), "a", 1, 0, pool), park(msg(2, { status: "running" }), 0, 400), msg(3)];
    expect(nextMessageDeadline(open)).toBe(400);
    expect(nextMessageDeadline([msg(3)])).toBeNull();
  });
});

describe("a question for a person alone", () => {
  const asked = msg(7, { status: "parked", forPerson: true });
  it.each([
    ["approve", "acknowledged"],
    ["ship", "acknowledged"],
    ["reject", "rejected"],
  ])("an answer %s ends it %s, never queued for a runner", (choice, status) => {
    const out = answer(asked, { choice, text: null }, choice === "ship" ? ["ship"] : null, 0);
    expect(out).toMatchObject({ ok: true, message: { status } });
  });

  it("a deadline that approves ends it acknowledged; escalate keeps it parked", () => {
    expect(expireDue([{ ...asked, expiresAt: 5, onDeadline: "approve", parkMs: 5 }], 5, pool)).toEqual([expect.objectContaining({ status: "acknowledged" })]);
    expect(expireDue([{ ...asked, expiresAt: 5, onDeadline: "escalate", parkMs: 5 }], 5, pool)).toEqual([expect.objectContaining({ status: "parked" })]);
  });

  it("is never resumed, retried or dispatched into a run", () => {
    expect(resume(asked, 0)).toMatchObject({ ok: false, code: "bad_request" });
    expect(retry({ ...asked, status: "failed" })).toMatchObject({ ok: false, code: "bad_request" });
    expect(planDispatch([{ ...asked, status: "queued" }], [{ id: "a", free: 9 }], pool)).toEqual([]);
  });
});

describe("decline", () => {
  it("queues a running message at once and counts its hand-out declined: the attempt keeps its number, no runner, no deadline, no backoff", () => {
    const running = lease(msg(1, { attempts: 2 }), "r1", 7, 1000, DEFAULT_POLICY);
    expect(running.attempts).toBe(3);
    expect(decline(running)).toMatchObject({ status: "queued", attempts: 3, declined: 1, token: 7, runner: null, expiresAt: null, capAt: null, retryAt: null });
    expect(triesOf(decline(running))).toBe(2);
  });

  it("the next hand-out after a decline is the next attempt number, never the declined one's again", () => {
    const declined = decline(lease(msg(1), "r1", 7, 1000, DEFAULT_POLICY));
    expect(lease(declined, "r2", 8, 2000, DEFAULT_POLICY)).toMatchObject({ status: "running", attempts: 2, declined: 1, token: 8, runner: "r2" });
  });

  it("with max_attempts 1, a declined message still runs once: its next attempt failing or taken back fails it, not the decline", () => {
    const one = { ...pool, maxAttempts: 1 };
    const again = lease(decline(lease(msg(1), "r1", 7, 1000, one)), "r2", 8, 2000, one);
    expect(again.attempts).toBe(2);
    expect(failAttempt(again, 3000, one)).toMatchObject({ status: "failed", attempts: 2, declined: 1 });
    expect(takeBack(again, one)).toMatchObject({ status: "failed" });
    expect(complete(again)).toMatchObject({ status: "acknowledged", attempts: 2, declined: 1 });
  });

  it("a message declined k times is not failed for attempts: its counted tries stay within max_attempts, and its backoff is theirs", () => {
    let m = msg(1);
    for (let k = 1; k <= 7; k++) m = decline(lease(m, `r${k}`, k, k * 1000, pool));
    expect(m).toMatchObject({ status: "queued", attempts: 7, declined: 7 });
    expect(triesOf(m)).toBe(0);
    const running = lease(m, "r8", 8, 9000, pool);
    expect(takeBack(running, pool)).toMatchObject({ status: "queued", attempts: 8 });
    // The first counted try that fails waits the first backoff (1 s), not the eighth's.
    expect(failAttempt(running, 10_000, pool)).toMatchObject({ status: "queued", retryAt: 10_000 + retryBackoffMs(1) });
  });

  it("a retry by a person keeps the attempts and starts the tries and the declined count again", () => {
    const retried = retry(msg(1, { status: "failed", attempts: 4, declined: 2 }));
    expect(retried).toMatchObject({ ok: true, message: { status: "queued", attempts: 4, retriedAfter: 4, declined: 0 } });
    expect(retried.ok && triesOf(retried.message)).toBe(0);
  });

  it("declines after a retry count since it: only the hand-outs since that were not declined are tries", () => {
    const retried = retry(msg(1, { status: "failed", attempts: 3, declined: 1 }));
    if (!retried.ok) throw new Error(retried.message);
    const declinedOnce = decline(lease(retried.message, "r1", 10, 1000, pool));
    expect(declinedOnce).toMatchObject({ attempts: 4, retriedAfter: 3, declined: 1 });
    expect(triesOf(declinedOnce)).toBe(0);
    expect(triesOf(lease(declinedOnce, "r2", 11, 2000, pool))).toBe(1);
  });

  it("tries never go below 0: declines outnumbering the hand-outs since the latest retry (no release writes such a row; a damaged one, or a rollback past retried_after, must not give extra tries) count none", () => {
    expect(triesOf(msg(1, { attempts: 0, declined: 2 }))).toBe(0);
    expect(triesOf(msg(1, { attempts: 1, declined: 2 }))).toBe(0);
    expect(triesOf(msg(1, { attempts: 4, retriedAfter: 4, declined: 1 }))).toBe(0);
    expect(triesOf(msg(1, { attempts: 3, declined: 1 }))).toBe(2);
  });
});

describe("a person's retry", () => {
  const failedAfter = (attempts: number): MessageLease => {
    let m = msg(1);
    for (let n = 1; n <= attempts; n++) m = failAttempt(lease(m, "a", n, n * 1000, pool), n * 1000 + 1, pool);
    return m;
  };

  it("a failed message runs as attempts N+1..N+max_attempts, each taken back or failed under its own number, and fails only after all of them", () => {
    const failed = failedAfter(pool.maxAttempts);
    expect(failed).toMatchObject({ status: "failed", attempts: 3 });
    const retried = retry(failed);
    if (!retried.ok) throw new Error(retried.message);
    let m = retried.message;
    for (const attempt of [4, 5]) {
      const running = lease(m, "b", attempt * 10, attempt * 10_000, pool);
      expect(running).toMatchObject({ status: "running", attempts: attempt });
      expect(takeBack(running, pool)).toMatchObject({ status: "queued", attempts: attempt });
      m = failAttempt(running, attempt * 10_000 + 1, pool);
      // The backoff is the fresh tries', not the tenth attempt's: 1 s, then 2 s.
      expect(m).toMatchObject({ status: "queued", attempts: attempt, retryAt: attempt * 10_000 + 1 + retryBackoffMs(attempt - 3) });
    }
    const last = lease(m, "b", 60, 60_000, pool);
    expect(last.attempts).toBe(6);
    expect(takeBack(last, pool)).toMatchObject({ status: "failed", attempts: 6 });
    expect(failAttempt(last, 60_001, pool)).toMatchObject({ status: "failed", attempts: 6, retriedAfter: 3 });
  });

  it("retried again, the tries count from the second retry: its attempts before it are the count it keeps", () => {
    const once = retry(failedAfter(3));
    if (!once.ok) throw new Error(once.message);
    let m = once.message;
    for (let n = 4; n <= 6; n++) m = failAttempt(lease(m, "b", n, n * 1000, pool), n * 1000 + 1, pool);
    expect(m).toMatchObject({ status: "failed", attempts: 6, retriedAfter: 3 });
    const twice = retry(m);
    expect(twice).toMatchObject({ ok: true, message: { status: "queued", attempts: 6, retriedAfter: 6 } });
    expect(twice.ok && lease(twice.message, "c", 7, 9000, pool)).toMatchObject({ attempts: 7 });
  });
});
