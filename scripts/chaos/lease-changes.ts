// Which of a run's lease changes the run itself caused, and whether a message that ended `failed`
// spent its attempts only on them. In single mode an attempt ends without a reply only when its
// holder loses the lease (or its command fails, which the chaos command never does), so a message
// that failed after max_attempts is accounted for when each of its attempts had its own fence and
// every lease change over those fences follows a fault the run injected on the holder that lost it
// (or a coordinator restart). Pure: built from the serve logs and the driver's fault log.
import { triesOf } from "../../worker/rules/message-lease.ts";

/** A fault the driver injected: on a slot from `at` until it ran again, or the coordinator (slot null) down and back. */
export interface Fault {
  kind: "kill" | "pause" | "restart" | "coordinator";
  slot: number | null;
  at: number;
  until: number;
}

/** What the serve logs say about fences: when each was first mentioned, who logged holding it, and each reply's token. */
export interface FenceTimeline {
  seenAt: Map<number, number>;
  holder: Map<number, number>;
  /** [token, fence] of each logged run ("ran message N (attempt A, token T)"), the fence its holder had. */
  ran: Array<[number, number]>;
}

/** Reads the serve processes' `--json` logs (one array of lines per slot). */
export function fenceTimeline(logs: ReadonlyArray<readonly string[]>): FenceTimeline {
  const out: FenceTimeline = { seenAt: new Map(), holder: new Map(), ran: [] };
  logs.forEach((lines, slot) => {
    for (const line of lines) {
      let e: { at?: string; kind?: string; fence?: unknown; type?: string; token?: unknown };
      try {
        e = JSON.parse(line) as typeof e;
      } catch {
        continue;
      }
      if (typeof e.fence !== "number" || typeof e.at !== "string") continue;
      const at = Date.parse(e.at);
      if (!(at >= (out.seenAt.get(e.fence) ?? Infinity))) out.seenAt.set(e.fence, at);
      if (e.kind === "holder" && !out.holder.has(e.fence)) out.holder.set(e.fence, slot);
      if (e.type === "ran" && typeof e.token === "number") out.ran.push([e.token, e.fence]);
    }
  });
  return out;
}

/**
 * The change into fence `f` is explained when a fault overlaps the time from the previous fence's
 * first mention to this one's: on the slot that logged holding the previous fence, or a coordinator
 * restart. When nobody logged holding the previous fence, only a pause or a kill in effect when that
 * fence was first seen explains it (the lease went to a process frozen or dying as it was elected,
 * which could not log); a graceful restart would have logged its release. A fault that began before
 * the previous fence (a pause still frozen when elected) counts.
 */
export function leaseChangeExplained(f: number, t: FenceTimeline, faults: readonly Fault[]): boolean {
  const to = t.seenAt.get(f);
  if (to === undefined) return true; // never seen: not a change the logs can speak to
  let from = -Infinity;
  for (const [fence, at] of t.seenAt) if (fence < f && at > from) from = at;
  const lost = t.holder.get(f - 1);
  const elected = t.seenAt.get(f - 1);
  return faults.some((x) => {
    if (x.at > to || x.until < from) return false;
    if (x.slot === null) return true;
    if (lost !== undefined) return x.slot === lost;
    return (x.kind === "pause" || x.kind === "kill") && (elected === undefined || (x.at <= elected && x.until >= elected));
  });
}

/**
 * Every lease change (into fences 2 and up) the logs saw, split by whether a fault explains it;
 * `holderUnknown` lists the explained changes whose lost fence nobody logged holding (explained by
 * a process frozen or dying at its election, not by a fault on a known holder).
 */
export function leaseChanges(t: FenceTimeline, faults: readonly Fault[], until = Infinity): { total: number; unexplained: number[]; holderUnknown: number[] } {
  const changes = [...t.seenAt].filter(([f, at]) => f >= 2 && at <= until).map(([f]) => f).sort((a, b) => a - b);
  const unexplained = changes.filter((f) => !leaseChangeExplained(f, t, faults));
  return { total: changes.length, unexplained, holderUnknown: changes.filter((f) => !unexplained.includes(f) && !t.holder.has(f - 1)) };
}

export interface FailedMessage {
  id: number;
  attempts: number;
  /** Of its hand-outs since a person's latest retry, those a stopping runner gave back unstarted: they do not count against max attempts. */
  declined?: number;
  /** Hand-outs before a person's latest retry (absent: never retried): max attempts counts from it. */
  retried_after?: number;
  /** Its latest hand-out's token (tokens come from one agent-wide counter). */
  token: number;
  error: string | null;
}

/**
 * Why a failed message is not lost, or why it is: it used all `maxAttempts`, each attempt under a
 * fence of its own between the fence read before posting and the fence of the next token handed
 * out, and every lease change over those fences (up to the one that ended its last attempt) was
 * caused by the run. Returns null when accounted for, else what is missing.
 */
export function unaccountedFailure(m: FailedMessage, postFence: number | undefined, t: FenceTimeline, faults: readonly Fault[], maxAttempts: number): string | null {
  const tries = triesOf({ attempts: m.attempts, declined: m.declined ?? 0, retriedAfter: m.retried_after ?? 0 });
  if (tries < maxAttempts) return `${m.id} failed after ${tries} of ${maxAttempts} attempts (${m.error ?? "no reason"})`;
  const from = postFence ?? 1;
  const later = t.ran.filter(([token]) => token > m.token).map(([, fence]) => fence);
  const last = later.length > 0 ? Math.min(...later) : Math.max(from, ...t.seenAt.keys());
  if (m.attempts > last - from + 1) return `${m.id} had ${m.attempts} attempts over fences ${from}..${last}`;
  const unexplained: number[] = [];
  // Fence 1 is the first election, not a change: a message posted before it (fence 0) starts there.
  for (let f = Math.max(from + 1, 2); f <= last + 1; f++) if (t.seenAt.has(f) && !leaseChangeExplained(f, t, faults)) unexplained.push(f);
  return unexplained.length === 0 ? null : `${m.id}: lease changes to fence ${unexplained.join(", ")} follow no injected fault`;
}
