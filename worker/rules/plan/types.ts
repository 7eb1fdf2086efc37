// The plain data one event of an agent object is planned over (the snapshot), the events, and the
// plan they produce; the phases in this folder and ../agent-plan.ts share them.
import type { LeaseRecord, Transition } from "../election.ts";
import type { MessageLease, MessagePolicy } from "../message-lease.ts";
import type { CancelVerdict } from "../message-cancel.ts";

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


/** A message lease names its runner by the claim sequence of the connection it was handed to. */
export function runnerOf(conn: Pick<ServeConn, "claimSeq">): string {
  return String(conn.claimSeq);
}

/** Attachment changes by connection index, as each phase returns them. */
export type ConnPatches = Map<number, Partial<ServeConn>>;

/** `into` with `more` laid over it, connection by connection. */
export function mergePatches(into: ConnPatches, more: ConnPatches): void {
  for (const [i, p] of more) into.set(i, { ...into.get(i), ...p });
}
