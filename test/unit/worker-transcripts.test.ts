// Replays the agent object's transcripts (test/worker-transcripts/*.json, format in its README.md):
// each is a snapshot and one event in, and what the plan must do out (its effects, the ordered list
// objects/agent-apply.ts runs, and a run write's answer), replayed against planAgent alone
// and compared whole. BATON_WRITE_TRANSCRIPTS=1 writes what the plan does into `expect` instead
// (for a new transcript: read the diff before committing it).
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { planAgent, type AgentEvent, type AgentPlan, type AgentSnapshot, type ConnSnapshot } from "../../worker/rules/agent-plan.ts";
import { DEFAULT_POLICY, type MessageLease } from "../../worker/rules/message-lease.ts";

const DIR = join(import.meta.dirname, "..", "worker-transcripts");

type Json = Record<string, unknown>;
interface Transcript {
  format: 1;
  name: string;
  incident: string;
  snapshot: Json;
  event: Json;
  expect: Json;
}

/** A message lease: the transcript's fields over a queued message with nothing set. */
function lease(over: Json): MessageLease {
  return {
    id: 0, status: "queued", attempts: 0, token: 0, runner: null, expiresAt: null, group: null, runTimeoutMs: null, retryAt: null, capAt: null, pendingAsk: null,
    onDeadline: null, parkMs: null, forPerson: false, ...over,
  } as MessageLease;
}

/** A connection: the transcript's fields over a claimant that proved itself alive at `now`, named `c<claim>` ("new" before its claim). */
function conn(over: Json, now: number): ConnSnapshot {
  const { heartbeat, ...c } = over as { heartbeat?: number } & Json;
  return {
    conn: { id: c.claimSeq === undefined || c.claimSeq === null ? "new" : `c${String(c.claimSeq)}`, claimSeq: null, released: false, machine: `m${String(c.claimSeq ?? "x")}`, joinedAt: 0, lastSeen: heartbeat ?? now, toldHeld: null, toldFence: null, readySince: 0, ...c },
    heartbeat: heartbeat ?? now,
  } as ConnSnapshot;
}

/** The transcript's snapshot over defaults (README: a holder with claim 1 and fence 1, no messages). */
function snapshotOf(s: Json): AgentSnapshot {
  const now = (s.now as number | undefined) ?? 100_000;
  const work = (s.work ?? {}) as Json;
  const controls = (s.controls ?? {}) as Json;
  return {
    now, ttlMs: 1000, scanMs: 500,
    lease: { fence: 1, holderClaim: 1, holderMachine: "m1", since: 0 },
    claimCounter: 2, tokenCounter: 0, ownDeadlines: [], alarmAt: null, runKeys: ["rk-1", "rk-2", "rk-3", "rk-4"],
    webhooks: { dueAt: null, sendsNow: false, keeps: true, outage: { since: null, notified: false }, noHolderAfterMs: null },
    ...s,
    conns: ((s.conns as Json[] | undefined) ?? [{ claimSeq: 1, toldHeld: true, toldFence: 1 }]).map((c) => conn(c, now)),
    controls: { paused: false, hysteresisMs: 10_000, reserved: null, ...controls, drained: new Set((controls.drained as string[] | undefined) ?? []) },
    work: {
      policy: { ...DEFAULT_POLICY, ...(work.policy as Json | undefined) }, parkDeadline: null, journalBudget: { steps: 100, bytes: 1 << 20 },
      ...work, open: ((work.open as Json[] | undefined) ?? []).map(lease), due: new Map(),
    },
  } as AgentSnapshot;
}

/** The event, with every message lease it carries filled in as `lease` fills them. */
function eventOf(e: Json): AgentEvent {
  const event = structuredClone(e);
  const write = event.write as Json | undefined;
  if (write?.lease) write.lease = lease(write.lease as Json);
  const target = (write?.target ?? null) as Json | null;
  if (target?.lease) target.lease = lease(target.lease as Json);
  if (event.type === "cancel") event.target = lease(event.target as Json);
  return event as unknown as AgentEvent;
}

/** What a transcript compares: the plan's effects, the ordered list apply runs and nothing else, and a run write's answer. */
function effectsOf(plan: AgentPlan): Json {
  return {
    effects: plan.effects,
    write: plan.write === null ? null : { kind: plan.write.kind, ...("answer" in plan.write ? { answer: plan.write.answer } : {}) },
  };
}

const files = readdirSync(DIR).filter((f) => f.endsWith(".json")).sort();

describe("worker transcripts", () => {
  it("there are transcripts to replay", () => expect(files.length).toBeGreaterThanOrEqual(5));
  for (const file of files) {
    const t = JSON.parse(readFileSync(join(DIR, file), "utf8")) as Transcript;
    it(`${file}: ${t.name}`, () => {
      expect(t.format).toBe(1);
      const effects = JSON.parse(JSON.stringify(effectsOf(planAgent(snapshotOf(t.snapshot), eventOf(t.event))))) as Json;
      if (process.env.BATON_WRITE_TRANSCRIPTS === "1") writeFileSync(join(DIR, file), `${JSON.stringify({ ...t, expect: effects }, null, 2)}\n`);
      else expect(effects).toEqual(t.expect);
    });
  }
});
