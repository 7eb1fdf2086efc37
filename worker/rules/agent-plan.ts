// One event of an agent object, decided in one place. The object reads a snapshot (its lease, its
// live connections with their proven heartbeats, its controls, its open messages, its counters),
// passes it here with the event, and applies the plan it gets back: writes first, then frames.
// Nothing in here touches sockets, storage or the clock, and nothing calls back into the object.
//
//   frame / close / alarm / request ─▶ snapshot ─▶ planAgent ─▶ plan ─▶ apply (store, attach, send, alarm)
import { applyElection, holderCheckAt, isStale, nextStaleDeadline, type LeaseRecord, type Transition, type TransitionReason } from "./election.ts";
import { holdsLease } from "./fencing.ts";
import { expireDue, isOpen, lease as leaseMessage, nextMessageDeadline, planDispatch, takeBack, type MessageLease, type MessagePolicy } from "./message-lease.ts";
import { cancel, type CancelVerdict } from "./message-cancel.ts";
import { supersede } from "./on-busy.ts";
import { electPreferred, linePlace, nextPreferenceMoment, type PreferenceContext, type RankedCandidate } from "./preference.ts";

/** What the plan reads and writes of a serve connection (its attachment holds these and a cursor). */
export interface ServeConn {
  /** Claim sequence, fixed at the claim; null until the connection claims. */
  claimSeq: number | null;
  released: boolean;
  machine: string;
  joinedAt: number;
  lastSeen: number;
  toldHeld: boolean | null;
  toldFence: number | null;
  slots?: number;
  priority?: number;
  runnerId?: string;
  readySince?: number;
}

export interface ConnSnapshot {
  conn: ServeConn;
  /** Server time of its last proof of life (provenAlive over its frames and auto pings). */
  heartbeat: number;
}

export interface ControlsSnapshot {
  paused: boolean;
  drained: ReadonlySet<string>;
  hysteresisMs: number;
  /** After a restart: the runner the lease is kept for, while the grace lasts. */
  reserved: { runner: string; until: number } | null;
}

export interface AgentSnapshot {
  now: number;
  ttlMs: number;
  scanMs: number;
  lease: LeaseRecord;
  /** Live connections (one that is closing left out); the plan names them by index. */
  conns: readonly ConnSnapshot[];
  controls: ControlsSnapshot;
  work: {
    policy: MessagePolicy;
    /** The open messages a dispatch looks at, as lease records. */
    open: readonly MessageLease[];
    /** The earliest park deadline still ahead, of every parked message (most are not in `open`). */
    parkDeadline: number | null;
  };
  /** The last claim sequence and message token handed out; the plan hands out the next ones. */
  claimCounter: number;
  tokenCounter: number;
  /** Deadlines the object keeps for itself (directory confirmation, report retry). */
  ownDeadlines: readonly (number | null)[];
  /** The alarm this instance set; null when none or unknown (after a restart, in an alarm). */
  alarmAt: number | null;
}

export type AgentEvent =
  | { type: "start" }
  | { type: "closed" }
  | { type: "alarm" }
  /** Messages, the policy or the controls changed (a post, a write, a resume, pause, drain). */
  | { type: "work" }
  /** A frame from a connection already past its TTL (the staleness pass closes it). */
  | { type: "stale_frame" }
  | { type: "claim"; from: number; priority?: number; runnerId?: string; slots?: number }
  | { type: "release"; from: number }
  | { type: "hello"; from: number; machine?: string; slots?: number }
  /** A person (or a policy) cancels one message; `target` is its lease as stored, `by` and `reason` are recorded with it. */
  | { type: "cancel"; target: MessageLease; by: Canceller; reason: string | null }
  /**
   * A new message `newId` arrived while its group was busy (rules/on-busy.ts): the running ones in
   * `interrupt` are cancelled ("interrupted by message N"), the never-started ones in `supersede` end superseded.
   */
  | { type: "busy"; newId: number; by: Canceller; interrupt: readonly MessageLease[]; supersede: readonly MessageLease[] };

/** Who cancelled: the account, the name of its token, and from where (page, cli, http). */
export interface Canceller {
  account: string;
  token: string;
  via: string;
}

/** A cancel event's outcome, with who and why, and the connection to tell (null: nobody runs it here, or nothing was cancelled). */
export interface CancelPlan {
  verdict: CancelVerdict;
  by: Canceller;
  reason: string | null;
  stop: { to: number; id: number; token: number } | null;
}

export type RevokeReason = "run_timeout" | "runner_gone" | "heartbeat_timeout";

export interface Tell {
  to: number;
  held: boolean;
  fence: number;
  claimSeq: number;
  /** 0 for the holder, k for the k-th in line, -1 after a release. */
  position: number;
  holder: { claimSeq: number; machine: string; since: number } | null;
}

export interface TakeBack {
  /** The message as it must be stored now. */
  lease: MessageLease;
  /** Why the attempt ended, for the message's `error` (null: it did not fail). */
  error: string | null;
  /** The runner still connected that must stop it. */
  revoke: { to: number; token: number; reason: RevokeReason } | null;
  /** A parked message's deadline decided for the person (approve, reject) or asked again (escalate): recorded as such. */
  deadline?: "approve" | "reject" | "escalate";
}

export interface AgentPlan {
  lease: LeaseRecord;
  /** The lease record changed (a new holder, or the holder's machine relabelled): store it before telling anyone. */
  leaseChanged: boolean;
  transition: Transition | null;
  /** When the previous holder was lost (its deadline when it went silent), for the failover metric. */
  holderLostAt: number;
  /** With a transition: the runner id that now holds (null: none, or an anonymous runner). */
  holderRunner: string | null;
  claimCounter: number;
  tokenCounter: number;
  /** Attachment changes by connection index. */
  patches: Map<number, Partial<ServeConn>>;
  /** Connections to close for a heartbeat timeout. */
  close: number[];
  tells: Tell[];
  takeBacks: TakeBack[];
  handOuts: { lease: MessageLease; to: number }[];
  /** The answer to a release: whether the sender held the lease. */
  released: boolean | null;
  /** The answer to a cancel event (null for any other event). */
  cancel: CancelPlan | null;
  /** Every cancel this event makes: the cancel event's own, or a busy event's interrupts. */
  cancels: CancelPlan[];
  /** Queued messages a busy event replaced: stored superseded, with the message that replaced them. */
  superseded: { lease: MessageLease; by: number }[];
  alarm: { set: number } | "delete" | null;
  presenceChanged: boolean;
}

const EVENT_REASON: Record<AgentEvent["type"], TransitionReason> = {
  start: "closed", closed: "closed", alarm: "stale", stale_frame: "stale", work: "claimed", claim: "claimed", release: "released", hello: "claimed",
  cancel: "claimed", busy: "claimed",
};

const TAKEN_BACK: Record<RevokeReason, string> = {
  run_timeout: "its run timeout passed before the runner finished",
  runner_gone: "its runner left (disconnected, released the lease or went silent) before finishing",
  heartbeat_timeout: "its run sent no heartbeat within the heartbeat timeout",
};
const PARK_DEADLINE_PASSED = "its park deadline passed before anyone answered";

/** A message lease names its runner by the claim sequence of the connection it was handed to. */
export function runnerOf(conn: Pick<ServeConn, "claimSeq">): string {
  return String(conn.claimSeq);
}

function earliest(...times: (number | null)[]): number | null {
  const known = times.filter((t): t is number => t !== null);
  return known.length ? Math.min(...known) : null;
}

interface Ranked extends RankedCandidate {
  index: number;
  machine: string;
  heartbeat: number;
  runnerId: string | null;
}

export function planAgent(s: AgentSnapshot, e: AgentEvent): AgentPlan {
  const { now, ttlMs } = s;
  const patches = new Map<number, Partial<ServeConn>>();
  const view = (i: number): ServeConn => ({ ...s.conns[i]!.conn, ...patches.get(i) });
  const patch = (i: number, p: Partial<ServeConn>) => patches.set(i, { ...patches.get(i), ...p });
  let claimCounter = s.claimCounter;
  let lease = s.lease;
  let leaseChanged = false;
  let forceTell = false;
  let released: boolean | null = null;

  // The event's own change to its sender.
  if (e.type === "claim") {
    const c = view(e.from);
    if (c.claimSeq === null || c.released) {
      claimCounter += 1;
      patch(e.from, {
        claimSeq: claimCounter, released: false, readySince: now, toldHeld: null,
        ...(e.priority === undefined ? {} : { priority: e.priority }),
        ...(e.runnerId === undefined ? {} : { runnerId: e.runnerId }),
      });
    }
    // Saved even when the claim itself changes nothing (a re-claim with other slots).
    if (e.slots !== undefined && e.slots !== c.slots) patch(e.from, { slots: e.slots });
  } else if (e.type === "release") {
    released = holdsLease(view(e.from), lease);
    if (released) patch(e.from, { released: true });
  } else if (e.type === "hello") {
    const c = view(e.from);
    if (e.slots !== undefined && e.slots !== c.slots) patch(e.from, { slots: e.slots });
    if (e.machine && e.machine !== c.machine) {
      patch(e.from, { machine: e.machine });
      // A holder's new label reaches the lease and every claimant.
      if (holdsLease(c, lease)) {
        lease = { ...lease, holderMachine: e.machine };
        leaseChanged = true;
        forceTell = true;
      }
    }
  }

  // Silent connections are closed; a silent holder loses the lease at its own deadline.
  const close: number[] = [];
  const live: number[] = [];
  let holderWentStale = false;
  let holderLostAt = now;
  s.conns.forEach((c, i) => {
    if (!isStale({ lastHeartbeat: c.heartbeat }, now, ttlMs)) return void live.push(i);
    if (holdsLease(view(i), s.lease)) {
      holderWentStale = true;
      holderLostAt = c.heartbeat + ttlMs;
    }
    close.push(i);
  });
  // The holder's accepted auto ping is folded into its attachment, so its deadline moves on from
  // there and never from a ping that came too late (provenAlive).
  for (const i of live) {
    const c = view(i);
    if (holdsLease(c, s.lease) && s.conns[i]!.heartbeat > c.lastSeen) patch(i, { lastSeen: s.conns[i]!.heartbeat });
  }

  // Election among live, claiming connections, with the preference rules and the safe point.
  const candidates: Ranked[] = [];
  for (const i of live) {
    const c = view(i);
    if (c.claimSeq === null || c.released) continue;
    candidates.push({
      index: i, claimSeq: c.claimSeq, machine: c.machine, heartbeat: s.conns[i]!.heartbeat, runnerId: c.runnerId ?? null,
      // An anonymous runner (an older client) is never recognised after a restart.
      runner: c.runnerId ?? `claim:${c.claimSeq}`,
      priority: c.priority ?? 0,
      readySince: c.readySince ?? c.joinedAt,
      drained: s.controls.drained.has(c.machine),
    });
  }
  const open = new Map(s.work.open.map((m) => [m.id, m]));
  // A cancel ends its message before anything else looks at the work: its slot and group are free for this very dispatch.
  const cancelling: { target: MessageLease; by: Canceller; reason: string | null; verdict: CancelVerdict }[] = e.type === "cancel"
    ? [{ target: e.target, by: e.by, reason: e.reason, verdict: cancel(e.target) }]
    : e.type === "busy" ? e.interrupt.map((t) => ({ target: t, by: e.by, reason: `interrupted by message ${e.newId}`, verdict: cancel(t) })) : [];
  for (const c of cancelling) if (c.verdict.outcome === "cancelled") open.set(c.target.id, c.verdict.message);
  const superseded: AgentPlan["superseded"] = [];
  if (e.type === "busy") {
    for (const t of e.supersede) {
      const after = supersede(t);
      if (after === null) continue;
      superseded.push({ lease: after, by: e.newId });
      open.set(t.id, after);
    }
  }
  const runningOn = (claim: number | null) => claim !== null && [...open.values()].some((m) => m.status === "running" && m.runner === String(claim));
  const context = (holderClaim: number | null, holderBusy: boolean): PreferenceContext => ({
    holderClaim, holderBusy, paused: s.controls.paused, hysteresisMs: s.controls.hysteresisMs, reserved: s.controls.reserved, now,
  });
  const choice = electPreferred(candidates, context(lease.holderClaim, runningOn(lease.holderClaim)));
  const winner = choice.winner === null ? null : candidates.find((c) => c.claimSeq === choice.winner!.claimSeq)!;
  const why: TransitionReason = holderWentStale ? "stale" : choice.reason ?? (lease.holderClaim === null ? "claimed" : EVENT_REASON[e.type]);
  const elected = applyElection(lease, winner && { claimSeq: winner.claimSeq, machine: winner.machine, lastHeartbeat: winner.heartbeat }, now, why);
  lease = elected.lease;
  const transition = elected.transition;
  if (transition) leaseChanged = true;

  // Each claimant hears its own state only when it changed.
  const tells: Tell[] = [];
  for (const i of live) {
    const c = view(i);
    if (c.claimSeq === null) continue;
    const held = holdsLease(c, lease);
    if (!forceTell && c.toldHeld === held && (!held || c.toldFence === lease.fence)) continue;
    // A new holder's deadline runs from its latest proof as a standby, which the election found live.
    const lastSeen = held && c.toldHeld !== true ? Math.max(c.lastSeen, s.conns[i]!.heartbeat) : c.lastSeen;
    patch(i, { toldHeld: held, toldFence: lease.fence, lastSeen });
    tells.push({
      to: i, held, fence: lease.fence, claimSeq: c.claimSeq,
      position: c.released ? -1 : linePlace(candidates, c.claimSeq, lease.holderClaim),
      holder: lease.holderClaim === null ? null : { claimSeq: lease.holderClaim, machine: lease.holderMachine ?? "unknown", since: lease.since ?? 0 },
    });
  }

  // Messages: taken back from runners that may no longer run them or ran out of time, then handed out.
  const { policy } = s.work;
  const byRunner = new Map(live.filter((i) => view(i).claimSeq !== null).map((i) => [runnerOf(view(i)), i]));
  const eligible = live
    .map((i) => ({ i, c: view(i) }))
    .filter(({ c }) => c.claimSeq !== null && !c.released && (policy.mode === "pool" || c.claimSeq === lease.holderClaim))
    .sort((x, y) => x.c.claimSeq! - y.c.claimSeq!);
  const eligibleRunners = new Map(eligible.map(({ i, c }) => [runnerOf(c), i]));
  const cancels: CancelPlan[] = cancelling.map(({ target, by, reason, verdict }) => {
    const stopped = verdict.outcome === "cancelled" ? verdict.stop : null;
    const to = stopped === null ? undefined : byRunner.get(stopped.runner);
    return { verdict, by, reason, stop: to === undefined ? null : { to, id: target.id, token: stopped!.token } };
  });
  const takeBacks: TakeBack[] = [];
  const avoid = new Map<number, string>();
  const revokeFor = (m: MessageLease, reason: RevokeReason) => {
    const to = byRunner.get(m.runner ?? "");
    return to === undefined ? null : { to, token: m.token, reason };
  };
  for (const m of open.values()) {
    if (m.status !== "running" || eligibleRunners.has(m.runner ?? "")) continue;
    const after = takeBack(m, policy);
    takeBacks.push({ lease: after, error: TAKEN_BACK.runner_gone, revoke: revokeFor(m, "runner_gone") });
    open.set(m.id, after);
  }
  for (const next of expireDue([...open.values()], now, policy)) {
    const before = open.get(next.id)!;
    if (before.status === "running") {
      if (before.runner !== null) avoid.set(before.id, before.runner);
      // A deadline short of the run timeout's cap was a heartbeat deadline.
      const why: RevokeReason = policy.heartbeatTimeoutMs !== null && before.capAt !== null && before.expiresAt! < before.capAt ? "heartbeat_timeout" : "run_timeout";
      takeBacks.push({ lease: next, error: TAKEN_BACK[why], revoke: revokeFor(before, why) });
    } else {
      const by = before.onDeadline;
      // A deadline never settles an effect whose outcome is unknown: parkDeadline only dropped it.
      if (before.pendingAsk !== null && by !== "escalate") takeBacks.push({ lease: next, error: null, revoke: null });
      else if (by === "approve" || by === "reject" || by === "escalate") takeBacks.push({ lease: next, error: null, revoke: null, deadline: by });
      else takeBacks.push({ lease: next, error: PARK_DEADLINE_PASSED, revoke: null });
    }
    open.set(next.id, next);
  }
  // A holder that should hand on (a preferred runner is ready, or it is drained) takes nothing new, so it reaches its safe point.
  const handingOn = lease.holderClaim !== null && electPreferred(candidates, context(lease.holderClaim, false)).winner?.claimSeq !== lease.holderClaim;
  const running = new Map<string, number>();
  for (const m of open.values()) if (m.status === "running") running.set(m.runner!, (running.get(m.runner!) ?? 0) + 1);
  const accepts = (c: ServeConn) =>
    !s.controls.paused && !s.controls.drained.has(c.machine) && (c.claimSeq !== lease.holderClaim || !handingOn);
  const slots = eligible.map(({ c }) => ({ id: runnerOf(c), free: accepts(c) ? (c.slots ?? 1) - (running.get(runnerOf(c)) ?? 0) : 0 }));
  let tokenCounter = s.tokenCounter;
  const handOuts: AgentPlan["handOuts"] = [];
  for (const a of planDispatch([...open.values()].filter(isOpen), slots, policy, avoid, now)) {
    tokenCounter += 1;
    const leased = leaseMessage(open.get(a.id)!, a.runner, tokenCounter, now, policy);
    open.set(a.id, leased);
    handOuts.push({ lease: leased, to: eligibleRunners.get(a.runner)! });
  }

  // The next alarm: the earliest moment a connection can go stale (the holder looked at halfway,
  // see holderCheckAt; capped by the scan interval), a message deadline, the object's own
  // deadlines, or a preference move by the clock alone. An alarm already due earlier is left alone
  // (it re-plans when it runs), so a frame costs no alarm write; with nothing to watch, none is left.
  let stale = nextStaleDeadline(live.map((i) => ({ lastHeartbeat: s.conns[i]!.heartbeat })), ttlMs);
  const holder = live.find((i) => holdsLease(view(i), lease));
  if (holder !== undefined && stale !== null) stale = Math.min(stale, holderCheckAt(s.conns[holder]!.heartbeat, now, ttlMs));
  const scan = stale === null ? null : Math.min(stale, now + s.scanMs);
  const deadline = earliest(scan, nextMessageDeadline([...open.values()], now), s.work.parkDeadline, ...s.ownDeadlines);
  let alarm: AgentPlan["alarm"] = null;
  if (deadline === null) {
    if (s.alarmAt !== null) alarm = "delete";
  } else {
    const moment = nextPreferenceMoment(candidates, context(lease.holderClaim, false));
    const at = Math.max(now + 1, moment === null ? deadline : Math.min(deadline, moment));
    if (!(s.alarmAt !== null && s.alarmAt > now && s.alarmAt <= at)) alarm = { set: at };
  }

  // A scan that found everyone alive and moved nothing changed nothing anybody watches.
  const quiet = e.type === "alarm" || e.type === "stale_frame";
  const presenceChanged = !quiet || leaseChanged || close.length > 0 || takeBacks.length > 0 || handOuts.length > 0;

  return {
    lease, leaseChanged, transition, holderLostAt, holderRunner: winner?.runnerId ?? null, claimCounter, tokenCounter,
    patches, close, tells, takeBacks, handOuts, released, cancel: e.type === "cancel" ? cancels[0]! : null, cancels, superseded, alarm, presenceChanged,
  };
}
