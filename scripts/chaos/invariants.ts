// What a chaos run proves: counts of what happened and the invariants, computed from the sink's
// log and the coordinator's final message list. Pure, so the checks themselves are unit-tested.
import type { LoggedEffect } from "./sink.ts";

export interface CoordinatorMessage {
  id: number;
  status: string;
  attempts: number;
  acked_fence: number | null;
}

export interface Tally {
  sent: number;
  run: number;
  runTwice: number;
  lost: number;
  staleRejected: number;
  acknowledged: number;
  redelivered: number;
}

export interface Invariant {
  name: string;
  ok: boolean;
  detail: string;
}

function list(ids: Iterable<number | string>, max = 10): string {
  const all = [...ids];
  return all.slice(0, max).join(", ") + (all.length > max ? `, ... (${all.length})` : "");
}

/**
 * `strict` demands that an acknowledged message took effect exactly once in total. Without it, a
 * message may also have taken effect under an older fence whose run was interrupted (killed,
 * paused past the TTL, stopped) before it was acknowledged: baton re-delivers such a message, which
 * is at-least-once delivery, and the tally counts it as "run twice". A run after the
 * acknowledgement, or two runs under the acknowledging fence, always fail.
 */
export function checkRun(
  input: { sentIds: readonly number[]; messages: readonly CoordinatorMessage[]; effects: readonly LoggedEffect[] },
  options: { strict: boolean } = { strict: true },
): { tally: Tally; invariants: Invariant[] } {
  const accepted = input.effects.filter((e) => e.accepted);
  const runs = new Map<number, LoggedEffect[]>();
  for (const e of accepted) runs.set(e.message_id, [...(runs.get(e.message_id) ?? []), e]);
  const byId = new Map(input.messages.map((m) => [m.id, m]));
  const acked = input.messages.filter((m) => m.status === "acknowledged");

  const holdersPerFence = new Map<number, Set<string>>();
  for (const e of accepted) holdersPerFence.set(e.fence, (holdersPerFence.get(e.fence) ?? new Set()).add(e.instance));
  const sharedFences = [...holdersPerFence].filter(([, holders]) => holders.size > 1).map(([f, h]) => `${f}: ${[...h].join(" & ")}`);

  const decreases: string[] = [];
  for (let i = 1; i < accepted.length; i++) {
    if (accepted[i]!.fence < accepted[i - 1]!.fence) decreases.push(`${accepted[i - 1]!.fence} -> ${accepted[i]!.fence}`);
  }
  const wronglyRejected = input.effects.filter((e) => !e.accepted && e.fence >= e.highestBefore);

  const notOnce = acked.filter((m) => (runs.get(m.id)?.length ?? 0) !== 1).map((m) => `${m.id} x${runs.get(m.id)?.length ?? 0}`);
  const badAckRuns = acked
    .filter((m) => {
      const r = runs.get(m.id) ?? [];
      return r.filter((e) => e.fence === m.acked_fence).length !== 1 || r.some((e) => m.acked_fence === null || e.fence > m.acked_fence);
    })
    .map((m) => `${m.id} (ran at ${(runs.get(m.id) ?? []).map((e) => e.fence).join("/") || "none"}, acked at ${m.acked_fence})`);
  const lost = input.sentIds.filter((id) => byId.get(id)?.status !== "acknowledged");

  const tally: Tally = {
    sent: input.sentIds.length,
    run: runs.size,
    runTwice: [...runs.values()].filter((r) => r.length > 1).length,
    lost: lost.length,
    staleRejected: input.effects.length - accepted.length,
    acknowledged: acked.length,
    redelivered: input.messages.filter((m) => m.attempts > 1).length,
  };
  const invariants: Invariant[] = [
    { name: "never two holders accepted with the same fence", ok: sharedFences.length === 0, detail: list(sharedFences) },
    {
      name: "fences only grow (and only stale fences are refused)",
      ok: decreases.length === 0 && wronglyRejected.length === 0,
      detail: [list(decreases), list(wronglyRejected.map((e) => `${e.message_id}@${e.fence}`))].filter(Boolean).join("; "),
    },
    {
      name: "every acknowledged message took effect once under the fence that acknowledged it, never after",
      ok: badAckRuns.length === 0,
      detail: list(badAckRuns),
    },
    ...(options.strict ? [{ name: "every acknowledged message ran exactly once (strict)", ok: notOnce.length === 0, detail: list(notOnce) }] : []),
    { name: "no message lost: every sent message acknowledged by the end", ok: lost.length === 0, detail: list(lost) },
  ];
  return { tally, invariants };
}
