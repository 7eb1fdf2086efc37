// What a handler sees: the message it runs, its context (signal, checkpoints, steps, effects, asks),
// and the events serving reports. Plain types; the run lifecycle that fills them is in run-context.ts.
import type { ClientFrame, ErrorCode, MessageFrame, OnUnknown } from "../../worker/wire/protocol.ts";
import type { OnDeadline, OutputStream } from "../../worker/wire/enums.ts";

export interface AgentMessage {
  id: number;
  text: string;
  /** 1 on first hand-out; more after a runner lost it (left, timed out) or after a resume. */
  attempt: number;
  /** When the message was posted (ms since the epoch, coordinator's clock). */
  createdAt: number;
  /** The message's own lease token (null from coordinators without per-message leases). */
  token: number | null;
  /** The input a person gave with `baton resume` (null when the message was not resumed). */
  resumeInput: string | null;
  group: string | null;
  /** Proves this hand-out over HTTP (a command's `baton step`, any language): see RunJournal. */
  runKey: string | null;
  /** With the agent's heartbeat timeout, a run that sends no heartbeat within it is taken back; null: none. */
  heartbeatTimeoutMs: number | null;
  /** The choice of the answer that resumed it (approve, or one its question offered); null when it was not answered. */
  resumeChoice: string | null;
  /** The W3C trace context its sender attached (null: none): the run's span continues that trace. */
  traceparent: string | null;
}

/** A person's answer to `ctx.ask`: the choice, the text they gave, and who answered (account, token name, from where), when. */
export interface PersonAnswer {
  choice: string;
  text: string | null;
  by: { account: string; token: string; via: string };
  at: number;
}

export interface AskOptions {
  /** What the person picks from (absent: approve or reject). Reject always ends the message as `rejected`. */
  choices?: string[];
  /** Nobody answered within this: the deadline decides, as `onDeadline` says (fail by default). */
  deadlineSeconds?: number;
  onDeadline?: OnDeadline;
  /**
   * The journal name the answer is kept under (default `ask:N`, N counting this run's asks). Only
   * the coordinator's answer path writes there: a name a step or effect of the run holds is refused.
   */
  name?: string;
  /** Stored with the park as the message's checkpoint. */
  checkpoint?: unknown;
  /** Approvals from this many distinct people (tokens) decide approve (default 1); no `choices` then. */
  needs?: number;
  /** Rejects from this many distinct people decide reject (default 1: any one reject ends it). */
  rejectNeeds?: number;
  /** Only these token names may answer. */
  approvers?: string[];
}

/**
 * An effect that needs a person's approval of exactly `args` (JSON): the coordinator records its
 * intent only on an unspent permit a person granted for this message, this effect's name and the
 * SHA-256 of `args` as canonical JSON. Without one it asks `question` (a person sees the effect,
 * `args` as canonical JSON and the digest), the message parks (with `checkpoint`), and once a
 * person approves, the next attempt spends the permit, once. Other arguments ask again; a permit
 * already spent (the effect ran on it, or an earlier attempt began it) asks again; reject ends
 * the message; another of `choices` makes the effect throw ApprovalDeniedError.
 */
export interface EffectApprovalOptions {
  question: string;
  args: unknown;
  /** Besides reject (always offered): absent, approve only; with choices, approve is one of them. */
  choices?: string[];
  /** Stored with the park as the message's checkpoint. */
  checkpoint?: unknown;
  /** Nobody answered within this: `onDeadline` decides (fail by default; never approve: a deadline grants no permit). */
  deadlineSeconds?: number;
  onDeadline?: "fail" | "reject" | "escalate";
  /** Several people: the permit is granted once this many distinct tokens approve (no `choices` then); default 1. */
  needs?: number;
  /** Only these tokens (by name) may answer. */
  approvers?: string[];
  /** This many distinct rejects end the message (default 1: any one reject). */
  rejectNeeds?: number;
}

export interface EffectOptions {
  onUnknown?: OnUnknown;
  approve?: EffectApprovalOptions;
}

export interface MessageContext {
  /** Aborted the moment this process may no longer act on the message (revoked, cancelled by a person, run timeout, lease lost, stop); its reason says which (a cancel's is a MessageCancelledError). */
  readonly signal: AbortSignal;
  /** The fence of the serve lease this process holds (-1 for a pool runner that is not the holder). */
  readonly fence: number;
  /** The message's own lease token when the coordinator leases messages one by one, else null. */
  readonly token: number | null;
  /** The agent's latest checkpoint, as handed to the serve leaseholder (null when none was saved). */
  readonly checkpoint: unknown;
  /** This message's own checkpoint from an earlier attempt (null when none was saved). */
  readonly messageCheckpoint: unknown;
  /**
   * Stores the agent's checkpoint under the serve fence (the holder's) and resolves once the
   * coordinator accepted it. Rejects with LeaseLostError when the lease is gone (and aborts `signal`).
   */
  saveCheckpoint(value: unknown): Promise<void>;
  /** Stores this message's checkpoint under its token: the next runner of this message gets it. */
  saveMessageCheckpoint(value: unknown): Promise<void>;
  /**
   * Gives the message's lease up until someone resumes it (`baton resume`), storing `checkpoint`
   * with it; after `deadlineSeconds` without a resume it fails. Nothing is replied for this run.
   */
  park(options?: { checkpoint?: unknown; deadlineSeconds?: number }): Promise<void>;
  /**
   * A durable step: the first time `name` completes for this message, its result (JSON) is stored
   * under the message's token; on every later attempt, here or on another machine, `step` returns
   * the stored result without calling `fn`. Run the handler from the top on each attempt: recorded
   * steps return at once, so an expensive call is paid once. A step whose `fn` throws records
   * nothing. Rejects with LeaseLostError when the message's lease is gone.
   */
  step<T>(name: string, fn: () => Promise<T> | T): Promise<T>;
  /**
   * A side effect: records its intent before `fn` runs and its outcome after, and hands `fn` the key
   * the coordinator makes for it, the same on every attempt and different in every account
   * (`baton:<account tag>:<agent>:<message id>:<name>`), to pass to the external API as its
   * idempotency key. `fn` may not `ask` (refused: the question could never be answered). An outcome already recorded is returned without running `fn`. If an earlier
   * attempt recorded the intent but no outcome (it died, or `fn` threw), nobody knows whether the
   * effect happened: `onUnknown: "retry"` runs it again under the same key (for APIs that honour
   * it); `"ask"` (the default) parks the message as "outcome unknown: step NAME" until a person
   * answers `baton resume AGENT ID --done` or `--redo`. An effect is never run twice silently.
   * With `approve`, `fn` runs only on a person's approval of exactly these arguments, spent once
   * (EffectApprovalOptions).
   */
  effect<T>(name: string, fn: (effect: { key: string; signal: AbortSignal }) => Promise<T> | T, options?: EffectOptions): Promise<T>;
  /**
   * Tells the coordinator the run is alive: with the agent's heartbeat timeout, its deadline moves
   * that far from now (never past the run timeout); `details` are kept as its progress. Resolves
   * with the run's deadline (server ms).
   */
  heartbeat(details?: unknown): Promise<number | null>;
  /**
   * Asks a person: parks the message with the question and ends this run (by throwing
   * WaitingForPersonError, which the loop treats as parked, not failed). When someone answers
   * (dashboard, `baton approve|reject|answer`, HTTP), the handler runs again from the top and
   * `ask` returns the answer at once (only a record the answer path wrote, of kind `answer`). A
   * rejected message never runs again. Not inside an effect's `fn`: refused, as no answer could reach it.
   */
  ask(question: string, options?: AskOptions): Promise<PersonAnswer>;
  /**
   * Streams `data` (text, or bytes that need not be UTF-8) to the message's live output, which any
   * reader follows (`baton logs`, `baton send --wait`, GET …/output) while the run goes on. Batched
   * (a frame every 50 ms or 32 KiB) and paced with the run's other writes; sent under the message's
   * token, so after a takeover nothing more of this attempt's output is stored. Everything written
   * is sent before the run's reply, failure or park. Resolves at once, unless about 1 MiB waits to
   * be sent: then once it drained (await it to hold a fast producer back). `stream` marks it
   * (default "text"; a served command's are "stdout" and "stderr").
   */
  output(data: string | Uint8Array, stream?: OutputStream): Promise<void>;
}

/**
 * Returns the reply text (empty when nothing is returned). Throwing fails the attempt: the
 * coordinator is told why (the error's message) and runs the message again after a backoff, until
 * the agent's max_attempts, after which it is `failed` with that reason.
 */
export type MessageHandler = (message: AgentMessage, ctx: MessageContext) => Promise<string | void> | string | void;

export type ServeEvent =
  | { type: "ran"; id: number; attempt: number; fence: number; token: number | null }
  | { type: "parked"; id: number; token: number }
  | { type: "revoked"; id: number; token: number; reason: string }
  | { type: "cancelled"; id: number; token: number; by: string; reason: string | null }
  | { type: "handler_failed"; id: number; error: unknown }
  | { type: "refused"; frame: ClientFrame["type"]; code: ErrorCode; message: string }
  | { type: "unconfirmed"; frame: ClientFrame["type"]; reason: string }
  | { type: "coordinator_error"; code: ErrorCode; message: string }
  | { type: "released" };

/** The message a handler gets, from its frame; the run key only for the run itself (journals must not store it). */
export function agentMessage(frame: MessageFrame, withRunKey: boolean): AgentMessage {
  return {
    id: frame.id, text: frame.text, attempt: frame.attempt, createdAt: frame.created_at,
    token: frame.token ?? null, resumeInput: frame.resume_input ?? null, group: frame.group ?? null,
    runKey: withRunKey ? (frame.run_key ?? null) : null, heartbeatTimeoutMs: frame.heartbeat_timeout_ms ?? null,
    resumeChoice: frame.resume_choice ?? null, traceparent: frame.traceparent ?? null,
  };
}
