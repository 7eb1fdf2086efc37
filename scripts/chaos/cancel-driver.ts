// What the cancel chaos run's driver (scripts/chaos/cancel.ts) does to messages while machines die:
// cancels picked by status, cancels racing a reply or landing inside an effect, and a person's answer
// to an unknown outcome. Every call and its answer is kept for scripts/chaos/cancel-invariants.ts.
import { readFileSync } from "node:fs";
import { parseCalls, type CancelCall, type CancelKind, type ResumeCall } from "./cancel-invariants.ts";
import type { Coordinator, Listed } from "./cancel-reads.ts";
import type { seeded } from "./seeded.ts";
import { parseLedger, type Answer, type PlanItem } from "./steps-invariants.ts";

/** Share of effects whose command just began that a cancel lands in (a stubborn one then lands after it). */
const EFFECT_SHARE = 0.3;
/** Share of runs that just traced their last step whose reply a cancel races. */
const RACE_SHARE = 0.4;
/** How the other cancels pick their target, by its status then. */
const CANCEL_KINDS: readonly [Exclude<CancelKind, "race" | "effect">, number][] = [["running", 0.35], ["queued", 0.15], ["parked", 0.15], ["finished", 0.2], ["again", 0.15]];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The run the driver acts in: whom it calls, where the agent's commands write, and what it keeps. */
export interface CancelDriver {
  coordinator: Coordinator;
  agent: string;
  paths: { ledger: string; calls: string };
  plan: readonly Omit<PlanItem, "approve">[];
  rng: ReturnType<typeof seeded>;
  say: (line: string) => void;
  cancels: CancelCall[];
  resumes: ResumeCall[];
  answers: Answer[];
  /** Messages a person is answering now. */
  answering: Set<number>;
  /** Messages whose reply or effect a cancel already raced. */
  raced: Set<number>;
}

/** POST …/cancel, its answer kept for the checker; a lost answer (restart) is kept as null. */
async function cancelOne(d: CancelDriver, id: number, kind: CancelKind): Promise<void> {
  const call: CancelCall = { id, kind, sentAt: Date.now(), status: null };
  d.cancels.push(call);
  try {
    const res = await d.coordinator(`/agents/${d.agent}/messages/${id}/cancel`, { method: "POST", body: JSON.stringify({ reason: `chaos ${kind}` }) });
    call.status = res.status;
    const body = (await res.json()) as { error?: string; cancelled?: { at: number } | null };
    if (body.error !== undefined) call.code = body.error;
    if (res.status === 200 && body.cancelled) call.cancelledAt = body.cancelled.at;
    d.say(`cancel ${id} (${kind}): ${res.status}${call.code ? ` ${call.code}` : ""}`);
  } catch {
    // no answer: the coordinator went down meanwhile
  }
}

/** A person answers an unknown outcome after a while (long enough that a cancel may come first): done or redo. */
async function answer(d: CancelDriver, m: Listed): Promise<void> {
  const { random, between } = d.rng;
  d.answering.add(m.id);
  try {
    await sleep(between(1000, 3000));
    const outcome = random() < 0.5 ? "done" : "redo";
    const text = outcome === "done" ? `by-hand:${m.id}:${d.answers.filter((a) => a.id === m.id).length + 1}` : null;
    const call: ResumeCall = { id: m.id, sentAt: Date.now(), status: null };
    d.resumes.push(call);
    const res = await d.coordinator(`/agents/${d.agent}/messages/${m.id}/resume`, { method: "POST", body: JSON.stringify({ input: text, outcome }) });
    call.status = res.status;
    if (res.status === 200) d.answers.push({ id: m.id, name: m.waiting_on!, outcome, text, at: Date.now() });
    else ({ error: call.code, message: call.message } = (await res.json()) as { error?: string; message?: string });
    d.say(`resume ${m.id} --${outcome}: ${res.status}${call.code ? ` ${call.code}` : ""}`);
  } catch {
    // the coordinator is restarting: asked again on the next look
  } finally {
    d.answering.delete(m.id);
  }
}

export function track(set: Set<Promise<void>>, p: Promise<void>): void {
  set.add(p);
  void p.finally(() => set.delete(p));
}

export function look(d: CancelDriver, inFlight: Set<Promise<void>>, listed: Listed[]): void {
  for (const m of listed) if (m.status === "parked" && m.waiting_on !== null && !d.answering.has(m.id)) track(inFlight, answer(d, m));
}

/** Cancels a message picked by its status now (none when no message has it); `again`: one cancelled before (answered 200, unchanged). */
export function cancelAtRandom(d: CancelDriver, listed: Listed[], inFlight: Set<Promise<void>>): void {
  let r = d.rng.random();
  let kind: Exclude<CancelKind, "race" | "effect"> = "running";
  for (const [k, share] of CANCEL_KINDS) if ((r -= share) < 0) (kind = k), (r = Infinity);
  const wanted = { running: ["running"], queued: ["queued"], parked: ["parked"], finished: ["acknowledged"], again: ["cancelled"] }[kind];
  const candidates = listed.filter((m) => wanted.includes(m.status));
  if (candidates.length > 0) track(inFlight, cancelOne(d, d.rng.pick(candidates).id, kind));
}

/** The lines appended to `path` since the last look. */
function freshLines(path: string, seen: { n: number }): string {
  const text = readText(path);
  const fresh = text.slice(seen.n, text.lastIndexOf("\n") + 1);
  seen.n += fresh.length;
  return fresh;
}

/**
 * Races replies: a run that just traced its last step is cancelled at once or a moment later. And
 * lands cancels inside effects: one whose command just began (its ledger line) is cancelled while
 * the command works, before it reaches the sink.
 */
export function raceReplies(d: CancelDriver, seen: { calls: { n: number }; ledger: { n: number } }, inFlight: Set<Promise<void>>): void {
  const { random, between } = d.rng;
  const last = d.plan.at(-1)!.name;
  for (const c of parseCalls(freshLines(d.paths.calls, seen.calls))) {
    if (c.name !== last || c.rc !== 0 || d.raced.has(c.id) || random() >= RACE_SHARE) continue;
    d.raced.add(c.id);
    track(inFlight, sleep(between(0, 250)).then(() => cancelOne(d, c.id, "race")));
  }
  const effects = new Set(d.plan.filter((p) => p.kind === "effect").map((p) => p.name));
  for (const l of parseLedger(freshLines(d.paths.ledger, seen.ledger))) {
    if (!effects.has(l.name) || d.raced.has(l.id) || random() >= EFFECT_SHARE) continue;
    d.raced.add(l.id);
    track(inFlight, sleep(between(50, 300)).then(() => cancelOne(d, l.id, "effect")));
  }
}

export function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}
