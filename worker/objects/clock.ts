// The one time source of a Durable Object, injected as client-go's leaderelection injects its
// clock "to allow for less flaky testing". In production it is the runtime's clock. Where the
// test-only var BATON_TEST_CLOCK is "true" (the workerd tests' bindings and the wrangler dev the
// end-to-end tests start; never wrangler.toml), a test may move an object's clock: from its first
// move on, the object's time is the test's, standing still between moves however slow the machine
// is, and kept in the object's storage so an evicted object wakes at the same time. The runtime's
// own timestamps (auto-response pings) read as the object time of the last move before them, so a
// ping after a move is fresh and one before it is as old as the move makes it; an alarm set for
// a later object time waits for the move that reaches it.
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";

export interface Clock {
  now(): number;
  /** Object time of an instant the runtime reported (an auto-response timestamp). */
  fromRuntime(runtimeMs: number): number;
  /** The runtime instant to pass to `setAlarm` for an alarm at object time `objectMs`. */
  alarmAt(objectMs: number): number;
}

const systemClock: Clock = {
  now: () => Date.now(),
  fromRuntime: (ms) => ms,
  alarmAt: (ms) => ms,
};

/**
 * From runtime instant `at` on (until the next move), the object's time is `time`, standing still,
 * or, for a move that let the clock run, `time` plus the runtime time since `at`.
 */
interface Move {
  at: number;
  time: number;
  running?: boolean;
}

function timeAfter(move: Move, runtimeMs: number): number {
  return move.running ? move.time + Math.max(0, runtimeMs - move.at) : move.time;
}

const MOVES_KEY = "baton.test_clock.moves";
const ALARM_KEY = "baton.test_clock.alarm";
/** Where a moved clock parks an alarm that is not due: the runtime must not fire it, a move will. */
const PARKED_ALARM_MS = 24 * 3_600_000;

/** A clock the tests move; never built unless BATON_TEST_CLOCK is "true". */
class TestClock implements Clock {
  private readonly moves: Move[];

  constructor(private readonly kv: SyncKvStorage) {
    this.moves = (kv.get(MOVES_KEY) as Move[] | undefined) ?? [];
  }

  now(): number {
    const last = this.moves.at(-1);
    return last === undefined ? Date.now() : timeAfter(last, Date.now());
  }

  fromRuntime(runtimeMs: number): number {
    let time = runtimeMs;
    for (const move of this.moves) if (move.at <= runtimeMs) time = timeAfter(move, runtimeMs);
    return time;
  }

  alarmAt(objectMs: number): number {
    const now = this.now();
    const at = this.moves.length === 0 ? objectMs
      : objectMs <= now ? Date.now()
      : this.moves.at(-1)!.running ? Date.now() + (objectMs - now) : Date.now() + PARKED_ALARM_MS;
    this.kv.put(ALARM_KEY, { at, time: objectMs } satisfies Move);
    return at;
  }

  /** Object time of the alarm the runtime holds for instant `at`. */
  alarmTime(at: number): number {
    const set = this.kv.get(ALARM_KEY) as Move | undefined;
    if (set?.at === at) return set.time;
    // Set by someone else (a test holding an alarm back): as far ahead as it is in runtime time.
    return this.now() + Math.max(0, at - Date.now());
  }

  /** Moves time forward by `ms`; with `run`, time then runs on at the runtime's pace instead of standing still. */
  advance(ms: number, run: boolean): void {
    this.moves.push({ at: Date.now(), time: this.now() + ms, ...(run ? { running: true } : {}) });
    this.kv.put(MOVES_KEY, this.moves);
  }
}

export function testClockEnabled(env: Pick<Env, "BATON_TEST_CLOCK">): boolean {
  return env.BATON_TEST_CLOCK === "true";
}

/** What advancing an object's clock did: its time now and how many due alarms it ran. */
export interface ClockAdvance {
  now: number;
  alarmsRun: number;
}

/** Alarms one advance runs at most (an alarm that keeps scheduling itself in the past must not spin). */
const MAX_ALARMS_PER_ADVANCE = 20;

/** A Durable Object that reads time only through `this.now()`. */
export abstract class ClockedObject extends DurableObject<Env> {
  protected readonly clock: Clock;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.clock = testClockEnabled(env) ? new TestClock(ctx.storage.kv) : systemClock;
  }

  protected now(): number {
    return this.clock.now();
  }

  /**
   * Test hook (the Worker's POST /test/clock): moves this object's clock forward by `ms` (and from
   * then on only moves do, unless `run` lets it run on from there), then runs its alarm while one is
   * due, as the runtime would have. Null, with nothing changed, unless BATON_TEST_CLOCK is "true".
   */
  async advanceClock(ms: number, run = false): Promise<ClockAdvance | null> {
    if (!(this.clock instanceof TestClock) || !Number.isFinite(ms) || ms < 0) return null;
    const clock = this.clock;
    clock.advance(ms, run);
    const alarm = (this as { alarm?: () => Promise<void> }).alarm?.bind(this);
    let alarmsRun = 0;
    for (;;) {
      const at = await this.ctx.storage.getAlarm();
      if (at === null || !alarm) break;
      const due = clock.alarmTime(at);
      if (due > clock.now() || alarmsRun >= MAX_ALARMS_PER_ADVANCE) {
        // Not due yet: parked until the move that reaches it.
        await this.ctx.storage.setAlarm(clock.alarmAt(due));
        break;
      }
      await this.ctx.storage.deleteAlarm();
      await alarm();
      alarmsRun++;
    }
    return { now: clock.now(), alarmsRun };
  }
}
