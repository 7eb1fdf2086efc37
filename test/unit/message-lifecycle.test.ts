// The message lifecycle table walked pair by pair (STYLE 32, after temporalio/sdk-core's transition
// coverage): every status against every event, through the rule that makes that event. A declared
// move lands only in a declared status, and every declared status is reached by some variant; a
// declared refusal is the code the rule answers; "stays" changes nothing; an undeclared pair throws
// LifecycleError, never a silent write (complete() of a parked message included).
import { describe, expect, it } from "vitest";
import {
  answer, askPerson, checkMessageWrite, complete, decline, DEFAULT_POLICY, failAttempt, lease, park, parkDeadline, resume, retry, takeBack, type MessageLease,
} from "../../worker/rules/message-lease.ts";
import { cancel } from "../../worker/rules/message-cancel.ts";
import { supersede } from "../../worker/rules/on-busy.ts";
import { LIFECYCLE, LIFECYCLE_EVENTS, LifecycleError, type LifecycleEvent } from "../../worker/rules/message-lifecycle.ts";
import { MESSAGE_STATUSES, type MessageStatus } from "../../worker/wire/enums.ts";

const NOW = 1_000_000;
const policy = { ...DEFAULT_POLICY, maxAttempts: 3 };

function inStatus(status: MessageStatus, over: Partial<MessageLease> = {}): MessageLease {
  return {
    id: 1, status, attempts: 1, token: 5, runner: status === "running" ? "r1" : null, expiresAt: status === "running" || status === "parked" ? NOW - 1 : null,
    group: null, runTimeoutMs: null, retryAt: null, capAt: null, pendingAsk: null, onDeadline: null, parkMs: null, forPerson: false, ...over,
  };
}

/** What one rule did: moved it (its status after), refused (the code), left it as it was, or threw. */
type Outcome = { moved: MessageStatus } | { refused: string } | { stays: true } | { threw: string };

function outcome(f: () => MessageLease | { ok: true; message: MessageLease } | { ok: false; code: string } | { outcome: string; message?: unknown; code?: string } | { ok: true } | null, before: MessageLease): Outcome {
  let r: ReturnType<typeof f>;
  try {
    r = f();
  } catch (err) {
    if (err instanceof LifecycleError) return { threw: err.name };
    throw err;
  }
  if (r === null) return { stays: true };
  if ("outcome" in r) {
    if (r.outcome === "already") return { stays: true };
    if (r.outcome === "refused") return { refused: r.code! };
    return { moved: (r.message as MessageLease).status };
  }
  if ("ok" in r) {
    if (!r.ok) return { refused: r.code };
    return "message" in r ? { moved: r.message.status } : { moved: before.status };
  }
  return { moved: r.status };
}

/** Each event's rule, in every variant of the data that picks among its declared statuses. */
const VARIANTS: Record<LifecycleEvent, ((m: MessageLease) => Outcome)[]> = {
  ask_person: [(m) => outcome(() => askPerson({ ...m, forPerson: true }, NOW, null, null), m)],
  hand_out: [(m) => outcome(() => lease(m, "r2", 9, NOW, policy), m)],
  write: [(m) => outcome(() => checkMessageWrite(m, m.token, m.runner ?? "r1", NOW - 10), m)],
  complete: [(m) => outcome(() => complete(m), m)],
  park: [(m) => outcome(() => park(m, NOW, 60_000, "approve"), m)],
  decline: [(m) => outcome(() => decline(m), m)],
  fail: [
    (m) => outcome(() => failAttempt(m, NOW, policy), m),
    (m) => outcome(() => failAttempt({ ...m, attempts: 3 }, NOW, policy), m),
    (m) => outcome(() => failAttempt({ ...m, pendingAsk: "pay" }, NOW, policy), m),
  ],
  take_back: [
    (m) => outcome(() => takeBack(m, policy), m),
    (m) => outcome(() => takeBack({ ...m, attempts: 3 }, policy), m),
    (m) => outcome(() => takeBack({ ...m, pendingAsk: "pay" }, policy), m),
  ],
  deadline: [
    (m) => outcome(() => parkDeadline(m, NOW), m),
    (m) => outcome(() => parkDeadline({ ...m, onDeadline: "approve" }, NOW), m),
    (m) => outcome(() => parkDeadline({ ...m, onDeadline: "approve", forPerson: true }, NOW), m),
    (m) => outcome(() => parkDeadline({ ...m, onDeadline: "reject" }, NOW), m),
    (m) => outcome(() => parkDeadline({ ...m, onDeadline: "escalate" }, NOW), m),
  ],
  answer: [
    (m) => outcome(() => answer({ ...m, expiresAt: null }, { choice: "approve", text: null }, null, NOW), m),
    (m) => outcome(() => answer({ ...m, expiresAt: null }, { choice: "reject", text: null }, null, NOW), m),
    (m) => outcome(() => answer({ ...m, expiresAt: null, forPerson: true }, { choice: "approve", text: null }, null, NOW), m),
  ],
  resume: [(m) => outcome(() => resume({ ...m, expiresAt: null }, NOW), m)],
  retry: [(m) => outcome(() => retry(m), m)],
  cancel: [(m) => outcome(() => cancel(m), m)],
  supersede: [(m) => outcome(() => supersede({ ...m, attempts: 0 }), m)],
};

/** Events of a runner's write: checkMessageWrite refuses them before their rule runs. */
const RUNNER_WRITES: ReadonlySet<LifecycleEvent> = new Set(["complete", "park", "decline", "fail"]);

describe("the message lifecycle table, every status against every event", () => {
  for (const status of MESSAGE_STATUSES) {
    for (const event of LIFECYCLE_EVENTS) {
      const cell = LIFECYCLE[status][event];
      const declared = cell === null ? "undeclared: throws" : "to" in cell ? `moves to ${cell.to.join(" | ")}` : "refuse" in cell ? `refused ${cell.refuse}` : "stays";
      it(`${status} × ${event}: ${declared}`, () => {
        const outcomes = VARIANTS[event].map((v) => v(inStatus(status)));
        if (cell === null) {
          for (const o of outcomes) expect(o).toEqual({ threw: "LifecycleError" });
        } else if ("to" in cell) {
          const reached = new Set(outcomes.map((o) => ("moved" in o ? o.moved : JSON.stringify(o))));
          expect([...reached].sort()).toEqual([...cell.to].sort());
        } else if ("refuse" in cell) {
          if (RUNNER_WRITES.has(event)) {
            // The write's token check answers the refusal first; the rule itself, asked anyway, throws.
            expect(VARIANTS.write[0]!(inStatus(status))).toEqual({ refused: cell.refuse });
            for (const o of outcomes) expect(o).toEqual({ threw: "LifecycleError" });
          } else {
            for (const o of outcomes) expect(o).toEqual({ refused: cell.refuse });
          }
        } else {
          for (const o of outcomes) expect(o).toEqual({ stays: true });
        }
      });
    }
  }

  it("complete() of a message that is not running throws instead of writing it acknowledged", () => {
    expect(() => complete(inStatus("parked"))).toThrow(LifecycleError);
    expect(() => complete(inStatus("cancelled"))).toThrow(/complete does not move a cancelled message/);
  });
});
