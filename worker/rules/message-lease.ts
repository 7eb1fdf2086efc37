// The life of one message as pure functions over plain records: who may run it next (planned in
// message-dispatch.ts), its own lease token, run timeout (visibility timeout), park and resume (in
// message-park.ts), and failure after too many attempts. Every status change goes through the
// lifecycle table (message-lifecycle.ts: status × event, generated into
// docs/reference/message-lifecycle.md); nothing here touches I/O.

import type { OnBusy } from "./on-busy.ts";
import type { MessageStatus, OnDeadline, PolicyMode } from "../wire/enums.ts";
import { enter, refusalOf } from "./message-lifecycle.ts";

export type { MessageStatus, OnDeadline };
export { isOpen, planDispatch, type Assignment, type RunnerSlots } from "./message-dispatch.ts";
export { answer, askPerson, park, resume, retry, type Answer, type AnswerResult, type ResumeResult } from "./message-park.ts";

/** The shortest wait between two escalations of one question. */
export const ESCALATE_EVERY_MS = 60_000;

export interface MessageLease {
  id: number;
  status: MessageStatus;
  /** How many times the message was handed out: the number of its latest attempt (attempt numbers only grow, as tokens do). */
  attempts: number;
  /**
   * Hand-outs before a person's latest retry (absent: never retried): the attempts after them are
   * the current set, which max attempts counts (triesOf). Attempt numbers go on across a retry.
   */
  retriedAfter?: number;
  /** Of the hand-outs since the latest retry, those a stopping runner gave back unstarted (decline): never counted against max attempts (absent: none). */
  declined?: number;
  /** Lease token of the latest hand-out; 0 before the first. Tokens come from one agent-wide counter, so they only grow. */
  token: number;
  /** The runner holding the message while it runs. */
  runner: string | null;
  /** Run deadline while running, park deadline while parked (null: none). */
  expiresAt: number | null;
  /** Messages of one group run one at a time, in id order. */
  group: string | null;
  /** Overrides the agent's run timeout for this message. */
  runTimeoutMs: number | null;
  /** A queued message whose last attempt failed is not handed out before this (its backoff); null: at once. */
  retryAt: number | null;
  /** While running: the hard cap of the run timeout, which heartbeats never move past (null: none kept). */
  capAt: number | null;
  /** An effect of this attempt with an intent and no outcome whose policy is to ask (rules/step-journal.ts). */
  pendingAsk: string | null;
  /** While parked with a deadline: what the deadline does (null: fail), and how long each wait is (escalate waits again). */
  onDeadline: OnDeadline | null;
  parkMs: number | null;
  /**
   * A question for a person and nothing else (an MCP host's ask): parked from the start, never
   * handed to a runner; the answer is its outcome.
   */
  forPerson: boolean;
  /** Runs before older queued messages of its group (the message that interrupted it, on_busy interrupt). */
  first?: boolean;
  /** Held by a debounce: when the first message of the burst it ended was posted (on_busy replace). */
  heldSince?: number;
}

export interface MessagePolicy {
  mode: PolicyMode;
  /** Messages running at once across all runners. */
  maxRunning: number;
  runTimeoutMs: number;
  /** After this many attempts a message that is taken back fails instead of running again. */
  maxAttempts: number;
  /**
   * A run that neither heartbeats nor finishes within this is taken back (null: only the run
   * timeout applies). Each heartbeat moves the deadline this far from the moment it arrives, never
   * past the run timeout.
   */
  heartbeatTimeoutMs: number | null;
  /** What a new message does while its group is busy (rules/on-busy.ts); with replace, how long a new one is held, and at most after its burst's first (null: LIMITS.debounceMaxMs's default). */
  onBusy: OnBusy;
  debounceMs: number | null;
  debounceMaxMs: number | null;
  /** Whether the agent answers A2A (its Agent Card and JSON-RPC, worker/a2a-routes.ts), and what its card says it does. */
  a2a: boolean;
  description: string | null;
}

export const DEFAULT_POLICY: MessagePolicy = {
  mode: "single", maxRunning: 64, runTimeoutMs: 3_600_000, maxAttempts: 5, heartbeatTimeoutMs: null, onBusy: "queue", debounceMs: null, debounceMaxMs: null, a2a: false, description: null,
};

/** Hand-outs since a person's latest retry (all of them, when it was never retried), declined ones too. */
export function handOutsSinceRetry(m: Pick<MessageLease, "attempts" | "retriedAfter">): number {
  return m.attempts - (m.retriedAfter ?? 0);
}

/**
 * The attempts that count against max attempts (taken back, failed, backoff; on_busy's "never
 * started"): every hand-out since the latest retry but the declined ones.
 */
export function triesOf(m: Pick<MessageLease, "attempts" | "declined" | "retriedAfter">): number {
  return handOutsSinceRetry(m) - (m.declined ?? 0);
}

/** Hands a queued message to a runner under a fresh token, with its run deadline (the heartbeat timeout's, when sooner). */
export function lease(m: MessageLease, runner: string, token: number, now: number, policy: MessagePolicy): MessageLease {
  const capAt = now + (m.runTimeoutMs ?? policy.runTimeoutMs);
  const expiresAt = policy.heartbeatTimeoutMs === null ? capAt : Math.min(capAt, now + policy.heartbeatTimeoutMs);
  return enter(m, "hand_out", { ...m, status: "running", attempts: m.attempts + 1, token, runner, expiresAt, capAt, retryAt: null, pendingAsk: null });
}

/**
 * A heartbeat of a running message (whose write was checked): its deadline moves to a heartbeat
 * timeout from now, never past the run timeout's cap, and never back.
 */
export function extendRun(m: MessageLease, now: number, policy: MessagePolicy): MessageLease {
  if (policy.heartbeatTimeoutMs === null || m.expiresAt === null) return m;
  const cap = m.capAt ?? Infinity;
  return { ...m, expiresAt: Math.max(m.expiresAt, Math.min(cap, now + policy.heartbeatTimeoutMs)) };
}

/** An attempt that ends with an effect's outcome unknown (policy ask) waits for a person instead of running again. */
function parkUnknown(m: MessageLease): MessageLease {
  return { ...m, status: "parked", runner: null, expiresAt: null, capAt: null, retryAt: null };
}

export type MessageWriteVerdict =
  | { ok: true }
  | { ok: false; code: "stale_token" | "message_not_running" | "not_your_message" | "cancelled"; message: string };

/**
 * A write for a message (reply, ack, checkpoint, park, fail) must carry the token of its running
 * lease, come from the runner it was handed to, and arrive before its run deadline by the
 * coordinator's clock at the moment of the write: a deadline the alarm has not got round to yet
 * has still passed.
 */
export function checkMessageWrite(m: MessageLease, token: number, runner: string, now: number): MessageWriteVerdict {
  if (token !== m.token) {
    return { ok: false, code: "stale_token", message: `token ${token} is not message ${m.id}'s current token ${m.token}` };
  }
  const refused = refusalOf(m.status, "write");
  if (refused === "cancelled") {
    return { ok: false, code: "cancelled", message: `message ${m.id} was cancelled: its run must stop, and nothing it writes is kept` };
  }
  if (refused !== null) {
    return { ok: false, code: "message_not_running", message: `message ${m.id} is ${m.status}, not running` };
  }
  if (m.runner !== runner) {
    return { ok: false, code: "not_your_message", message: `message ${m.id} was handed to another connection; its token is honoured only there` };
  }
  if (m.expiresAt !== null && now >= m.expiresAt) {
    return { ok: false, code: "message_not_running", message: `message ${m.id}'s run deadline passed ${now - m.expiresAt} ms before this write` };
  }
  return { ok: true };
}

/** A reply or ack of the running attempt (checked by checkMessageWrite): the message is done. */
export function complete(m: MessageLease): MessageLease {
  return enter(m, "complete", { ...m, status: "acknowledged", runner: null, expiresAt: null });
}

/** Takes a running message back (its runner went silent, left, or ran out of time): queued again, or failed when its attempts are used up. */
export function takeBack(m: MessageLease, policy: MessagePolicy): MessageLease {
  if (m.pendingAsk !== null) return enter(m, "take_back", parkUnknown(m));
  const status: MessageStatus = triesOf(m) >= policy.maxAttempts ? "failed" : "queued";
  return enter(m, "take_back", { ...m, status, runner: null, expiresAt: null, capAt: null });
}

/**
 * A runner that said it is stopping never started this attempt (the hand-out crossed its hello
 * `stopping`): queued again at once. The attempt keeps its number (the next hand-out is the next
 * number, so its output and A2A history stay its own) and is counted declined, never against max attempts.
 */
export function decline(m: MessageLease): MessageLease {
  return enter(m, "decline", { ...m, status: "queued", declined: (m.declined ?? 0) + 1, runner: null, expiresAt: null, capAt: null, retryAt: null });
}

/** How long a message waits after its `tries`-th counted attempt failed (triesOf): 1 s, doubling, at most a minute. */
export function retryBackoffMs(tries: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, tries - 1));
}

/**
 * The runner says its run failed (the command exited non-zero, could not start or was killed; the
 * handler threw): queued again after a backoff, or failed when its attempts are used up.
 */
export function failAttempt(m: MessageLease, now: number, policy: MessagePolicy): MessageLease & { status: "queued" | "failed" | "parked" } {
  if (m.pendingAsk !== null) return enter(m, "fail", { ...parkUnknown(m), status: "parked" as const });
  if (triesOf(m) >= policy.maxAttempts) return enter(m, "fail", { ...m, status: "failed" as const, runner: null, expiresAt: null, capAt: null, retryAt: null });
  return enter(m, "fail", { ...m, status: "queued" as const, runner: null, expiresAt: null, capAt: null, retryAt: now + retryBackoffMs(triesOf(m)) });
}

/**
 * A parked message whose deadline passed, as its deadline says: failed (the default), answered
 * approve (queued) or reject (rejected) on the person's behalf, or parked for another wait (escalate).
 * A message waiting on an effect whose outcome is unknown is never settled by a deadline (nobody
 * knows whether the effect happened): its deadline lapses and it waits for a person's done or redo.
 */
export function parkDeadline(m: MessageLease, now: number): MessageLease {
  return enter(m, "deadline", deadlineOutcome(m, now));
}

function deadlineOutcome(m: MessageLease, now: number): MessageLease {
  const settled = { runner: null, expiresAt: null, capAt: null, onDeadline: null, parkMs: null };
  if (m.pendingAsk !== null && m.onDeadline !== "escalate") return { ...m, expiresAt: null, onDeadline: null, parkMs: null };
  switch (m.onDeadline) {
    case "approve":
      return { ...m, ...settled, status: m.forPerson ? "acknowledged" : "queued", retryAt: null };
    case "reject":
      return { ...m, ...settled, status: "rejected" };
    case "escalate":
      // People are told again at most once a minute, however short the question's deadline.
      return { ...m, expiresAt: now + Math.max(m.parkMs ?? 0, ESCALATE_EVERY_MS) };
    default:
      return { ...m, ...settled, status: "failed" };
  }
}

/** Every open message whose deadline passed, as it must become: running ones taken back, parked ones as their deadline says. */
export function expireDue(open: readonly MessageLease[], now: number, policy: MessagePolicy): MessageLease[] {
  const out: MessageLease[] = [];
  for (const m of open) {
    if (m.expiresAt === null || now < m.expiresAt) continue;
    if (m.status === "running") out.push(takeBack(m, policy));
    else if (m.status === "parked") out.push(parkDeadline(m, now));
  }
  return out;
}

/**
 * The earliest deadline among open messages, or end of a retry backoff still ahead of `now`, for
 * the alarm; null when nothing is due. An ended backoff needs no alarm (the next event that frees
 * a slot dispatches it), or the alarm would fire again at once while every slot is busy.
 */
export function nextMessageDeadline(open: readonly MessageLease[], now = -Infinity): number | null {
  let earliest: number | null = null;
  for (const m of open) {
    const retry = m.retryAt !== null && m.retryAt > now ? m.retryAt : null;
    const at = m.status === "running" || m.status === "parked" ? m.expiresAt : m.status === "queued" ? retry : null;
    if (at !== null && (earliest === null || at < earliest)) earliest = at;
  }
  return earliest;
}
