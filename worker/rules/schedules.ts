// Schedules, decided over plain data and `now`: whether a body makes a schedule (a clear error
// naming what is wrong, nothing stored otherwise), and at `now` which of a schedule's slots are
// posted, which are skipped and why, and when it next needs the object's alarm.
//
// A slot is decided once: the schedule keeps the latest slot decided (`lastSlot`) and every slot
// after it is still to come. A slot up to LATE_GRACE_MS late (a coordinator restart, a deploy, an
// alarm that ran late) is posted, whatever catch-up says. Slots older than that were missed (an
// outage), and so were slots that fell due while the schedule or its agent was paused: catch-up
// `none` skips them, `one` posts the latest of them (when nothing newer is posted with it). Each
// posted slot's message carries the idempotency key slotKey(id, slot), so storing a slot twice
// finds the first message instead.
import { LIMITS } from "../wire/protocol.ts";
import type { CatchUp, SkipReason } from "../wire/enums.ts";
import type { ScheduleBody } from "../wire/schedules.ts";
import { cronError, isTimeZone, parseAt, shortestGap, slotAfter, slotAtOrBefore, slotsBetween, type Cadence } from "./cron-slots.ts";

export type { Cadence } from "./cron-slots.ts";

/** A slot later than this is missed rather than late: catch-up decides it. */
export const LATE_GRACE_MS = 15 * 60_000;
/** Late slots one decision posts at most (a bound on its work; the rest are decided by the next). */
const POSTS_PER_DECISION = 20;
/**
 * Cron steps a skip record's count may take (croner walks slot by slot, about 0.05-0.25 ms a step
 * here): a cron schedule's missed slots are counted up to this, so a year's outage of a per-minute
 * cron is decided in about as many steps as its posts, and nothing it does delays a lease. When
 * more slots than this were missed, the skip records this count with `countAtLeast` and nothing is
 * added to or taken from it; the record's first and last slot give the span. `every` counts exactly.
 */
export const CRON_COUNT_STEPS = 20;

export interface ScheduleState {
  id: number;
  cadence: Cadence;
  createdAt: number;
  /** The latest slot decided (posted or skipped); null: none yet. */
  lastSlot: number | null;
  /** The latest slot skipped while paused, kept for catch-up one until the schedule runs again. */
  missed: number | null;
  paused: boolean;
  catchUp: CatchUp;
  jitterMs: number;
}

export interface SlotSkip {
  slot: number;
  last: number;
  count: number;
  /** More than `count` slots were skipped (a cron's count stopped at CRON_COUNT_STEPS); absent: exact. */
  countAtLeast?: true;
  reason: SkipReason;
}

export interface ScheduleDecision {
  id: number;
  /** Slots to post, oldest first. */
  post: number[];
  skips: SlotSkip[];
  lastSlot: number | null;
  missed: number | null;
  /** The next slot and when it falls due with its jitter (null: none left, a one-off done). */
  next: { slot: number; fire: number } | null;
}

export type CheckedSchedule =
  | { ok: true; cadence: Cadence; tz: string; textBytes: number }
  | { ok: false; message: string };

/** The idempotency key of a slot's message: the schedule and the slot's time (ISO, UTC). */
export function slotKey(id: number, slot: number): string {
  return `schedule:${id}:${new Date(slot).toISOString()}`;
}

/** A slot's delay within the schedule's jitter: the same for the same slot every time (FNV-1a). */
export function jitterOf(id: number, slot: number, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  let h = 0x811c9dc5;
  for (const ch of `${id}:${slot}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h % (jitterMs + 1);
}

/** Whether `body` (already through the wire schema) makes a schedule at `now`, and its cadence. */
export function checkSchedule(body: ScheduleBody, now: number): CheckedSchedule {
  const kinds = [body.cron, body.every_seconds, body.at, body.in_seconds].filter((v) => v !== undefined).length;
  if (kinds !== 1) return { ok: false, message: "a schedule needs exactly one of cron, every_seconds, at or in_seconds" };
  const tz = body.tz ?? "UTC";
  if (!isTimeZone(tz)) return { ok: false, message: `tz "${tz}" is not an IANA time zone (e.g. Europe/Berlin)` };
  if (body.tz !== undefined && (body.every_seconds !== undefined || body.in_seconds !== undefined)) {
    return { ok: false, message: "tz applies to cron and at, not to every_seconds or in_seconds (real time)" };
  }
  const textBytes = new TextEncoder().encode(body.text).length;
  if (textBytes > LIMITS.scheduleTextBytes) return { ok: false, message: `text is ${textBytes} bytes; a schedule's text is at most ${LIMITS.scheduleTextBytes}` };
  let cadence: Cadence;
  if (body.cron !== undefined) {
    const error = cronError(body.cron);
    if (error) return { ok: false, message: error };
    cadence = { kind: "cron", cron: body.cron.trim().split(/\s+/).join(" "), tz };
    if (slotAfter(cadence, now) === null) return { ok: false, message: `cron "${body.cron}" never falls due` };
    const gap = shortestGap(cadence, now, 8);
    if (gap !== null && gap < LIMITS.scheduleIntervalSeconds.min * 1000) {
      return { ok: false, message: `cron "${body.cron}" falls due every ${gap / 1000} s; the shortest interval is ${LIMITS.scheduleIntervalSeconds.min} s` };
    }
  } else if (body.every_seconds !== undefined) {
    cadence = { kind: "every", everyMs: body.every_seconds * 1000, from: now };
  } else if (body.in_seconds !== undefined) {
    cadence = { kind: "at", at: now + body.in_seconds * 1000 };
  } else {
    const at = parseAt(body.at!, tz);
    if (at === null) return { ok: false, message: `at "${body.at}" is not an ISO 8601 time (2026-12-24T09:00, optionally with Z or an offset)` };
    if (at < now) return { ok: false, message: `at ${new Date(at).toISOString()} is in the past` };
    cadence = { kind: "at", at };
  }
  return { ok: true, cadence, tz, textBytes };
}

/**
 * The schedule's slots at `now`. `agentPaused`: the agent is paused (its controls), which misses
 * slots as a paused schedule does. Nothing here is stored; the object stores the decision with
 * the messages it posts, in one synchronous step.
 */
export function decideSchedule(s: ScheduleState, agentPaused: boolean, now: number): ScheduleDecision {
  const cursor = s.lastSlot ?? s.createdAt - 1;
  const graceStart = now - LATE_GRACE_MS;
  const skips: SlotSkip[] = [];
  const post: number[] = [];
  // Missed past the grace: the first, the latest, and how many.
  const firstOld = slotAfter(s.cadence, cursor);
  const old = firstOld !== null && firstOld < graceStart
    ? { first: firstOld, last: slotAtOrBefore(s.cadence, graceStart - 1, cursor) ?? firstOld, ...missedCount(s.cadence, cursor, graceStart - 1) }
    : null;
  // Late within the grace, or on time: due once their jitter passed, in order.
  const recent: number[] = [];
  for (let t = slotAfter(s.cadence, Math.max(cursor, graceStart - 1)); t !== null && t <= now && recent.length < POSTS_PER_DECISION; t = slotAfter(s.cadence, t)) {
    if (t + jitterOf(s.id, t, s.jitterMs) > now) break;
    recent.push(t);
  }
  const latest = recent.at(-1) ?? old?.last ?? null;
  const paused = s.paused || agentPaused;
  let missed = s.missed;
  if (paused) {
    const first = old?.first ?? recent[0];
    if (first !== undefined && latest !== null) {
      skips.push(old?.atLeast ? { slot: first, last: latest, count: old.count, countAtLeast: true, reason: "paused" } : { slot: first, last: latest, count: (old?.count ?? 0) + recent.length, reason: "paused" });
    }
    missed = latest ?? missed;
  } else {
    const catchUp = s.catchUp === "one" && recent.length === 0 ? (old?.last ?? missed) : null;
    if (old) {
      const last = catchUp === old.last ? slotAtOrBefore(s.cadence, old.last - 1, cursor) ?? old.first : old.last;
      if (old.atLeast) skips.push({ slot: old.first, last, count: old.count, countAtLeast: true, reason: "missed" });
      else if (catchUp !== old.last || old.count > 1) skips.push({ slot: old.first, last, count: catchUp === old.last ? old.count - 1 : old.count, reason: "missed" });
    }
    if (catchUp !== null) post.push(catchUp);
    post.push(...recent);
    missed = null;
  }
  const lastSlot = latest ?? s.lastSlot;
  return { id: s.id, post, skips, lastSlot, missed, next: nextFire({ ...s, lastSlot }) };
}

/**
 * How many slots fall in (after, until]: a cron's walk stops one step past CRON_COUNT_STEPS, so
 * `atLeast` means more than CRON_COUNT_STEPS fell, and the count with one posted or the recent
 * slots added is still at least CRON_COUNT_STEPS.
 */
function missedCount(c: Cadence, after: number, until: number): { count: number; atLeast: boolean } {
  const n = slotsBetween(c, after, until, CRON_COUNT_STEPS + 1);
  return c.kind === "cron" && n > CRON_COUNT_STEPS ? { count: CRON_COUNT_STEPS, atLeast: true } : { count: n, atLeast: false };
}

/** The schedule's next slot after the latest decided, and when it falls due with its jitter (null: none left). */
export function nextFire(s: ScheduleState): { slot: number; fire: number } | null {
  const slot = slotAfter(s.cadence, s.lastSlot ?? s.createdAt - 1);
  return slot === null ? null : { slot, fire: slot + jitterOf(s.id, slot, s.jitterMs) };
}

/** When the earliest of the decisions needs the alarm (a paused schedule too: its slots are recorded as they pass). */
export function nextScheduleWake(decisions: readonly ScheduleDecision[]): number | null {
  let wake: number | null = null;
  for (const d of decisions) if (d.next && (wake === null || d.next.fire < wake)) wake = d.next.fire;
  return wake;
}
