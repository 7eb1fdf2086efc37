// The message status machine as one table (STYLE 32, after temporalio/sdk-core's `fsm!`): for every
// status and every event, the statuses it may move to, the refusal whoever asked is given, that it
// leaves the message as it is, or nothing: an undeclared pair is a bug, thrown, never a silent
// write. The rules of message-lease.ts, message-cancel.ts and on-busy.ts move a message only
// through `enter`, and read their refusals from `refusalOf`; test/unit/message-lifecycle.test.ts
// walks every pair; docs/reference/message-lifecycle.md is generated from it.
import { MESSAGE_STATUSES, type MessageStatus } from "../wire/enums.ts";
import type { ErrorCode } from "../wire/error-codes.ts";

export const LIFECYCLE_EVENTS = [
  "ask_person", "hand_out", "write", "complete", "park", "decline", "fail", "take_back", "deadline", "answer", "resume", "retry", "cancel", "supersede",
] as const;
export type LifecycleEvent = (typeof LIFECYCLE_EVENTS)[number];

/** What one event does to a message in one status. */
export type Next =
  /** It moves to one of these (which one, the rule decides from the message's data). */
  | { to: readonly MessageStatus[] }
  /** Refused with this code; nothing changes. */
  | { refuse: ErrorCode }
  /** Nothing happens to it (a cancel of a cancelled message, a replace of one already running). */
  | { stays: true }
  /** Not a transition: asking for it is a bug. */
  | null;

const to = (...s: MessageStatus[]): Next => ({ to: s });
const refuse = (code: ErrorCode): Next => ({ refuse: code });
const stays: Next = { stays: true };

/** A runner's write for a message that no longer runs: its cancel, or its being done otherwise. */
const notRunning = (status: MessageStatus): Next => refuse(status === "cancelled" ? "cancelled" : "message_not_running");

/** Each event's row, status by status. */
const EVENT: Record<LifecycleEvent, (s: MessageStatus) => Next> = {
  /** A question for a person alone is parked the moment it is posted. */
  ask_person: (s) => (s === "queued" ? to("parked") : null),
  /** Dispatch hands a queued message to a runner under a fresh token. */
  hand_out: (s) => (s === "queued" ? to("running") : null),
  /** A step, heartbeat, ask or checkpoint of the running attempt: it stays running. */
  write: (s) => (s === "running" ? to("running") : notRunning(s)),
  /** A reply or ack. */
  complete: (s) => (s === "running" ? to("acknowledged") : notRunning(s)),
  park: (s) => (s === "running" ? to("parked") : notRunning(s)),
  /** A stopping runner never started the attempt: queued again, the attempt (its number kept) not counted against max attempts. */
  decline: (s) => (s === "running" ? to("queued") : notRunning(s)),
  /** Queued again after a backoff, failed when its attempts are used up, parked when an effect's outcome is unknown. */
  fail: (s) => (s === "running" ? to("queued", "failed", "parked") : notRunning(s)),
  /** Its run deadline passed or its runner left: as fail, with no backoff. */
  take_back: (s) => (s === "running" ? to("queued", "failed", "parked") : null),
  /** A park deadline passed: fail (default), approve, reject, or escalate (parked again; an unknown outcome's deadline only lapses). */
  deadline: (s) => (s === "parked" ? to("failed", "queued", "rejected", "acknowledged", "parked") : null),
  /** A person's answer: approve or a choice queues it (a question for a person alone is acknowledged), reject ends it. */
  answer: (s) => (s === "parked" ? to("queued", "rejected", "acknowledged") : refuse("not_parked")),
  resume: (s) => (s === "parked" ? to("queued") : refuse("not_parked")),
  /** A person queues a failed message again, with a fresh set of tries (its attempt numbers go on); a cancelled one is final. */
  retry: (s) => (s === "failed" ? to("queued") : refuse(s === "cancelled" ? "cancelled" : "not_parked")),
  cancel: (s) => (s === "queued" || s === "running" || s === "parked" ? to("cancelled") : s === "cancelled" ? stays : refuse("message_finished")),
  /** A newer post replaces a queued message that never ran (on_busy replace); any other stays. */
  supersede: (s) => (s === "queued" ? to("superseded") : stays),
};

/** The table itself: status × event. */
export const LIFECYCLE: Readonly<Record<MessageStatus, Readonly<Record<LifecycleEvent, Next>>>> = Object.fromEntries(
  MESSAGE_STATUSES.map((s) => [s, Object.fromEntries(LIFECYCLE_EVENTS.map((e) => [e, EVENT[e](s)]))]),
) as Record<MessageStatus, Record<LifecycleEvent, Next>>;

/** A transition the table does not declare was asked for: a bug in a rule, never stored. */
export class LifecycleError extends Error {
  override readonly name = "LifecycleError";
}

/** The refusal the table names for `event` on a message in `status`, or null when it is not refused. */
export function refusalOf(status: MessageStatus, event: LifecycleEvent): ErrorCode | null {
  const next = LIFECYCLE[status][event];
  return next !== null && "refuse" in next ? next.refuse : null;
}

/** `next`, once the table allows `event` to move `m` to its status; throws LifecycleError otherwise. */
export function enter<T extends { id: number; status: MessageStatus }>(m: { id: number; status: MessageStatus }, event: LifecycleEvent, next: T): T {
  const cell = LIFECYCLE[m.status][event];
  if (cell !== null && "to" in cell && cell.to.includes(next.status)) return next;
  throw new LifecycleError(`message ${m.id}: ${event} does not move a ${m.status} message to ${next.status}`);
}
