// Phase 5 of a plan: messages taken back. A running message whose runner may no longer run it
// (gone, released, not the holder in single mode) or whose run deadline passed goes back (queued,
// failed after its last attempt, parked when an effect's outcome is unknown), and a runner still
// connected is told to stop; a parked message past its deadline becomes what its deadline says.
// A cancelled message's runner is told to stop here too.
import { expireDue, takeBack, type MessageLease, type MessagePolicy } from "../message-lease.ts";
import type { JournalUsage } from "../step-journal.ts";
import type { Cancelling } from "./event.ts";
import { deadlineAnswer, type TargetMessage } from "./person.ts";
import type { CancelPlan, MessageChange, RevokeReason, TakeBack } from "./types.ts";

const TAKEN_BACK: Record<RevokeReason, string> = {
  run_timeout: "its run timeout passed before the runner finished",
  runner_gone: "its runner left (disconnected, released the lease or went silent) before finishing",
  heartbeat_timeout: "its run sent no heartbeat within the heartbeat timeout",
};
const PARK_DEADLINE_PASSED = "its park deadline passed before anyone answered";

export interface TakenBack {
  open: Map<number, MessageLease>;
  takeBacks: TakeBack[];
  cancels: CancelPlan[];
  /** Message id to the runner it was just taken from: the next hand-out prefers another. */
  avoid: Map<number, string>;
  /** The writes of the take-backs, in order. */
  changes: MessageChange[];
}

/** What a passed park deadline reads beyond the lease: the messages whose deadline answers for a person, and the journal's budget. */
export interface DeadlineContext {
  due: ReadonlyMap<number, TargetMessage>;
  budget: JournalUsage;
}

const NO_DEADLINES: DeadlineContext = { due: new Map(), budget: { steps: 0, bytes: 0 } };

/**
 * `connected`: every live claiming connection by runner id; `eligible`: the runners that may run
 * messages now (dispatch.ts eligibleRunners).
 */
export function takeBackDue(
  open: ReadonlyMap<number, MessageLease>, connected: ReadonlyMap<string, number>, eligible: ReadonlyMap<string, number>,
  cancelling: readonly Cancelling[], policy: MessagePolicy, now: number, deadlines: DeadlineContext = NO_DEADLINES,
): TakenBack {
  const out: TakenBack = { open: new Map(open), takeBacks: [], cancels: [], avoid: new Map(), changes: [] };
  const taken = (t: TakeBack, before: MessageLease, ended?: "lease_lost" | "timed_out") => {
    out.takeBacks.push(t);
    out.open.set(t.lease.id, t.lease);
    if (t.deadline === "approve" || t.deadline === "reject") {
      const target = deadlines.due.get(t.lease.id);
      // Not read (it cannot be gone while open): nothing is stored, and it is not handed out.
      if (target === undefined) return void out.open.set(before.id, before);
      const change = deadlineAnswer(target, t.lease, t.deadline, deadlines.budget, now);
      out.changes.push(change);
      out.open.set(t.lease.id, change.lease);
      return;
    }
    out.changes.push({ kind: "taken_back", id: t.lease.id, before: before.status, lease: t.lease, failure: t.error, escalate: t.deadline === "escalate", ended: ended ?? null });
  };
  out.cancels = cancelling.map(({ target, by, reason, verdict }) => {
    const stopped = verdict.outcome === "cancelled" ? verdict.stop : null;
    const to = stopped === null ? undefined : connected.get(stopped.runner);
    return { verdict, by, reason, stop: to === undefined ? null : { to, id: target.id, token: stopped!.token } };
  });
  const revokeFor = (m: MessageLease, reason: RevokeReason) => {
    const to = connected.get(m.runner ?? "");
    return to === undefined ? null : { to, token: m.token, reason };
  };
  for (const m of out.open.values()) {
    if (m.status !== "running" || eligible.has(m.runner ?? "")) continue;
    taken({ lease: takeBack(m, policy), error: TAKEN_BACK.runner_gone, revoke: revokeFor(m, "runner_gone") }, m, "lease_lost");
  }
  for (const next of expireDue([...out.open.values()], now, policy)) {
    const before = out.open.get(next.id)!;
    if (before.status === "running") {
      if (before.runner !== null) out.avoid.set(before.id, before.runner);
      // A deadline short of the run timeout's cap was a heartbeat deadline.
      const why: RevokeReason = policy.heartbeatTimeoutMs !== null && before.capAt !== null && before.expiresAt! < before.capAt ? "heartbeat_timeout" : "run_timeout";
      taken({ lease: next, error: TAKEN_BACK[why], revoke: revokeFor(before, why) }, before, "timed_out");
    } else {
      const by = before.onDeadline;
      // A deadline never settles an effect whose outcome is unknown: parkDeadline only dropped it.
      if (before.pendingAsk !== null && by !== "escalate") taken({ lease: next, error: null, revoke: null }, before);
      else if (by === "approve" || by === "reject" || by === "escalate") taken({ lease: next, error: null, revoke: null, deadline: by }, before);
      else taken({ lease: next, error: PARK_DEADLINE_PASSED, revoke: null }, before);
    }
  }
  return out;
}
