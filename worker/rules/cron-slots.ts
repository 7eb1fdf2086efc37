// A schedule's cadence and its slots, over croner (pinned; why croner: docs/guides/schedules.md).
// Pure: every function takes the times it needs. A cron slot is the minute croner names in the
// schedule's time zone: on a spring-forward day a slot inside the gap is 03:00 local, on a
// fall-back day a slot inside the repeated hour is its first occurrence, once.
import { Cron } from "croner";

export type Cadence =
  | { kind: "cron"; cron: string; tz: string }
  /** Every `everyMs` of real time after `from` (its first slot is `from + everyMs`). */
  | { kind: "every"; everyMs: number; from: number }
  | { kind: "at"; at: number };

const FIELDS = ["minute", "hour", "day of month", "month", "day of week"] as const;
const crons = new Map<string, Cron>();

function cronOf(cron: string, tz: string): Cron {
  const key = `${cron}\u0000${tz}`;
  let c = crons.get(key);
  if (!c) {
    if (crons.size >= 512) crons.clear();
    c = new Cron(cron, { timezone: tz, mode: "5-part", domAndDow: false });
    crons.set(key, c);
  }
  return c;
}

/** A valid IANA time zone, as the runtime's Intl knows them. */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * Why `cron` is not a five-field expression croner accepts, naming the field that fails (each is
 * tried alone, the others `*`), or null when it is valid.
 */
export function cronError(cron: string): string | null {
  const parts = cron.trim().split(/\s+/);
  if (parts.length !== 5) return `cron needs 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`;
  for (const [i, part] of parts.entries()) {
    const alone = parts.map((p, j) => (j === i ? p : "*")).join(" ");
    try {
      new Cron(alone, { mode: "5-part" });
    } catch (err) {
      const why = String(err instanceof Error ? err.message : err).replace(/^CronPattern:\s*/, "");
      return `cron field ${i + 1} (${FIELDS[i]}) "${part}" is invalid: ${why}`;
    }
  }
  try {
    new Cron(parts.join(" "), { mode: "5-part" });
  } catch (err) {
    return `cron "${cron}" is invalid: ${String(err instanceof Error ? err.message : err)}`;
  }
  return null;
}

/** The first slot strictly after `t` (null: none left). */
export function slotAfter(c: Cadence, t: number): number | null {
  switch (c.kind) {
    case "at":
      return c.at > t ? c.at : null;
    case "every":
      return t < c.from ? c.from + c.everyMs : c.from + (Math.floor((t - c.from) / c.everyMs) + 1) * c.everyMs;
    case "cron":
      return cronSlotAfter(c.cron, c.tz, t);
  }
}

/**
 * croner names a fixed hour's minutes again in the repeated hour of a fall-back day (01:20 EDT, then
 * 01:20 EST); a slot is its first occurrence, so one whose wall time is not past `t`'s is skipped.
 * A cron with every hour (`*`, `*\/n`) keeps counting real time through the fold, as croner does.
 */
function cronSlotAfter(cron: string, tz: string, t: number): number | null {
  const c = cronOf(cron, tz);
  let next = c.nextRun(new Date(t))?.getTime() ?? null;
  if (/^\*(\/\d+)?$/.test(cron.trim().split(/\s+/)[1] ?? "")) return next;
  const since = wallTime(t, tz);
  for (let i = 0; next !== null && i < 120 && wallTime(next, tz) <= since; i++) next = c.nextRun(new Date(next))?.getTime() ?? null;
  return next;
}

/** `ms` as the wall-clock time of `tz`, counted as if it were UTC (minute precision suffices for slots). */
function wallTime(ms: number, tz: string): number {
  const parts = wallFormat(tz).formatToParts(new Date(ms));
  const n = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return Date.UTC(n("year"), n("month") - 1, n("day"), n("hour") % 24, n("minute"), n("second"));
}

const wallFormats = new Map<string, Intl.DateTimeFormat>();
function wallFormat(tz: string): Intl.DateTimeFormat {
  let f = wallFormats.get(tz);
  if (!f) {
    if (wallFormats.size >= 512) wallFormats.clear();
    f = new Intl.DateTimeFormat("en-US", { timeZone: tz, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
    wallFormats.set(tz, f);
  }
  return f;
}

/** The latest slot at or before `t` and after `after` (null: none in between). */
export function slotAtOrBefore(c: Cadence, t: number, after: number): number | null {
  let found: number | null = null;
  switch (c.kind) {
    case "at":
      found = c.at <= t ? c.at : null;
      break;
    case "every":
      found = t < c.from + c.everyMs ? null : c.from + Math.floor((t - c.from) / c.everyMs) * c.everyMs;
      break;
    case "cron":
      found = cronOf(c.cron, c.tz).previousRuns(1, new Date(t + 1))[0]?.getTime() ?? null;
      break;
  }
  return found !== null && found > after ? found : null;
}

/** How many slots lie in (after, until]: exactly for `every` (arithmetic), up to `cap` for the others (one step per slot). */
export function slotsBetween(c: Cadence, after: number, until: number, cap: number): number {
  if (c.kind === "every") {
    const first = slotAfter(c, after)!;
    return first > until ? 0 : Math.floor((until - first) / c.everyMs) + 1;
  }
  let n = 0;
  for (let s = slotAfter(c, after); s !== null && s <= until && n < cap; s = slotAfter(c, s)) n++;
  return n;
}

/** The shortest gap between the next `n` slots after `t` (null: fewer than two). */
export function shortestGap(c: Cadence, t: number, n: number): number | null {
  let gap: number | null = null;
  let prev = slotAfter(c, t);
  for (let i = 1; i < n && prev !== null; i++) {
    const next = slotAfter(c, prev);
    if (next === null) break;
    gap = gap === null ? next - prev : Math.min(gap, next - prev);
    prev = next;
  }
  return gap;
}

/**
 * A one-off's time: ISO 8601 with an offset (`Z`, `+01:00`) as written, without one as a wall
 * time in `tz` (on a spring-forward day, a time inside the gap reads as the first minute after it).
 */
export function parseAt(at: string, tz: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?$/.test(at)) return null;
  if (/(Z|[+-]\d{2}:\d{2})$/.test(at)) {
    const t = Date.parse(at);
    return Number.isNaN(t) ? null : t;
  }
  try {
    return new Cron(at.length === 16 ? `${at}:00` : at, { timezone: tz }).nextRun(new Date(0))?.getTime() ?? null;
  } catch {
    return null;
  }
}
