// Which queued messages go to which runners: pure, over the open messages' leases and each
// runner's free slots. A group runs one message at a time, the agent at most max_running; the
// runner with the most room takes the next one. rules/plan/dispatch.ts hands out what this plans.
import type { MessageLease, MessagePolicy, MessageStatus } from "./message-lease.ts";

/** A runner that may take messages now, with its free slots (concurrency minus what it runs). */
export interface RunnerSlots {
  id: string;
  free: number;
}

export interface Assignment {
  id: number;
  runner: string;
}

const LIVE: ReadonlySet<MessageStatus> = new Set(["queued", "running", "parked"]);

export function isOpen(m: Pick<MessageLease, "status">): boolean {
  return LIVE.has(m.status);
}

/**
 * Plans which queued messages go to which runners, oldest first (a message marked `first` before
 * the rest: it interrupted its group). A group is blocked behind its oldest open message (or its
 * `first` one), so a conversation never runs two messages at once. The runner with the most free slots is chosen, earlier runners first on ties; a message just taken
 * from a runner (`avoid`: message id to runner) goes elsewhere when another runner has room, since
 * a runner that stalled once likely still does.
 */
export function planDispatch(
  open: readonly MessageLease[], runners: readonly RunnerSlots[], policy: MessagePolicy, avoid: ReadonlyMap<number, string> = new Map(), now = Infinity,
): Assignment[] {
  const free = new Map(runners.map((r) => [r.id, Math.max(0, r.free)]));
  let running = open.filter((m) => m.status === "running").length;
  const blocked = new Set<string>();
  const plan: Assignment[] = [];
  // A group with a running message takes no other, even an older one queued again (a retry).
  for (const m of open) if (m.status === "running" && m.group !== null) blocked.add(m.group);
  for (const m of [...open].sort((a, b) => Number(b.first ?? false) - Number(a.first ?? false) || a.id - b.id)) {
    if (!isOpen(m)) continue;
    if (m.group !== null) {
      if (blocked.has(m.group)) continue;
      blocked.add(m.group);
    }
    // A question for a person is never queued; were it ever, no runner would be handed it.
    if (m.status !== "queued" || m.forPerson || running >= policy.maxRunning || (m.retryAt !== null && m.retryAt > now)) continue;
    const runner = roomiest(runners, free, avoid.get(m.id)) ?? roomiest(runners, free);
    if (runner === null) continue;
    free.set(runner, free.get(runner)! - 1);
    running += 1;
    plan.push({ id: m.id, runner });
  }
  return plan;
}

function roomiest(runners: readonly RunnerSlots[], free: Map<string, number>, except?: string): string | null {
  let best: string | null = null;
  for (const r of runners) {
    if (r.id === except) continue;
    const n = free.get(r.id)!;
    if (n > 0 && (best === null || n > free.get(best)!)) best = r.id;
  }
  return best;
}
