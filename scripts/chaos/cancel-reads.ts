// What the cancel chaos run reads from the coordinator (the message list, each message's final view
// with its journal, an agent's counter from /metrics) and the table it prints its tally in.
import { markdownTable } from "../bench/stats.ts";
import type { CancelFinal, CancelTally } from "./cancel-invariants.ts";
import type { JournalRecord } from "./steps-invariants.ts";

/** A request to the coordinator under test, authorized (the driver's `fetch`). */
export type Coordinator = (path: string, init?: RequestInit) => Promise<Response>;

export interface Listed {
  id: number;
  status: string;
  machine: string | null;
  waiting_on: string | null;
}

export interface FinalView extends CancelFinal {
  waiting_on: string | null;
}

async function json<T>(coordinator: Coordinator, path: string): Promise<T> {
  const res = await coordinator(path);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export async function listMessages(coordinator: Coordinator, agent: string): Promise<Listed[]> {
  const out: Listed[] = [];
  for (let after = 0; ; ) {
    const body = await json<{ messages: Listed[] }>(coordinator, `/agents/${agent}/messages?after=${after}&limit=100`);
    if (body.messages.length === 0) return out;
    out.push(...body.messages);
    after = body.messages.at(-1)!.id;
  }
}

/** Each message's final view, with its journal and the value of every record. */
export async function finalViews(coordinator: Coordinator, agent: string, ids: readonly number[]): Promise<FinalView[]> {
  const out: FinalView[] = [];
  for (const id of ids) {
    const m = await json<FinalView>(coordinator, `/agents/${agent}/messages/${id}`);
    const steps: JournalRecord[] = [];
    for (const s of m.steps) {
      const record = s.status === "done" ? await json<{ value: unknown }>(coordinator, `/agents/${agent}/messages/${id}/steps/${s.name}`) : null;
      steps.push({ name: s.name, kind: s.kind, status: s.status, attempt: s.attempt, at: s.at, on_unknown: s.on_unknown, ...(record ? { value: record.value } : {}) });
    }
    out.push({
      id: m.id, status: m.status, attempts: m.attempts, declined: m.declined ?? 0, retried_after: m.retried_after ?? 0, group: m.group, machine: m.machine, reply: m.reply, acked_at: m.acked_at, waiting_on: m.waiting_on,
      cancelled: m.cancelled ? { at: m.cancelled.at, reason: m.cancelled.reason, unknown_effects: m.cancelled.unknown_effects } : null, steps,
    });
  }
  return out;
}

/** A counter of `agent` from /metrics whose line holds `label` (0 when absent), or null when /metrics cannot be read. */
export async function agentCounter(coordinator: Coordinator, agent: string, name: string, label = ""): Promise<number | null> {
  try {
    const text = await (await coordinator("/metrics")).text();
    const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`agent="${agent}"`) && l.includes(label));
    return line === undefined ? 0 : Number(line.split(" ").at(-1));
  } catch {
    return null;
  }
}

export function tallyTable(t: CancelTally, figures: { kills: number; restarts: number; refusedMetric: number | null }): string {
  const c = t.cancels;
  return markdownTable(
    [
      "messages", "acknowledged", "cancelled (interrupted)", "kills", "coordinator restarts", "cancels: running / queued / parked / finished / again / race / in an effect",
      "answered 200 / 409 / none", "races: cancel won / reply won (runner gone)", "unknown effects (applied after the cancel)", "calls begun after the cancel (none recorded)",
      "writes refused as cancelled (runners / metrics)",
    ],
    [[
      String(t.messages), String(t.acknowledged), `${t.cancelled} (${t.interrupted})`, String(figures.kills), String(figures.restarts),
      `${c.running} / ${c.queued} / ${c.parked} / ${c.finished} / ${c.again} / ${c.race} / ${c.effect}`, `${t.answered200} / ${t.answered409} / ${t.unanswered}`,
      `${t.raceCancelWon} / ${t.raceReplyWon} (${t.raceRunnerGone})`, `${t.unknownEffects} (${t.inFlightApplied})`, String(t.lateCallsRefused),
      `${t.runnerRefusals} / ${figures.refusedMetric ?? "?"}`,
    ]],
  );
}
