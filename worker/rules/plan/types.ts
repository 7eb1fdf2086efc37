// The plain data one event of an agent object is planned over (the snapshot), the events, and the
// plan they produce; the phases in this folder and ../agent-plan.ts share them.
import type { Vote } from "../quorum.ts";
import type { Permit } from "../permits.ts";
import type { LeaseRecord, Transition } from "../election.ts";
import type { Answer, MessageLease, MessagePolicy, MessageStatus } from "../message-lease.ts";
import type { CancelVerdict } from "../message-cancel.ts";
import type { BlobRef, JournalUsage, StepRecord, UnknownOutcome } from "../step-journal.ts";
import type { Outage } from "../webhooks.ts";
import type { PersonRefusal, TargetMessage } from "./person.ts";
import type { NewPost, PostPlan } from "./post.ts";
import type { ControlPlan, ControlRoute } from "./controls.ts";
import type { KeptQuestion } from "./kept-question.ts";
import type { WriteInput, WriteVerdict } from "./write-event.ts";
import type { ServerFrame } from "../../wire/server-frames.ts";
import type { OutputAppend } from "./output.ts";
import type { AttemptEndReason } from "../../wire/output.ts";
import type { ErrorCode } from "../../wire/error-codes.ts";
import type { ReplyEvent } from "./reply.ts";

/**
 * A connection's id (objects/connections.ts), kept in its attachment: the same in every snapshot
 * and after hibernation. Events name their sender and effects their addressee by it; inside one
 * plan, the phases name connections by their position in the snapshot's `conns`.
 */
export type ConnId = string;

/** What the plan reads and writes of a serve connection (its attachment). */
export interface ServeConn {
  readonly id: ConnId;
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
  /** The newest message id the connection has been shown (a post's copy, a hand-out, history). */
  cursor?: number;
  /** The runner said it is stopping (hello `stopping`): it is handed nothing new. */
  stopping?: boolean;
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
  /** The machine of the stored reservation, in force or not (a drain of it ends the reservation). */
  reservedMachine?: string | null;
}

export interface AgentSnapshot {
  now: number;
  ttlMs: number;
  scanMs: number;
  lease: LeaseRecord;
  /** Live connections (one that is closing left out); the phases name them by position here, events and effects by id. */
  conns: readonly ConnSnapshot[];
  controls: ControlsSnapshot;
  work: {
    policy: MessagePolicy;
    /** The open messages a dispatch looks at, as lease records. */
    open: readonly MessageLease[];
    /** The earliest park deadline still ahead, of every parked message (most are not in `open`). */
    parkDeadline: number | null;
    /** Parked messages in `open` whose passed deadline answers for a person (approve, reject), as a person's input reads them. */
    due: ReadonlyMap<number, TargetMessage>;
    /** How much one message's journal may hold. */
    journalBudget: JournalUsage;
  };
  /** What the webhook outbox needs woken for (agent-webhooks.ts), so this plan's alarm covers the events and outage it makes. */
  webhooks: {
    dueAt: number | null;
    /** An event made now may start at once (it is kept and a delivery slot is free). */
    sendsNow: boolean;
    /** An event made now is kept: a webhook may receive it (false: none of the agent's and, as last fetched, none of the account's). */
    keeps: boolean;
    outage: Outage;
    noHolderAfterMs: number | null;
    /** The tasks with A2A push targets (objects/a2a-push.ts), and whether a push made now may start at once. */
    push?: { tasks: ReadonlySet<number>; sendsNow: boolean };
  };
  /** The last claim sequence and message token handed out; the plan hands out the next ones. */
  claimCounter: number;
  tokenCounter: number;
  /** Deadlines the object keeps for itself (directory confirmation, report retry). */
  ownDeadlines: readonly (number | null)[];
  /** The alarm this instance set; null when none or unknown (after a restart, in an alarm). */
  alarmAt: number | null;
  /** Fresh run keys drawn by the object for this event, at least one per slot a hand-out could fill; the plan gives them out in order. */
  runKeys: readonly string[];
}

export type AgentEvent =
  | { type: "start" }
  | { type: "closed" }
  | { type: "alarm" }
  /** Messages changed outside a plan (a run's expiry seen over HTTP, a webhook configured). */
  | { type: "work" }
  /** Pause, unpause, drain or undrain (./controls.ts), `body` as the Worker read it. */
  | { type: "control"; route: ControlRoute; body: unknown }
  /** The agent's message policy, updated. */
  | { type: "policy"; update: Partial<MessagePolicy> }
  /**
   * A post (./post.ts): `lastId` the last message id handed out, `groupOpen` what of its group its
   * on_busy policy decides on, the whole group (rules/on-busy.ts busyRead; null: it acts on nothing).
   */
  | { type: "post"; post: NewPost; lastId: number; groupOpen: readonly MessageLease[] | null; by: Canceller }
  /**
   * A runner's write (a frame from connection `from`, or HTTP with its run key: `from` null), as it
   * came, with the rows it touches (./write-event.ts): the plan decides it at its token, or the
   * serve fence for the holder's own checkpoint.
   */
  | { type: "write"; from: ConnId | null; write: WriteInput }
  /** A person's input about message `id` (`target`: it as stored, null when there is none). */
  | { type: "answer"; id: number; target: TargetMessage | null; reply: Answer; by: Canceller }
  | { type: "resume"; id: number; target: TargetMessage | null; input: string | null; outcome: UnknownOutcome | null; by: Canceller }
  | { type: "retry"; id: number; target: TargetMessage | null; by: Canceller }
  /** A frame from a connection already past its TTL: told so, and the staleness pass closes it. */
  | { type: "stale_frame"; from: ConnId }
  /** A serve connection accepted: welcomed (`agent`: the name it serves), then planned as `work`. */
  | { type: "opened"; from: ConnId; agent: string }
  | { type: "claim"; from: ConnId; priority?: number; runnerId?: string; slots?: number }
  /** A release frame (`req`: its request id, answered among the replies). */
  | { type: "release"; from: ConnId; req?: string }
  | { type: "hello"; from: ConnId; machine?: string; slots?: number; stopping?: true }
  /**
   * A page of history after `after` (the replay budget already taken): `known` the newest id the
   * connection says it has seen (at most the last id), `last` the page's last id, `count` its messages.
   */
  | { type: "sync"; from: ConnId; after: number; req?: string; known: number; last: number; count: number; more: boolean }
  /** A person (or a policy) cancels one message; `target` is its lease as stored, `by` and `reason` are recorded with it. */
  | { type: "cancel"; target: MessageLease; by: Canceller; reason: string | null }
  /** A frame answered by one frame and nothing else: a ping, or a refusal before it is read (./reply.ts). */
  | ReplyEvent;

export type { MessageChange } from "./message-change.ts";
import type { Effect } from "./effects.ts";
import type { MessageChange } from "./message-change.ts";

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
  /** Every message write of this event, in order; each one's status before and after names its webhook event. */
  changes: MessageChange[];
  /** A control's verdict and what it stores (null for any other event). */
  control: ControlPlan | null;
  /** The message policy to store (null: unchanged). */
  policy: MessagePolicy | null;
  /** Why a policy update was refused (null: it was not, or no update was asked). */
  policyRefusal: string | null;
  /** A post's row, inserted before every other write (null for any other event), or its on_busy refusal. */
  post: PostPlan | null;
  /** The answer to a person's input (answer, resume, retry): done, or why not; null for any other event. */
  person: { ok: true } | PersonRefusal | null;
  /** A page of history replayed to the sender `to` (copies with no token), then its result. */
  replay: { to: ConnId; after: number; last: number; count: number; more: boolean; req?: string } | null;
  /** The agent's own checkpoint to store, before any holder is told it (null: none). */
  agentCheckpoint: { value: unknown; fence: number } | null;
  /** A write the token check (or the serve fence) refused, counted for /metrics (null: none). */
  refused: ErrorCode | null;
  /** A runner's write decided: its answer (read by the HTTP call that made it), its change, its refusal (null for any other event). */
  write: WriteVerdict | null;
  /** Frames answering the event's sender (by its id), sent before any other frame of the event. */
  replies: { to: ConnId; frame: ServerFrame }[];
  /** Frames answering the sender after every other frame of the event (a release's answer, after the lease news). */
  lastReplies: { to: ConnId; frame: ServerFrame }[];
  /** A posted message shown to connections that do not run it (no token). */
  copies: { to: number; id: number }[];
  alarm: { set: number } | "delete" | null;
  presenceChanged: boolean;
  /** Everything above that apply does, as one ordered list (./effects.ts): apply runs it in order and nothing else. */
  effects: Effect[];
}


/** A message lease names its runner by the claim sequence of the connection it was handed to. */
export function runnerOf(conn: Pick<ServeConn, "claimSeq">): string {
  return String(conn.claimSeq);
}

/** The position in `conns` of the connection named `id` (-1: it is not live, or there is no sender). */
export function positionOf(conns: readonly Pick<ServeConn, "id">[], id: ConnId | null): number {
  return id === null ? -1 : conns.findIndex((c) => c.id === id);
}

/** Attachment changes by connection index, as each phase returns them. */
export type ConnPatches = Map<number, Partial<ServeConn>>;

/** `into` with `more` laid over it, connection by connection. */
export function mergePatches(into: ConnPatches, more: ConnPatches): void {
  for (const [i, p] of more) into.set(i, { ...into.get(i), ...p });
}
