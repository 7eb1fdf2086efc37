// A fire of an agent's schedules: the due slots (agent-schedules.ts), each posted through the plan
// as a post event. All of them go in one transaction with their records and each schedule's latest
// slot, so a slot is posted once or not at all however the object is cut short, and its frames (a
// slot's hand-out) leave only once that commits (outbound.ts). When it throws, storage rolls back
// and the object rebuilds its memory from storage; the slots are then decided again and posted one
// transaction each, so only a slot that throws on its own is lost: it is recorded skipped (reason
// `failed`) in a write of its own, and a fire that throws every time cannot stop the agent. The
// schedules' latest slots (and skips) commit first, before those posts: an alarm that runs again
// finds them decided and posts none twice. Memory is rebuilt only after a transaction threw.
import type { AgentEvent, AgentPlan } from "../rules/agent-plan.ts";
import type { AgentSchedules, SlotPost } from "./agent-schedules.ts";
import type { Outbound } from "./outbound.ts";

/** What a fire needs of the object; `schedules` and `outbound` are read anew after each `rebuild`. */
export interface FireHost {
  ctx: DurableObjectState;
  schedules(): AgentSchedules;
  outbound(): Outbound;
  /** One event through the plan (the object's step). */
  step(now: number, event: Extract<AgentEvent, { type: "post" }>): AgentPlan;
  /** Builds the storage-backed parts again from storage, after a transaction was rolled back. */
  rebuild(): void;
}

export function fireDueSlots(host: FireHost, now: number, paused: boolean, account: string): void {
  try {
    transaction(host, () => {
      for (const slot of host.schedules().due(now, paused)) postSlot(host, slot, now, account);
    });
    return;
  } catch (err) {
    rolledBack(host, err);
  }
  const slots = transaction(host, () => host.schedules().due(now, paused));
  for (const slot of slots) {
    try {
      transaction(host, () => postSlot(host, slot, now, account));
    } catch (err) {
      const error = rolledBack(host, err);
      host.ctx.storage.transactionSync(() => host.schedules().failed(slot, error, now));
    }
  }
}

function postSlot(host: FireHost, slot: SlotPost, now: number, account: string): void {
  const plan = slot.replayed === null ? host.step(now, host.schedules().postEvent(slot, account)) : null;
  host.schedules().posted(slot, plan?.post ?? null, now);
}

function transaction<T>(host: FireHost, work: () => T): T {
  let result!: T;
  host.outbound().transaction(host.ctx, () => void (result = work()));
  return result;
}

/** A rolled-back transaction: logged, and memory built again from storage (it kept what storage dropped). */
function rolledBack(host: FireHost, err: unknown): string {
  const error = err instanceof Error ? err.message : String(err);
  console.error(`a schedule fire was rolled back: ${error}`);
  host.rebuild();
  return error;
}
