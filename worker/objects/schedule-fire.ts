// A fire of an agent's schedules: the due slots (agent-schedules.ts), each posted through the plan
// as a post event. All of them go in one transaction with their records and each schedule's latest
// slot, so a slot is posted once or not at all however the object is cut short, and its frames (a
// slot's hand-out) leave only once that commits (outbound.ts). When it throws, storage rolls back
// and the object rebuilds its memory from storage; the schedules are then fired one transaction
// each: a schedule's slots are decided again and posted with its latest slot, so only a schedule
// that throws on its own is hurt and one cut short is still undecided when the alarm runs again.
// A schedule that throws again is decided once more and recorded in one transaction with its latest
// slot: its slots skipped (reason `failed`), but a slot whose message already exists (replayed)
// with that message. A fire that throws every time thus cannot stop the agent. If even that record
// throws, the schedule is left undecided (nothing of it committed) and the next alarm fires it
// again; if memory cannot be rebuilt the fire stops there, and the schedules not reached are left
// undecided too. Memory is rebuilt only after a transaction threw.
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
    postDue(host, now, paused, account);
    return;
  } catch (err) {
    rolledBack(host, err);
  }
  for (const id of host.schedules().store.all().map((s) => s.id)) fireSchedule(host, id, now, paused, account);
}

/** One schedule's due slots decided and posted in one transaction; when that throws, decided again and recorded in one. */
function fireSchedule(host: FireHost, id: number, now: number, paused: boolean, account: string): void {
  let error: string;
  try {
    postDue(host, now, paused, account, id);
    return;
  } catch (err) {
    error = rolledBack(host, err);
  }
  try {
    transaction(host, () => {
      for (const slot of host.schedules().due(now, paused, id)) {
        if (slot.replayed === null) host.schedules().failed(slot, error, now);
        else host.schedules().posted(slot, null, now);
      }
    });
  } catch (err) {
    // Nothing of the schedule committed: it is still due, and the next alarm fires it again.
    rolledBack(host, err);
  }
}

/** The due slots (of schedule `only`, or of all) decided and posted in one transaction. */
function postDue(host: FireHost, now: number, paused: boolean, account: string, only?: number): void {
  transaction(host, () => {
    for (const slot of host.schedules().due(now, paused, only)) postSlot(host, slot, now, account);
  });
}

function postSlot(host: FireHost, slot: SlotPost, now: number, account: string): void {
  const plan = slot.replayed === null ? host.step(now, host.schedules().postEvent(slot, account)) : null;
  host.schedules().posted(slot, plan?.post ?? null, now);
}

function transaction(host: FireHost, work: () => void): void {
  host.outbound().transaction(host.ctx, work);
}

/** A rolled-back transaction: logged, and memory built again from storage (it kept what storage dropped). */
function rolledBack(host: FireHost, err: unknown): string {
  const error = err instanceof Error ? err.message : String(err);
  console.error(`a schedule fire was rolled back: ${error}`);
  host.rebuild();
  return error;
}
