// What a chaos run proves: counts of what happened and the invariants, computed from the sink's
// log and the coordinator's final message list. Pure, so the checks themselves are unit-tested.
import { scopeOf, type LoggedEffect } from "./sink.ts";
import { redeliveriesOf } from "../../worker/rules/metrics.ts";

export interface CoordinatorMessage {
  id: number;
  status: string;
  attempts: number;
  /** Of its hand-outs since a person's latest retry, those a stopping runner gave back unstarted (not counted against max attempts). */
  declined?: number;
  /** Hand-outs before a person's latest retry (absent: never retried). */
  retried_after?: number;
  acked_fence: number | null;
  acked_token?: number | null;
  token?: number;
  error?: string | null;
}

export interface Tally {
  sent: number;
  /** Messages whose command reached the sink at least once, whatever the verdict. */
  run: number;
  /** Messages whose command reached the sink more than once: re-executions after an interrupted run. */
  runTwice: number;
  /** Messages the sink applied more than once; an idempotent sink keeps this at 0. */
  appliedTwice: number;
  lost: number;
  /** Messages that ended `failed` after their max attempts, every attempt ended by a fault the run injected (see accountFailure). */
  failedByFaults: number;
  staleRejected: number;
  duplicatesAbsorbed: number;
  acknowledged: number;
  /** Messages redelivered as baton_message_redeliveries_total counts it (rules/metrics.ts redeliveriesOf): handed out again after a hand-out that was not declined. */
  redelivered: number;
}

export interface Invariant {
  name: string;
  ok: boolean;
  detail: string;
}

export interface RunInput {
  sentIds: readonly number[];
  messages: readonly CoordinatorMessage[];
  effects: readonly LoggedEffect[];
  /** The coordinator's fence read just before each message was posted (a lower bound of the fence at posting). */
  postFences?: ReadonlyMap<number, number>;
  /**
   * For a message that ended `failed`: null when its attempts are all accounted for by faults the
   * run injected (scripts/chaos/lease-changes.ts), else why not. Without it a failed message is lost.
   */
  accountFailure?: (m: CoordinatorMessage) => string | null;
}

export const INVARIANTS = {
  oneHolderPerFence: "never two holders accepted with the same fence",
  fencesGrow: "fences only grow (and only stale fences are refused)",
  exactlyOnce: "every acknowledged message took effect exactly once, under a fence no later than the one that acknowledged it",
  oncePerFence: "a message is handed over at most once per fence (attempts never outgrow the lease changes)",
  noneLost: "no message lost: every sent message acknowledged by the end, or failed after its max attempts with every attempt under its own fence and ended by a fault the run injected",
} as const;

function list(ids: Iterable<number | string>, max = 10): string {
  const all = [...ids];
  return all.slice(0, max).join(", ") + (all.length > max ? `, ... (${all.length})` : "");
}

function groupById(effects: readonly LoggedEffect[]): Map<number, LoggedEffect[]> {
  const out = new Map<number, LoggedEffect[]>();
  for (const e of effects) out.set(e.message_id, [...(out.get(e.message_id) ?? []), e]);
  return out;
}

/**
 * Checks a finished run. A message may be executed more than once (a run interrupted after its
 * effect but before its reply is redelivered): that is counted as "run twice" and is fine as long
 * as the sink applied the effect only once.
 */
export function checkRun(input: RunInput): { tally: Tally; invariants: Invariant[] } {
  const accepted = input.effects.filter((e) => e.outcome !== "stale_fence");
  const offers = groupById(input.effects);
  const applied = groupById(input.effects.filter((e) => e.outcome === "applied"));
  const byId = new Map(input.messages.map((m) => [m.id, m]));
  const acked = input.messages.filter((m) => m.status === "acknowledged");

  // Fences form one sequence per scope: the agent's serve fence, or (pool mode) each message's tokens.
  const holdersPerFence = new Map<string, Set<string>>();
  for (const e of accepted) {
    const at = `${scopeOf(e)} fence ${e.fence}`;
    holdersPerFence.set(at, (holdersPerFence.get(at) ?? new Set()).add(e.instance));
  }
  const sharedFences = [...holdersPerFence].filter(([, holders]) => holders.size > 1).map(([f, h]) => `${f}: ${[...h].join(" & ")}`);

  const decreases: string[] = [];
  const lastInScope = new Map<string, number>();
  for (const e of accepted) {
    const last = lastInScope.get(scopeOf(e));
    if (last !== undefined && e.fence < last) decreases.push(`${scopeOf(e)}: ${last} -> ${e.fence}`);
    lastInScope.set(scopeOf(e), e.fence);
  }
  const wronglyRejected = input.effects.filter((e) => e.outcome === "stale_fence" && e.fence >= e.highestBefore);

  // Under message tokens the acknowledging write's token is the bound; under the serve fence, its fence.
  const ackedAt = (m: CoordinatorMessage, e: LoggedEffect | undefined) => (e?.scope === undefined ? m.acked_fence : (m.acked_token ?? null));
  const notOnce = acked
    .filter((m) => {
      const a = applied.get(m.id) ?? [];
      const bound = ackedAt(m, a[0]);
      return a.length !== 1 || bound === null || a[0]!.fence > bound;
    })
    .map((m) => `${m.id} (applied at ${(applied.get(m.id) ?? []).map((e) => e.fence).join("/") || "none"}, acked at ${ackedAt(m, applied.get(m.id)?.[0])})`);

  const handedTwice: string[] = [];
  for (const [id, runs] of offers) {
    const fences = runs.map((e) => e.fence);
    const repeated = fences.filter((f, i) => fences.indexOf(f) !== i);
    if (repeated.length > 0) handedTwice.push(`${id} ran twice at fence ${repeated[0]}`);
  }
  for (const m of acked) {
    const postFence = input.postFences?.get(m.id);
    if (postFence === undefined || m.acked_fence === null) continue;
    const holders = m.acked_fence - postFence + 1;
    if (m.attempts > holders) handedTwice.push(`${m.id} attempts ${m.attempts} > ${holders} fences (${postFence}..${m.acked_fence})`);
  }
  const unacked = input.sentIds.filter((id) => byId.get(id)?.status !== "acknowledged");
  const why = new Map(unacked.map((id) => {
    const m = byId.get(id);
    if (m === undefined) return [id, `${id} missing`] as const;
    if (m.status !== "failed" || input.accountFailure === undefined) return [id, `${id} ${m.status}`] as const;
    return [id, input.accountFailure(m)] as const;
  }));
  const lost = unacked.filter((id) => why.get(id) !== null);

  const tally: Tally = {
    sent: input.sentIds.length,
    run: offers.size,
    runTwice: [...offers.values()].filter((r) => r.length > 1).length,
    appliedTwice: [...applied.values()].filter((r) => r.length > 1).length,
    lost: lost.length,
    failedByFaults: unacked.length - lost.length,
    staleRejected: input.effects.length - accepted.length,
    duplicatesAbsorbed: accepted.filter((e) => e.outcome === "duplicate").length,
    acknowledged: acked.length,
    redelivered: input.messages.filter((m) => redeliveriesOf(m) > 0).length,
  };
  const invariants: Invariant[] = [
    { name: INVARIANTS.oneHolderPerFence, ok: sharedFences.length === 0, detail: list(sharedFences) },
    {
      name: INVARIANTS.fencesGrow,
      ok: decreases.length === 0 && wronglyRejected.length === 0,
      detail: [list(decreases), list(wronglyRejected.map((e) => `${e.message_id}@${e.fence}`))].filter(Boolean).join("; "),
    },
    { name: INVARIANTS.exactlyOnce, ok: notOnce.length === 0, detail: list(notOnce) },
    { name: INVARIANTS.oncePerFence, ok: handedTwice.length === 0, detail: list(handedTwice) },
    { name: INVARIANTS.noneLost, ok: lost.length === 0, detail: list(lost.map((id) => why.get(id)!), 5) },
  ];
  return { tally, invariants };
}

export interface FirstRun {
  id: number;
  attempt: number;
  /** Lease changes between posting and the first run: the first run's fence minus the fence at posting. */
  leaseChanges: number;
}

/** For every message that reached the sink and whose posting fence is known: its first run's attempt against the lease changes it waited through. */
export function firstRuns(effects: readonly LoggedEffect[], postFences: ReadonlyMap<number, number>): FirstRun[] {
  const out: FirstRun[] = [];
  for (const [id, runs] of groupById(effects)) {
    const postFence = postFences.get(id);
    if (postFence === undefined) continue;
    out.push({ id, attempt: runs[0]!.attempt, leaseChanges: runs[0]!.fence - postFence });
  }
  return out.sort((a, b) => a.id - b.id);
}
