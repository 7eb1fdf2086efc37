// planAgent, the one decision of an agent object per event, over plain snapshots with an injected clock.
import { describe, expect, it } from "vitest";
import { planAgent, type AgentEvent, type AgentSnapshot } from "../../worker/rules/agent-plan.ts";
import { DEFAULT_POLICY } from "../../worker/rules/message-lease.ts";
import { BUDGET, RUNNING, agentCheckpointWrite, checkpointWrite, conn, failWrite, heartbeatWrite, snapshot, staleWrite, stepWrite } from "./agent-plan-fixtures.ts";
import { NOW, TTL, message } from "./plan-fixtures.ts";

describe("planAgent: the lease", () => {
  const cases: { name: string; snap: AgentSnapshot; event: AgentEvent; holder: number | null; fence: number; reason: string | null }[] = [
    {
      name: "a first claim on an empty agent holds with fence 1",
      snap: snapshot({ lease: { fence: 0, holderClaim: null, holderMachine: null, since: null }, conns: [conn(null)], claimCounter: 0 }),
      event: { type: "claim", from: "new" }, holder: 1, fence: 1, reason: "claimed",
    },
    {
      name: "a second claim queues behind the holder (soft lease)",
      snap: snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(null)] }),
      event: { type: "claim", from: "new" }, holder: 1, fence: 1, reason: null,
    },
    {
      name: "a holder silent past its TTL loses the lease to the standby, reason stale",
      snap: snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }, NOW - TTL - 1), conn(2)] }),
      event: { type: "alarm" }, holder: 2, fence: 2, reason: "stale",
    },
    {
      name: "the holder's release hands on, reason released",
      snap: snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)] }),
      event: { type: "release", from: "c1" }, holder: 2, fence: 2, reason: "released",
    },
    {
      name: "a standby's release moves nothing",
      snap: snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)] }),
      event: { type: "release", from: "c2" }, holder: 1, fence: 1, reason: null,
    },
    {
      name: "a ready preferred runner takes the idle holder's lease, reason preferred",
      snap: snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { priority: 5, readySince: NOW - 10_000 })] }),
      event: { type: "alarm" }, holder: 2, fence: 2, reason: "preferred",
    },
    {
      name: "a preferred runner still in its hysteresis waits",
      snap: snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { priority: 5, readySince: NOW - 9_999 })] }),
      event: { type: "alarm" }, holder: 1, fence: 1, reason: null,
    },
    {
      name: "the safe point: a holder running a message keeps the lease against a ready preferred runner",
      snap: snapshot({
        conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { priority: 5, readySince: 0 })],
        work: { policy: DEFAULT_POLICY, open: [message(7, { status: "running", runner: "1", token: 3, attempts: 1, expiresAt: NOW + 5000 })], parkDeadline: null, due: new Map(), journalBudget: BUDGET },
      }),
      event: { type: "alarm" }, holder: 1, fence: 1, reason: null,
    },
    {
      name: "a drained idle holder hands on, reason drained",
      snap: snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)], controls: { paused: false, drained: new Set(["m1"]), hysteresisMs: 10_000, reserved: null } }),
      event: { type: "work" }, holder: 2, fence: 2, reason: "drained",
    },
    {
      name: "paused: the lease stays where it is, also against a ready preferred runner",
      snap: snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { priority: 5 })], controls: { paused: true, drained: new Set(), hysteresisMs: 0, reserved: null } }),
      event: { type: "work" }, holder: 1, fence: 1, reason: null,
    },
    {
      name: "after a restart the lease waits for the reserved runner, not the first claimant",
      snap: snapshot({
        lease: { fence: 4, holderClaim: 9, holderMachine: "old", since: 0 },
        conns: [conn(10, { runnerId: "other" }), conn(11, { runnerId: "back" })],
        controls: { paused: false, drained: new Set(), hysteresisMs: 0, reserved: { runner: "back", until: NOW + 1 } },
      }),
      event: { type: "start" }, holder: 11, fence: 5, reason: "restored",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planAgent(c.snap, c.event);
      expect(plan.lease.holderClaim).toBe(c.holder);
      expect(plan.lease.fence).toBe(c.fence);
      expect(plan.transition?.reason ?? null).toBe(c.reason);
    });
  }

  it("the silent holder is closed, and its loss is dated at its deadline, not when the scan ran", () => {
    const plan = planAgent(snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }, NOW - 3000), conn(2)] }), { type: "alarm" });
    expect(plan.close).toEqual([0]);
    expect(plan.holderLostAt).toBe(NOW - 3000 + TTL);
  });

  it("claims take the next claim sequence; a re-claim after a release starts the hysteresis again", () => {
    const plan = planAgent(snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { released: true, readySince: 0 })], claimCounter: 2 }), { type: "claim", from: "c2" });
    expect(plan.claimCounter).toBe(3);
    expect(plan.patches.get(1)).toMatchObject({ claimSeq: 3, released: false, readySince: NOW });
  });

  it("tells only connections whose own state changed: the new holder and the old one, not a third in line", () => {
    const snap = snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { toldHeld: false, toldFence: 1 }), conn(3, { toldHeld: false, toldFence: 1 })] });
    const plan = planAgent(snap, { type: "release", from: "c1" });
    expect(plan.tells.map((t) => [t.to, t.held, t.fence])).toEqual([[0, false, 2], [1, true, 2]]);
    expect(plan.tells[0]!.position).toBe(-1);
    expect(plan.released).toBe(true);
  });

  it("a holder's new machine label reaches the lease and every claimant, with no transition", () => {
    const plan = planAgent(snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2, { toldHeld: false, toldFence: 1 })] }), { type: "hello", from: "c1", machine: "laptop" });
    expect(plan.transition).toBeNull();
    expect(plan.leaseChanged).toBe(true);
    expect(plan.lease.holderMachine).toBe("laptop");
    expect(plan.tells.map((t) => t.holder?.machine)).toEqual(["laptop", "laptop"]);
  });

  it("the holder's accepted auto ping is folded into its attachment", () => {
    const snap = snapshot({ conns: [{ conn: { ...conn(1, { toldHeld: true, toldFence: 1 }).conn, lastSeen: NOW - 600 }, heartbeat: NOW - 100 }] });
    expect(planAgent(snap, { type: "alarm" }).patches.get(0)).toMatchObject({ lastSeen: NOW - 100 });
  });
});

describe("planAgent: messages", () => {
  const running = (id: number, runner: string, expiresAt = NOW + 5000) => message(id, { status: "running", runner, token: id, attempts: 1, expiresAt });

  it("hands queued messages to the holder under new tokens, oldest first, one per slot", () => {
    const snap = snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1, slots: 2 })], work: { policy: DEFAULT_POLICY, open: [message(3), message(4), message(5)], parkDeadline: null, due: new Map(), journalBudget: BUDGET }, tokenCounter: 10 });
    const plan = planAgent(snap, { type: "work" });
    expect(plan.handOuts.map((h) => [h.lease.id, h.lease.token, h.lease.attempts, h.lease.expiresAt, h.to])).toEqual([
      [3, 11, 1, NOW + DEFAULT_POLICY.runTimeoutMs, 0], [4, 12, 1, NOW + DEFAULT_POLICY.runTimeoutMs, 0],
    ]);
    expect(plan.tokenCounter).toBe(12);
  });

  it("a standby gets nothing in single mode; every runner does in pool mode", () => {
    const open = [message(3), message(4)];
    const conns = [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)];
    expect(planAgent(snapshot({ conns, work: { policy: DEFAULT_POLICY, open, parkDeadline: null, due: new Map(), journalBudget: BUDGET } }), { type: "work" }).handOuts.map((h) => h.to)).toEqual([0]);
    const pool = { ...DEFAULT_POLICY, mode: "pool" as const };
    expect(planAgent(snapshot({ conns, work: { policy: pool, open, parkDeadline: null, due: new Map(), journalBudget: BUDGET } }), { type: "work" }).handOuts.map((h) => h.to)).toEqual([0, 1]);
  });

  it("a message whose runner left is taken back and handed to the new holder, with the reason recorded", () => {
    const snap = snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)], work: { policy: DEFAULT_POLICY, open: [running(7, "1")], parkDeadline: null, due: new Map(), journalBudget: BUDGET } });
    const plan = planAgent(snap, { type: "release", from: "c1" });
    expect(plan.takeBacks).toMatchObject([{ lease: { id: 7, status: "queued" }, revoke: { to: 0, token: 7, reason: "runner_gone" } }]);
    expect(plan.handOuts).toMatchObject([{ lease: { id: 7, attempts: 2, runner: "2" }, to: 1 }]);
  });

  it("a run deadline that passed is taken back even while its runner is connected, and goes to another runner when one has room", () => {
    const pool = { ...DEFAULT_POLICY, mode: "pool" as const };
    const snap = snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)], work: { policy: pool, open: [running(7, "1", NOW)], parkDeadline: null, due: new Map(), journalBudget: BUDGET } });
    const plan = planAgent(snap, { type: "alarm" });
    expect(plan.takeBacks).toMatchObject([{ revoke: { to: 0, reason: "run_timeout" } }]);
    expect(plan.handOuts).toMatchObject([{ lease: { id: 7 }, to: 1 }]);
  });

  it("a parked message past its deadline fails; nobody is told to stop", () => {
    const snap = snapshot({ work: { policy: DEFAULT_POLICY, open: [message(8, { status: "parked", expiresAt: NOW - 1, attempts: 1, token: 2 })], parkDeadline: null, due: new Map(), journalBudget: BUDGET } });
    expect(planAgent(snap, { type: "alarm" }).takeBacks).toMatchObject([{ lease: { id: 8, status: "failed" }, revoke: null }]);
  });

  it("the safe point: a holder that should hand on takes no new message, so it reaches it", () => {
    const snap = snapshot({
      conns: [conn(1, { toldHeld: true, toldFence: 1, slots: 2 }), conn(2, { priority: 5, readySince: 0 })],
      work: { policy: DEFAULT_POLICY, open: [running(7, "1"), message(9)], parkDeadline: null, due: new Map(), journalBudget: BUDGET },
    });
    expect(planAgent(snap, { type: "work" }).handOuts).toEqual([]);
  });

  it("paused or drained: nothing is handed out, and what runs keeps running", () => {
    const open = [running(7, "1"), message(9)];
    const paused = snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1, slots: 2 })], work: { policy: DEFAULT_POLICY, open, parkDeadline: null, due: new Map(), journalBudget: BUDGET }, controls: { paused: true, drained: new Set(), hysteresisMs: 0, reserved: null } });
    const plan = planAgent(paused, { type: "work" });
    expect([plan.handOuts, plan.takeBacks]).toEqual([[], []]);
  });
});

describe("planAgent: the alarm and presence", () => {
  it("looks at the holder halfway to its deadline, capped by the scan interval", () => {
    const plan = planAgent(snapshot({ scanMs: 60_000 }), { type: "work" });
    expect(plan.alarm).toEqual({ set: NOW + TTL / 2 });
  });

  it("a message deadline earlier than any scan sets the alarm", () => {
    const plan = planAgent(snapshot({ scanMs: 60_000, work: { policy: DEFAULT_POLICY, open: [], parkDeadline: NOW + 10, due: new Map(), journalBudget: BUDGET } }), { type: "work" });
    expect(plan.alarm).toEqual({ set: NOW + 10 });
  });

  it("an alarm already due earlier is left alone, so a frame costs no alarm write", () => {
    expect(planAgent(snapshot({ alarmAt: NOW + 100 }), { type: "work" }).alarm).toBeNull();
  });

  it("with nothing to watch the alarm is deleted", () => {
    expect(planAgent(snapshot({ conns: [], alarmAt: NOW + 100 }), { type: "closed" }).alarm).toBe("delete");
  });

  it("a scan that found everyone alive and moved nothing changes no presence; a claim does", () => {
    expect(planAgent(snapshot(), { type: "alarm" }).presenceChanged).toBe(false);
    expect(planAgent(snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(null)] }), { type: "claim", from: "new" }).presenceChanged).toBe(true);
  });

  it("a write that moves no message (a heartbeat, a step, a message checkpoint) changes no presence, as before the plan stored it", () => {
    const snap = snapshot({ work: { policy: DEFAULT_POLICY, open: [RUNNING], parkDeadline: null, due: new Map(), journalBudget: BUDGET } });
    for (const write of [heartbeatWrite, stepWrite, checkpointWrite]) {
      expect(planAgent(snap, { type: "write", from: "c1", write }).presenceChanged).toBe(false);
    }
    // A write that moves its message (a fail) still does.
    expect(planAgent(snap, { type: "write", from: "c1", write: failWrite }).presenceChanged).toBe(true);
  });

  it("a write the token check refused is counted by the plan and changes presence (its metrics); an answered one that moved nothing does not", () => {
    const refused = planAgent(snapshot(), { type: "write", from: "c1", write: staleWrite });
    expect([refused.refused, refused.presenceChanged, refused.replies]).toMatchObject(["stale_token", true, [{ to: "c1", frame: { type: "error", code: "stale_token" } }]]);
    const quiet = planAgent(snapshot(), { type: "write", from: "c1", write: checkpointWrite });
    expect([quiet.refused, quiet.presenceChanged]).toEqual([null, false]);
  });

  it("a release is answered after the lease news it causes: whether the sender held, and the fence now", () => {
    const plan = planAgent(snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)] }), { type: "release", from: "c1", req: "q" });
    expect([plan.replies, plan.lastReplies]).toEqual([[], [{ to: "c1", frame: { type: "result", op: "release", req: "q", released: true, fence: 2 } }]]);
    expect(planAgent(snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1 }), conn(2)] }), { type: "release", from: "c2" }).lastReplies[0]!.frame)
      .toMatchObject({ released: false, fence: 1 });
  });

  it("a sync moves the cursor and replays its page; one that moved nothing changes no presence", () => {
    const sync = (cursor: number): AgentSnapshot => snapshot({ conns: [conn(1, { toldHeld: true, toldFence: 1, cursor })] });
    const moved = planAgent(sync(2), { type: "sync", from: "c1", after: 2, known: 2, last: 6, count: 4, more: false, req: "r" });
    expect([moved.patches.get(0), moved.replay, moved.presenceChanged]).toEqual([{ cursor: 6 }, { to: "c1", after: 2, last: 6, count: 4, more: false, req: "r" }, true]);
    expect(planAgent(sync(9), { type: "sync", from: "c1", after: 2, known: 2, last: 6, count: 4, more: false }).presenceChanged).toBe(false);
  });

  it("the holder's own checkpoint is stored by the plan and changes no presence", () => {
    const plan = planAgent(snapshot(), { type: "write", from: "c1", write: { ...agentCheckpointWrite, value: { n: 1 } } });
    expect([plan.agentCheckpoint, plan.presenceChanged]).toEqual([{ value: { n: 1 }, fence: 1 }, false]);
  });
});
