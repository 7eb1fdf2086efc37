// An add that counts toward an account-wide limit (schedules, A2A push targets), run in the Worker
// around its agent's RPC: the account's directory reserves a place first (agent-counts.ts), and the
// place goes back whenever the add did not grow the agent's count (the agent refused it, or it
// replaced something, or the call threw), so a refused add never counts against other agents.
import type { Reservation } from "./objects/agent-counts.ts";

export interface PlaceCalls<A> {
  reserve(): Promise<Reservation>;
  release(place: number): Promise<void>;
  /** The add itself, given the account's count besides this agent. */
  add(elsewhere: number): Promise<A>;
  /** Whether the answer grew the agent's count (its report to the directory then takes the place). */
  grew(answer: A): boolean;
}

export async function addHoldingPlace<A>(calls: PlaceCalls<A>): Promise<A> {
  const { elsewhere, place } = await calls.reserve();
  let grew = false;
  try {
    const answer = await calls.add(elsewhere);
    grew = calls.grew(answer);
    return answer;
  } finally {
    // A failed release is not the add's failure: the place lapses after RESERVE_MS.
    if (!grew && place !== null) await calls.release(place).catch((err: unknown) => console.error(`reserved place not released: ${String(err)}`));
  }
}
