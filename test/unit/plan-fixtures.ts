// Plain records the plan phases' table tests are written over.
import type { LeaseRecord } from "../../worker/rules/election.ts";
import type { MessageLease } from "../../worker/rules/message-lease.ts";
import type { ControlsSnapshot, ServeConn } from "../../worker/rules/agent-plan.ts";

export const TTL = 1000;
export const NOW = 100_000;

/** A connection named `c<claim>` ("new" before its claim). */
export function conn(claimSeq: number | null, over: Partial<ServeConn> = {}): ServeConn {
  return { id: claimSeq === null ? "new" : `c${claimSeq}`, claimSeq, released: false, machine: `m${claimSeq ?? "x"}`, joinedAt: 0, lastSeen: NOW, toldHeld: null, toldFence: null, readySince: 0, ...over };
}

/** Claim 1 holds fence 1. */
export const HELD: LeaseRecord = { fence: 1, holderClaim: 1, holderMachine: "m1", since: 0 };
export const NOBODY: LeaseRecord = { fence: 0, holderClaim: null, holderMachine: null, since: null };
export const CONTROLS: ControlsSnapshot = { paused: false, drained: new Set(), hysteresisMs: 10_000, reserved: null };

export function message(id: number, over: Partial<MessageLease> = {}): MessageLease {
  return { id, status: "queued", attempts: 0, token: 0, runner: null, expiresAt: null, group: null, runTimeoutMs: null, retryAt: null, capAt: null, pendingAsk: null, onDeadline: null, parkMs: null, forPerson: false, ...over };
}

export function running(id: number, runner: string, over: Partial<MessageLease> = {}): MessageLease {
  return message(id, { status: "running", runner, token: id, attempts: 1, expiresAt: NOW + 5000, ...over });
}
