// The one time source of a Durable Object, injected as client-go's leaderelection injects its
// clock "to allow for less flaky testing". In production it is the runtime's clock. Where the
// test-only var BATON_TEST_CLOCK is "true" (the workerd tests' bindings and the wrangler dev the
// end-to-end tests start; never wrangler.toml), a test may move an object's clock forward: its time
// is then the runtime's plus the sum of the advances, kept in the object's storage so an evicted
// object wakes at the same time. The runtime's own timestamps (auto-response pings, alarms) are
// translated with the offset that held when they happened, so a ping after an advance is fresh and
// one before it is as old as the advance makes it.
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";

export interface Clock {
  now(): number;
  /** Object time of an instant the runtime reported (an auto-response timestamp). */
  fromRuntime(runtimeMs: number): number;
  /** The runtime instant of an object time, for `setAlarm`. */
  toRuntime(objectMs: number): number;
}

const systemClock: Clock = {
  now: () => Date.now(),
  fromRuntime: (ms) => ms,
  toRuntime: (ms) => ms,
};

/** From runtime instant `at` on, object time is runtime time plus `offset`. */
interface Shift {
  at: number;
  offset: number;
}

const SHIFTS_KEY = "baton.test_clock.shifts";

/** A clock the tests move forward; never built unless BATON_TEST_CLOCK is "true". */
class TestClock implements Clock {
  private shifts: Shift[];

  constructor(private readonly kv: SyncKvStorage) {
    this.shifts = (kv.get(SHIFTS_KEY) as Shift[] | undefined) ?? [];
  }

  get offset(): number {
    return this.shifts.at(-1)?.offset ?? 0;
  }

  now(): number {
    return Date.now() + this.offset;
  }

  fromRuntime(runtimeMs: number): number {
    let offset = 0;
    for (const shift of this.shifts) if (shift.at <= runtimeMs) offset = shift.offset;
    return runtimeMs + offset;
  }

  toRuntime(objectMs: number): number {
    return objectMs - this.offset;
  }

  advance(ms: number): void {
    this.shifts.push({ at: Date.now(), offset: this.offset + ms });
    this.kv.put(SHIFTS_KEY, this.shifts);
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
   * Test hook (the Worker's POST /test/clock): moves this object's clock forward by `ms`, then runs
   * its alarm while one is due, as the runtime would have. Null, with nothing changed, unless
   * BATON_TEST_CLOCK is "true".
   */
  async advanceClock(ms: number): Promise<ClockAdvance | null> {
    if (!(this.clock instanceof TestClock) || !Number.isFinite(ms) || ms < 0) return null;
    const clock = this.clock;
    let setWith = clock.offset;
    clock.advance(ms);
    const alarm = (this as { alarm?: () => Promise<void> }).alarm?.bind(this);
    let alarmsRun = 0;
    for (;;) {
      const at = await this.ctx.storage.getAlarm();
      if (at === null || !alarm) break;
      const due = at + setWith;
      if (due > clock.now() || alarmsRun >= MAX_ALARMS_PER_ADVANCE) {
        // Still ahead: keep it at the same object time, which the advance brought nearer.
        await this.ctx.storage.setAlarm(clock.toRuntime(due));
        break;
      }
      await this.ctx.storage.deleteAlarm();
      await alarm();
      alarmsRun++;
      setWith = clock.offset;
    }
    return { now: clock.now(), alarmsRun };
  }
}
