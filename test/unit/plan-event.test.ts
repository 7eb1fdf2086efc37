// Phase 1: what the event itself changes (worker/rules/plan/event.ts).
import { describe, expect, it } from "vitest";
import { senderChange, workChange } from "../../worker/rules/plan/event.ts";
import type { AgentEvent } from "../../worker/rules/agent-plan.ts";
import { DEFAULT_POLICY } from "../../worker/rules/message-lease.ts";
import { conn, HELD, message, NOW, running } from "./plan-fixtures.ts";

const BY = { account: "a", token: "t", via: "http" };
const POST = { text: "hi", group: null, runTimeoutMs: null, key: null, question: null, deadlineSeconds: null, traceparent: null };
const INTERRUPT = { ...DEFAULT_POLICY, onBusy: "interrupt" as const };

describe("senderChange", () => {
  const cases: { name: string; conns: ReturnType<typeof conn>[]; event: AgentEvent; patch: object | undefined; claimCounter: number; released: boolean | null; machine: string | null }[] = [
    { name: "a first claim takes the next claim sequence and starts its hysteresis", conns: [conn(null)], event: { type: "claim", from: "new", priority: 3 },
      patch: { claimSeq: 2, released: false, readySince: NOW, toldHeld: null, priority: 3 }, claimCounter: 2, released: null, machine: "m1" },
    { name: "a re-claim of a live claim changes only its slots", conns: [conn(1)], event: { type: "claim", from: "c1", slots: 4 },
      patch: { slots: 4 }, claimCounter: 1, released: null, machine: "m1" },
    { name: "the holder's release is answered true and marks it released", conns: [conn(1)], event: { type: "release", from: "c1" },
      patch: { released: true }, claimCounter: 1, released: true, machine: "m1" },
    { name: "a standby's release is answered false (it held nothing) and takes it out of the line", conns: [conn(1), conn(2)], event: { type: "release", from: "c2" },
      patch: { released: true }, claimCounter: 1, released: false, machine: "m1" },
    { name: "a second release changes nothing", conns: [conn(1), conn(2, { released: true })], event: { type: "release", from: "c2" },
      patch: undefined, claimCounter: 1, released: false, machine: "m1" },
    { name: "a release of a connection that never claimed changes nothing", conns: [conn(1), conn(null)], event: { type: "release", from: "new" },
      patch: undefined, claimCounter: 1, released: false, machine: "m1" },
    { name: "the holder's hello with a new label relabels the lease", conns: [conn(1)], event: { type: "hello", from: "c1", machine: "laptop" },
      patch: { machine: "laptop" }, claimCounter: 1, released: null, machine: "laptop" },
    { name: "a sync moves the cursor past the page it is shown", conns: [conn(1, { cursor: 3 })], event: { type: "sync", from: "c1", after: 3, known: 3, last: 8, count: 5, more: false },
      patch: { cursor: 8 }, claimCounter: 1, released: null, machine: "m1" },
    { name: "a sync after a cursor it skipped to moves the cursor there, even with nothing to show", conns: [conn(1, { cursor: 0 })],
      event: { type: "sync", from: "c1", after: 5, known: 5, last: 5, count: 0, more: false }, patch: { cursor: 5 }, claimCounter: 1, released: null, machine: "m1" },
    { name: "a sync of what the connection has seen moves nothing", conns: [conn(1, { cursor: 8 })], event: { type: "sync", from: "c1", after: 2, known: 2, last: 4, count: 2, more: true },
      patch: undefined, claimCounter: 1, released: null, machine: "m1" },
    { name: "any other event changes no sender", conns: [conn(1)], event: { type: "alarm" }, patch: undefined, claimCounter: 1, released: null, machine: "m1" },
    { name: "a sender that is no longer live changes nothing", conns: [conn(1)], event: { type: "claim", from: "gone", slots: 4 }, patch: undefined, claimCounter: 1, released: null, machine: "m1" },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const out = senderChange(c.conns, HELD, 1, c.event, NOW);
      const e = c.event;
      const from = "from" in e ? c.conns.findIndex((x) => x.id === e.from) : -1;
      expect(out.patches.get(from)).toEqual(c.patch);
      expect(out.patches.size).toBe(c.patch === undefined ? 0 : 1);
      expect([out.claimCounter, out.released, out.lease.holderMachine]).toEqual([c.claimCounter, c.released, c.machine]);
      expect(out.forceTell).toBe(out.leaseChanged);
    });
  }
});

describe("workChange", () => {
  const cases: { name: string; event: AgentEvent; open: ReturnType<typeof message>[]; statuses: [number, string][]; stops: number; superseded: number[] }[] = [
    { name: "a cancel of a running message ends it at once and names its runner", event: { type: "cancel", target: running(7, "1"), by: BY, reason: null },
      open: [running(7, "1")], statuses: [[7, "cancelled"]], stops: 1, superseded: [] },
    { name: "a cancel of a finished message changes nothing", event: { type: "cancel", target: message(7, { status: "acknowledged" }), by: BY, reason: null },
      open: [], statuses: [], stops: 0, superseded: [] },
    { name: "a post while its group is busy interrupts the running one (policy interrupt)", event: { type: "post", post: POST, lastId: 8, groupOpen: [running(7, "1")], by: BY },
      open: [running(7, "1")], statuses: [[7, "cancelled"], [9, "queued"]], stops: 1, superseded: [] },
    { name: "any other event leaves the open messages as they are", event: { type: "work" }, open: [message(3)], statuses: [[3, "queued"]], stops: 0, superseded: [] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const out = workChange(c.open, c.event, undefined, NOW, INTERRUPT);
      expect([...out.open.values()].map((m) => [m.id, m.status])).toEqual(c.statuses);
      expect(out.cancelling.filter((x) => x.verdict.outcome === "cancelled" && x.verdict.stop !== null).length).toBe(c.stops);
      expect(out.superseded.map((s) => s.lease.id)).toEqual(c.superseded);
    });
  }
});
