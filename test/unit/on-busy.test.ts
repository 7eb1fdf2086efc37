// The on_busy policy as a table: what a new message does while its group is busy, and the busy
// event of planAgent that applies it (interrupts told to their runner, supersedes stored).
import { describe, expect, it } from "vitest";
import { planAgent, type AgentSnapshot } from "../../worker/rules/agent-plan.ts";
import { busyRead, decideOnBusy, supersede, type BusyPolicy, type BusyRead } from "../../worker/rules/on-busy.ts";
import { DEFAULT_POLICY, type MessageLease } from "../../worker/rules/message-lease.ts";

const BUDGET = { steps: 100, bytes: 1 << 20 };
const NO_WEBHOOKS = { dueAt: null, sendsNow: false, keeps: true, outage: { since: null, notified: false }, noHolderAfterMs: null };

const NOW = 50_000;
const msg = (id: number, over: Partial<MessageLease> = {}): MessageLease => ({
  id, status: "queued", attempts: 0, token: 0, runner: null, expiresAt: null, group: null, runTimeoutMs: null, retryAt: null, capAt: null, pendingAsk: null, onDeadline: null, parkMs: null, forPerson: false, ...over,
});
const running = (id: number) => msg(id, { status: "running", runner: "1", token: 10 + id, attempts: 1, expiresAt: NOW + 9000 });
const policy = (onBusy: BusyPolicy["onBusy"], debounceMs: number | null = null, mode: BusyPolicy["mode"] = "single", debounceMaxMs: number | null = null): BusyPolicy =>
  ({ mode, onBusy, debounceMs, debounceMaxMs });

describe("decideOnBusy", () => {
  const busy = [running(1), msg(2), msg(3, { attempts: 1, retryAt: NOW + 5 }), msg(4, { status: "parked", attempts: 1 })];
  const rows: [string, BusyPolicy, readonly MessageLease[], unknown][] = [
    ["queue: stored, nothing else happens", policy("queue"), busy, { action: "store", interrupt: [], supersede: [], holdUntil: null }],
    ["reject: refused while one is queued or running, naming the oldest", policy("reject"), busy, { action: "refuse", code: "busy", holder: 1 }],
    ["reject: a group with only a parked message is not busy", policy("reject"), [msg(4, { status: "parked" })], { action: "store", interrupt: [] }],
    ["reject: an idle group stores", policy("reject"), [], { action: "store" }],
    ["interrupt: the running one is cancelled and the new one runs first; queued ones stay", policy("interrupt"), busy, { action: "store", interrupt: [busy[0]], supersede: [], first: true }],
    ["interrupt: with nothing running, the new one just queues", policy("interrupt"), [msg(2)], { action: "store", interrupt: [], first: false }],
    ["replace: queued never-started ones are superseded; a retry waiting its backoff and the running one stay", policy("replace"), busy,
      { action: "store", interrupt: [], supersede: [busy[1]], holdUntil: null }],
    ["replace with a debounce holds the new one that long; the first of a burst begins it", policy("replace", 300), [msg(5, { retryAt: NOW + 100 })],
      { action: "store", supersede: [msg(5, { retryAt: NOW + 100 })], holdUntil: NOW + 300, heldSince: NOW }],
    ["replace with a debounce: a trickle's hold ends at debounce_max after the burst's first, carried from the one it supersedes", policy("replace", 300, "single", 1000),
      [msg(5, { retryAt: NOW + 250, heldSince: NOW - 900 })], { holdUntil: NOW + 100, heldSince: NOW - 900 }],
    ["replace with a debounce: past the ceiling the new one is not held at all", policy("replace", 300, "single", 1000),
      [msg(5, { retryAt: NOW + 250, heldSince: NOW - 1000 })], { holdUntil: null, heldSince: NOW - 1000 }],
    ["replace with a debounce and no debounce_max: the ceiling is 10 times the debounce", policy("replace", 300),
      [msg(5, { retryAt: NOW + 250, heldSince: NOW - 2900 })], { holdUntil: NOW + 100, heldSince: NOW - 2900 }],
    ["replace without a debounce holds nothing and starts no burst", policy("replace"), [msg(5, { heldSince: NOW - 10 })], { holdUntil: null, heldSince: null }],
  ];
  for (const [name, p, group, expected] of rows) {
    it(name, () => expect(decideOnBusy(p, group, "chat", NOW)).toMatchObject(expected as object));
  }

  it("the refusal says which group, which message and that nothing was stored", () => {
    expect(decideOnBusy(policy("reject"), [running(7)], "chat", NOW)).toMatchObject({ message: 'group "chat" is busy: message 7 is running (on_busy reject); nothing was stored' });
    expect(decideOnBusy(policy("reject"), [running(7)], null, NOW)).toMatchObject({ message: "the agent (messages without a group) is busy: message 7 is running (on_busy reject); nothing was stored" });
  });

  it.each(["reject", "interrupt", "replace"] as const)("in pool mode ungrouped messages are independent work: %s leaves them alone and the new one queues", (onBusy) => {
    const open = [running(7), running(8), msg(9)];
    expect(decideOnBusy(policy(onBusy, 500, "pool"), open, null, NOW)).toEqual({ action: "store", interrupt: [], supersede: [], holdUntil: null, heldSince: null, first: false });
    // A named group is still one conversation in a pool.
    expect(decideOnBusy(policy(onBusy, 500, "pool"), [{ ...running(7), group: "chat" }], "chat", NOW)).not.toEqual({ action: "store", interrupt: [], supersede: [], holdUntil: null, heldSince: null, first: false });
  });

  it("supersede ends only a queued message that never started", () => {
    expect(supersede(msg(2))).toMatchObject({ status: "superseded" });
    expect(supersede(msg(3, { attempts: 1 }))).toBeNull();
    expect(supersede(running(1))).toBeNull();
  });

  it("a queued message whose every hand-out was declined never started: replace supersedes it; one that ran once as well is kept", () => {
    expect(supersede(msg(2, { attempts: 2, declined: 2 }))).toMatchObject({ status: "superseded" });
    expect(supersede(msg(3, { attempts: 2, declined: 1 }))).toBeNull();
    const decided = decideOnBusy(policy("replace"), [msg(2, { group: "chat", attempts: 1, declined: 1 }), msg(3, { group: "chat", attempts: 2, declined: 1 })], "chat", NOW);
    expect(decided.action === "store" && decided.supersede.map((m) => m.id)).toEqual([2]);
  });

  it("a failed message a person retried has not started since: replace supersedes it until its next try, declined or not", () => {
    expect(supersede(msg(2, { attempts: 3, retriedAfter: 3 }))).toMatchObject({ status: "superseded" });
    expect(supersede(msg(2, { attempts: 4, retriedAfter: 3, declined: 1 }))).toMatchObject({ status: "superseded" });
    expect(supersede(msg(3, { attempts: 4, retriedAfter: 3 }))).toBeNull();
    const decided = decideOnBusy(policy("replace"), [msg(2, { group: "chat", attempts: 3, retriedAfter: 3 }), msg(3, { group: "chat", attempts: 4, retriedAfter: 3 })], "chat", NOW);
    expect(decided.action === "store" && decided.supersede.map((m) => m.id)).toEqual([2]);
  });
});

/** What the store answers for a read (message-store.ts busyGroup) over a whole group, oldest first. */
const readOf = (group: readonly MessageLease[], read: BusyRead) => read.statuses.flatMap((status) => {
  const rows = group.filter((m) => m.status === status && !m.forPerson && (!read.neverStarted || m.attempts === (m.retriedAfter ?? 0) + (m.declined ?? 0))).sort((a, b) => a.id - b.id);
  return read.oldestOnly ? rows.slice(0, 1) : rows;
});

describe("busyRead: what a policy decides on is read whole, never a window", () => {
  it("queue, and ungrouped work in a pool, read nothing; reject the oldest queued and running; interrupt every running; replace every never-started queued", () => {
    expect(busyRead(policy("queue"), "chat")).toBeNull();
    expect(busyRead(policy("replace", null, "pool"), null)).toBeNull();
    expect(busyRead(policy("reject"), "chat")).toEqual({ statuses: ["queued", "running"], neverStarted: false, oldestOnly: true });
    expect(busyRead(policy("interrupt"), null)).toEqual({ statuses: ["running"], neverStarted: false, oldestOnly: false });
    expect(busyRead(policy("replace", null, "pool"), "chat")).toEqual({ statuses: ["queued"], neverStarted: true, oldestOnly: false });
  });

  it.each(["reject", "interrupt", "replace"] as const)("%s decides on what it read as it would on the whole group, however many parked ones and questions for a person come first", (onBusy) => {
    const questions = Array.from({ length: 505 }, (_, i) => msg(i + 1, { status: "parked", forPerson: true }));
    const queued = Array.from({ length: 505 }, (_, i) => msg(1000 + i));
    const group = [...questions, msg(900, { status: "parked", attempts: 1 }), running(950), ...queued];
    const read = busyRead(policy(onBusy), "chat")!;
    const whole = decideOnBusy(policy(onBusy), group.filter((m) => !m.forPerson), "chat", NOW);
    expect(decideOnBusy(policy(onBusy), readOf(group, read), "chat", NOW)).toEqual(whole);
    if (onBusy === "replace") expect(whole).toMatchObject({ supersede: queued });
    if (onBusy === "reject") expect(whole).toMatchObject({ action: "refuse", holder: 950 });
  });
});

function snapshot(open: MessageLease[], policy = DEFAULT_POLICY): AgentSnapshot {
  return {
    now: NOW, ttlMs: 1000, scanMs: 500,
    lease: { fence: 1, holderClaim: 1, holderMachine: "m1", since: 0 },
    conns: [{ conn: { id: "c1", claimSeq: 1, released: false, machine: "m1", joinedAt: 0, lastSeen: NOW, toldHeld: true, toldFence: 1, readySince: 0 }, heartbeat: NOW }],
    controls: { paused: false, drained: new Set(), hysteresisMs: 10_000, reserved: null },
    work: { policy, open, parkDeadline: null, due: new Map(), journalBudget: BUDGET },
    claimCounter: 1, tokenCounter: 50, ownDeadlines: [], alarmAt: null, webhooks: NO_WEBHOOKS, runKeys: ["rk-1", "rk-2", "rk-3", "rk-4"],
  };
}
const by = { account: "dev", token: "bot", via: "http" };

const post = (text: string) => ({ text, group: null, runTimeoutMs: null, key: null, question: null, deadlineSeconds: null, traceparent: null });

describe("planAgent: a post while its group is busy", () => {
  it("interrupt: the running message is cancelled with the reason, its runner told, and the new one runs next", () => {
    const open = [running(1)];
    const plan = planAgent(snapshot(open, { ...DEFAULT_POLICY, onBusy: "interrupt" }), { type: "post", post: post("two"), lastId: 1, groupOpen: open, by });
    expect(plan.post).toMatchObject({ ok: true, insert: { id: 2, text: "two", first: true } });
    expect(plan.cancel).toBeNull();
    expect(plan.cancels).toMatchObject([{ verdict: { outcome: "cancelled", message: { id: 1, status: "cancelled" } }, reason: "interrupted by message 2", by, stop: { to: 0, id: 1, token: 11 } }]);
    expect(plan.handOuts).toMatchObject([{ lease: { id: 2, status: "running" } }]);
  });

  it("replace: the superseded ones are stored as such and only the new one runs", () => {
    const open = [msg(1), msg(2)];
    const plan = planAgent(snapshot(open, { ...DEFAULT_POLICY, onBusy: "replace" }), { type: "post", post: post("three"), lastId: 2, groupOpen: open, by });
    expect(plan.superseded).toEqual([{ lease: expect.objectContaining({ id: 1, status: "superseded" }), by: 3 }, { lease: expect.objectContaining({ id: 2, status: "superseded" }), by: 3 }]);
    expect(plan.handOuts.map((h) => h.lease.id)).toEqual([3]);
  });

  it("reject: nothing is stored, nothing is handed out, and presence is unchanged", () => {
    const open = [running(1)];
    const plan = planAgent(snapshot(open, { ...DEFAULT_POLICY, onBusy: "reject" }), { type: "post", post: post("two"), lastId: 1, groupOpen: open, by });
    expect(plan.post).toMatchObject({ ok: false, code: "busy", holder: 1 });
    expect([plan.changes, plan.copies, plan.presenceChanged]).toEqual([[], [], false]);
  });
});

describe("planDispatch with a message that interrupted its group", () => {
  it("the message marked first runs before older queued ones of its group, which stay queued", () => {
    const open = [msg(2, { group: "g" }), msg(3, { group: "g" }), msg(4, { group: "g", first: true })];
    const plan = planAgent(snapshot(open), { type: "work" });
    expect(plan.handOuts.map((h) => h.lease.id)).toEqual([4]);
  });
});
