// The injected clock in workerd tests: an object's time moves only when a test moves it, through
// the Worker's test hook (POST /test/clock, worker/test-clock.ts; BATON_TEST_CLOCK), instead of
// sleeps that hope to be enough.
import { SELF } from "cloudflare:test";
import type { SignInCodes } from "../../worker/objects/sign-in-codes-object.ts";
import { BASE, DEV_TOKEN, heartbeatingSockets, uniqueAgent } from "./helpers.ts";

/** What one advance of an object's clock did (worker/test-clock.ts). */
export interface ClockAdvance {
  now: number;
  alarmsRun: number;
}

/**
 * Moves one object's clock forward through the Worker's test hook (BATON_TEST_CLOCK) and runs the
 * alarm it makes due: the agent's object with `agent`, a session's lease shard with `session`, else
 * the account's directory.
 */
export async function advanceClock(ms: number, target: { agent?: string; session?: string; token?: string; run?: boolean } = {}): Promise<ClockAdvance> {
  const { token = DEV_TOKEN, ...which } = target;
  if (which.agent !== undefined && which.run !== true) stopped.add(`${token} ${which.agent}`);
  const res = await SELF.fetch(`${BASE}/test/clock`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ advance_ms: ms, ...which }),
  });
  if (res.status !== 200) throw new Error(`advancing the clock failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as ClockAdvance;
}

/**
 * Moves a sign-in codes object's clock forward by its own test hook (the ClockedObject's, which the
 * Worker's POST /test/clock calls for the other objects); 0 stops it where it is.
 */
export async function advanceCodesClock(codes: DurableObjectStub<SignInCodes>, ms: number): Promise<ClockAdvance> {
  const moved = await codes.advanceClock(ms);
  if (moved === null) throw new Error("the sign-in codes object's clock cannot be moved (BATON_TEST_CLOCK is not true)");
  return moved;
}

/**
 * Stops an agent object's clock (a move of nothing): from here its time moves only by passTime or
 * advanceClock, so a slow machine cannot let a TTL, deadline or debounce run out between two steps.
 */
export async function freezeClock(agent: string, token = DEV_TOKEN): Promise<number> {
  stopped.add(`${token} ${agent}`);
  return (await advanceClock(0, { agent, token })).now;
}

/** The agents (by token and name) whose clocks this file has stopped. */
const stopped = new Set<string>();

/** freezeClock, unless this file already stopped or moved the agent's clock (a second stop would run its due alarms). */
export async function stopClockOnce(agent: string, token = DEV_TOKEN): Promise<void> {
  if (!stopped.has(`${token} ${agent}`)) await freezeClock(agent, token);
}

/**
 * A fresh agent whose object's clock already stands still: for tests about something other than
 * expiry, so a busy machine cannot let a one-second lease lapse between two frames.
 */
export async function frozenAgent(): Promise<string> {
  const agent = uniqueAgent();
  await freezeClock(agent);
  return agent;
}

/** Steps of an agent's clock in passTime: well inside the one-second TTL, as the heartbeats are. */
const TIME_STEP_MS = 400;

/**
 * Lets `ms` pass on an agent object's clock in steps shorter than the TTL; after each step every
 * open connection of the agent that is not silent sends a heartbeat, as it would have in that
 * time, so only silent connections go stale. Due alarms run at each step.
 */
export async function passTime(agent: string, ms: number, token = DEV_TOKEN): Promise<void> {
  for (let left = ms; left > 0; left -= TIME_STEP_MS) {
    await advanceClock(Math.min(left, TIME_STEP_MS), { agent, token });
    await Promise.all(heartbeatingSockets(agent).map((s) => s.beat()));
  }
}

/** passTime up to the agent object's time `at` (a deadline it reported), plus `past` ms. */
export async function passUntil(agent: string, at: number, past = 1, token = DEV_TOKEN): Promise<void> {
  const { now } = await advanceClock(0, { agent, token });
  await passTime(agent, Math.max(0, at - now) + past, token);
}
