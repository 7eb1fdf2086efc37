// Plain snapshots and writes planAgent's table tests are written over: a holder on claim 1 and the writes of its running message 7.
import type { AgentSnapshot, ConnSnapshot, ServeConn } from "../../worker/rules/agent-plan.ts";
import { DEFAULT_POLICY } from "../../worker/rules/message-lease.ts";
import type { WriteInput } from "../../worker/rules/plan/write-event.ts";
import type { RunnerWrite } from "../../worker/rules/plan/write.ts";
import { message, NOW, TTL } from "./plan-fixtures.ts";

export const BUDGET = { steps: 100, bytes: 1 << 20 };
const NO_WEBHOOKS = { dueAt: null, sendsNow: false, keeps: true, outage: { since: null, notified: false }, noHolderAfterMs: null };

export function conn(claimSeq: number | null, over: Partial<ServeConn> = {}, heartbeat = NOW): ConnSnapshot {
  const c: ServeConn = {
    id: claimSeq === null ? "new" : `c${claimSeq}`, claimSeq, released: false, machine: `m${claimSeq ?? "x"}`, joinedAt: 0, lastSeen: heartbeat, toldHeld: null, toldFence: null,
    readySince: 0, ...over,
  };
  return { conn: c, heartbeat };
}

/** A holder (claim 1, told it holds fence 1) and the given others. */
export function snapshot(over: Partial<AgentSnapshot> = {}): AgentSnapshot {
  return {
    now: NOW, ttlMs: TTL, scanMs: 500,
    lease: { fence: 1, holderClaim: 1, holderMachine: "m1", since: 0 },
    conns: [conn(1, { toldHeld: true, toldFence: 1 })],
    controls: { paused: false, drained: new Set(), hysteresisMs: 10_000, reserved: null },
    work: { policy: DEFAULT_POLICY, open: [], parkDeadline: null, due: new Map(), journalBudget: BUDGET },
    claimCounter: 1, tokenCounter: 0, ownDeadlines: [], alarmAt: null, webhooks: NO_WEBHOOKS, runKeys: ["rk-1", "rk-2", "rk-3", "rk-4"],
    ...over,
  };
}

/** Message 7 runs on claim 1 under token 1. */
export const RUNNING = message(7, { status: "running", attempts: 1, token: 1, runner: "1", expiresAt: NOW + 5000 });
export const STEP_RECORD = { name: "s", kind: "step" as const, status: "done" as const, value: "1", blob: null, onUnknown: null, attempt: 1, token: 1 };
const run = { id: 7, token: 1, writer: { runner: "1" }, lease: RUNNING, frame: true, req: "r" };
export const heartbeatWrite: WriteInput = { kind: "heartbeat", ...run, details: undefined };
export const stepWrite = {
  kind: "step" as const, ...run, step: { name: "s", kind: "step" as const, phase: "done" as const, value: "1", blob: null, onUnknown: null },
  rows: { openIntents: [], record: null, usage: { steps: 0, bytes: 0 }, blob: null, keptKey: null, keys: null, permit: null },
};
const runnerTarget = { lease: RUNNING, acked: { runner: null, write: { id: 7, fence: 0, key: "ack" } }, asked: null, blob: null, journal: { openIntents: [], record: null }, traces: null };
export const checkpointWrite: WriteInput = { kind: "runner", writer: "1", target: runnerTarget, frame: { type: "message_checkpoint", id: 7, token: 1, value: 1 } as RunnerWrite };
export const failWrite: WriteInput = { kind: "runner", writer: "1", target: runnerTarget, frame: { type: "fail", id: 7, token: 1, reason: "boom" } as RunnerWrite };
export const staleWrite: WriteInput = { kind: "runner", writer: "1", target: runnerTarget, frame: { type: "reply", id: 7, token: 0, text: "x", key: "k" } as RunnerWrite };
export const agentCheckpointWrite = { kind: "agent_checkpoint" as const, fence: 1, value: 1 as unknown, sender: { claimSeq: 1, released: false } };
