// The stored message row, described once: its columns (which give its type and its codec) and its
// projections, the lease the rules decide over, the view HTTP shows and the frame a serve
// connection gets. The table's DDL is in its numbered migrations (message-store.ts).
import type { MessageLease, MessagePolicy } from "../rules/message-lease.ts";
import type { MessageView, QuestionQuorum } from "../wire/http-responses.ts";
import { countsPeople, latestVotes, questionOutcome, quorumOf, type Quorum } from "../rules/quorum.ts";
import type { MessageFrame } from "../wire/protocol.ts";
import { integer, maybeInteger, maybeOneOf, maybeText, oneOf, RowCodec, text, type RowOf } from "./sql-row.ts";
import type { StepSummary } from "./step-store.ts";
import { MESSAGE_STATUSES, ON_DEADLINE } from "../wire/enums.ts";
import { cancelJson, checkpointJson, progressJson, questionJson, type CancelRecord, type StoredQuestion } from "../rules/message-json.ts";
import type { StoredJson } from "../rules/stored-json.ts";
import { readOr } from "./stored-read.ts";

const MESSAGE_ROW = {
  id: integer(),
  text: text(),
  created_at: integer(),
  status: oneOf(MESSAGE_STATUSES),
  attempts: integer(),
  delivered_fence: maybeInteger(),
  acked_at: maybeInteger(),
  acked_fence: maybeInteger(),
  reply: maybeText(),
  /** The message's lease token (0 before its first hand-out) and the claim sequence running it. */
  token: integer(),
  runner: maybeText(),
  /** Run deadline while running, park deadline while parked (server ms). */
  expires_at: maybeInteger(),
  msg_group: maybeText(),
  run_timeout_ms: maybeInteger(),
  resume_input: maybeText(),
  /** The message's own checkpoint (JSON text) and the token it was written under. */
  checkpoint: maybeText(),
  checkpoint_token: maybeInteger(),
  acked_token: maybeInteger(),
  /** A queued message is not handed out before this (the backoff after a failed attempt). */
  retry_at: maybeInteger(),
  /** Why the latest attempt failed or was taken back; null while none did. */
  error: maybeText(),
  /** Attempts that ended in failure (a `fail` write or being taken back). */
  failures: integer(),
  /** The connection (claim sequence) whose write acknowledged the message. */
  acked_runner: maybeText(),
  /** The machine label of the runner it was last handed to. */
  machine: maybeText(),
  /** While running: the run timeout's hard cap, which heartbeats never pass. */
  cap_at: maybeInteger(),
  /** An effect of the running attempt with an intent and no outcome, whose policy is to ask. */
  pending_ask: maybeText(),
  /** The latest heartbeat's details (JSON text) and when it arrived: the run's progress. */
  progress: maybeText(),
  heartbeat_at: maybeInteger(),
  /** A secret per hand-out, given only to its runner: HTTP writes for the run carry it instead of a connection. */
  run_key: maybeText(),
  /** A checkpoint or reply too large to keep inline: the committed R2 blob holding it, and its size. */
  checkpoint_blob: maybeText(),
  checkpoint_blob_bytes: maybeInteger(),
  reply_blob: maybeText(),
  reply_blob_bytes: maybeInteger(),
  /** While parked: what a person is asked (JSON of StoredQuestion), what its deadline does, and how long each wait is. */
  question: maybeText(),
  on_deadline: maybeOneOf(ON_DEADLINE),
  park_ms: maybeInteger(),
  /** The choice of the answer that queued the message again (approve, or one the question offered). */
  resume_choice: maybeText(),
  /** 1: a question for a person and nothing else, parked from the start and never run (rules/message-lease.ts forPerson). */
  for_person: integer(),
  /** Once cancelled: who, from where, when and why (JSON of CancelRecord). */
  cancel: maybeText(),
  /** Once superseded (on_busy replace): the newer message of its group that took its place. */
  superseded_by: maybeInteger(),
  /** 1: runs before older queued messages of its group (it interrupted the group, on_busy interrupt). */
  run_first: maybeInteger(),
  /** The W3C traceparent the post carried (null: none). */
  traceparent: maybeText(),
  /** Held by an on_busy replace debounce: when the first message of its burst was posted (the ceiling counts from it). */
  held_since: maybeInteger(),
  /** Of the hand-outs since the latest retry, those a stopping runner gave back unstarted: not counted against max attempts. */
  declined: integer(),
  /** Hand-outs before a person's latest retry (0: never retried): attempts less these and declined count against max attempts. */
  retried_after: integer(),
};

export type StoredMessage = RowOf<typeof MESSAGE_ROW>;

export const messageRow = new RowCodec<StoredMessage>("messages", MESSAGE_ROW);

/** The columns a message's lease is made of (leaseOf), and what a write for a running message is checked against (RunRow). */
export const LEASE_FIELDS = [
  "id", "status", "attempts", "token", "runner", "expires_at", "msg_group", "run_timeout_ms", "retry_at", "cap_at", "pending_ask", "on_deadline", "park_ms",
  "for_person", "run_first", "held_since", "declined", "retried_after",
] as const satisfies readonly (keyof StoredMessage)[];
export const RUN_FIELDS = [...LEASE_FIELDS, "run_key"] as const;

export type LeaseRow = Pick<StoredMessage, (typeof LEASE_FIELDS)[number]>;
export type RunRow = Pick<StoredMessage, (typeof RUN_FIELDS)[number]>;

/** One answer to a parked message, kept with it: who, from where, when, and what. */
export interface AnswerRecord {
  at: number;
  choice: string;
  text: string | null;
  question: string | null;
  account: string;
  token: string;
  via: string;
}

/** The message's stored question; with `token`, only one the attempt of that token asked. */
export function questionOf(m: Pick<StoredMessage, "question" | "id">, token?: number): StoredQuestion | null {
  if (m.question === null) return null;
  const q = readOr(questionJson, m.question, null, `message ${m.id} read as asking nothing`);
  return q !== null && (token === undefined || q.token === token) ? q : null;
}

/** Who cancelled the message (null: not cancelled, or its record is corrupt). */
export function cancelOf(m: Pick<StoredMessage, "cancel" | "id">): CancelRecord | null {
  return m.cancel === null ? null : readOr(cancelJson, m.cancel, null, `message ${m.id} shows no canceller`);
}

const storedValue = (json: StoredJson<unknown>, text: string | null, id: number): unknown =>
  text === null ? null : readOr(json, text, null, `message ${id} shows none`);

export function leaseOf(m: LeaseRow): MessageLease {
  return {
    id: m.id, status: m.status, attempts: m.attempts, token: m.token, runner: m.runner, expiresAt: m.expires_at,
    group: m.msg_group, runTimeoutMs: m.run_timeout_ms, retryAt: m.retry_at, capAt: m.cap_at, pendingAsk: m.pending_ask,
    onDeadline: m.on_deadline, parkMs: m.park_ms, forPerson: m.for_person === 1, ...(m.run_first === 1 ? { first: true } : {}),
    ...(m.held_since === null ? {} : { heldSince: m.held_since }), ...(m.declined > 0 ? { declined: m.declined } : {}),
    ...(m.retried_after > 0 ? { retriedAfter: m.retried_after } : {}),
  };
}

/** One message as HTTP shows it, with its steps (without their values) and its answers. */
export function messageView(m: StoredMessage, steps: StepSummary[], answers: AnswerRecord[]): MessageView {
  return {
    id: m.id,
    text: m.text,
    status: m.status,
    attempts: m.attempts,
    declined: m.declined,
    retried_after: m.retried_after,
    created_at: m.created_at,
    acked_at: m.acked_at,
    acked_fence: m.acked_fence,
    reply: m.reply,
    reply_blob: m.reply_blob === null ? null : { id: m.reply_blob, bytes: m.reply_blob_bytes ?? 0 },
    token: m.token,
    acked_token: m.acked_token,
    group: m.msg_group,
    run_timeout_seconds: m.run_timeout_ms === null ? null : m.run_timeout_ms / 1000,
    /** Why the latest attempt failed or was taken back (null while none did), how many did, and when a failed one is tried again. */
    error: m.error,
    failures: m.failures,
    retry_at: m.retry_at,
    /** Run deadline while running, park deadline while parked (server ms). */
    expires_at: m.expires_at,
    claim_seq: m.runner === null ? null : Number(m.runner),
    /** The machine of the runner it was last handed to (it runs, or ran, there). */
    machine: m.machine,
    checkpoint: storedValue(checkpointJson, m.checkpoint, m.id),
    checkpoint_blob: m.checkpoint_blob === null ? null : { id: m.checkpoint_blob, bytes: m.checkpoint_blob_bytes ?? 0 },
    resume_input: m.resume_input,
    steps,
    waiting_on: m.status === "parked" ? m.pending_ask : null,
    question: questionView(m),
    answers,
    resume_choice: m.resume_choice,
    for_person: m.for_person === 1,
    heartbeat_at: m.heartbeat_at,
    progress: storedValue(progressJson, m.progress, m.id),
    superseded_by: m.superseded_by,
    cancelled: cancelView(m, steps),
  };
}

/** While parked for a person (not for an unknown outcome): the question, or approve/reject when the run asked none. */
function questionView(m: StoredMessage): MessageView["question"] {
  if (m.status !== "parked" || m.pending_ask !== null) return null;
  const asked = questionOf(m);
  const quorum = asked === null ? null : quorumOf(asked);
  return {
    text: asked?.text ?? null, choices: asked?.choices ?? [], deadline: m.expires_at, on_deadline: m.on_deadline ?? "fail", asked_at: asked?.asked_at ?? null,
    ...(asked?.approve ? { approve: asked.approve } : {}),
    ...(quorum !== null && countsPeople(quorum) ? { quorum: quorumView(quorum) } : {}),
  };
}

/** Who has answered a question several people decide, and who has not. */
function quorumView(q: Quorum): QuestionQuorum {
  const outcome = questionOutcome(q);
  const answered = latestVotes(q.votes);
  const approvals = answered.filter((v) => v.choice === "approve").length;
  const rejections = answered.filter((v) => v.choice === "reject").length;
  return {
    needs: q.needs, reject_needs: q.rejectNeeds, approvals, rejections, approvers: q.approvers === null ? null : [...q.approvers],
    waiting_for: outcome.state === "pending" ? outcome.waitingFor : [], answered,
  };
}

/** Who cancelled, and the effects left with an unknown outcome (an intent without an outcome: nobody knows whether they happened). */
function cancelView(m: StoredMessage, steps: StepSummary[]): MessageView["cancelled"] {
  const record = m.status === "cancelled" ? cancelOf(m) : null;
  if (record === null) return null;
  return { ...record, unknown_effects: steps.filter((s) => s.kind === "effect" && s.status === "intent").map((s) => s.name) };
}

/**
 * The frame for one message; a run copy carries what its runner needs: token, timeouts, run key,
 * checkpoint and resume input (its step journal is spliced in as text by run-copy.ts).
 */
export function messageFrame(m: StoredMessage, run: boolean, policy: MessagePolicy): MessageFrame {
  const frame: MessageFrame = { type: "message", id: m.id, text: m.text, attempt: m.attempts, created_at: m.created_at, run };
  if (!run) return frame;
  return {
    ...frame,
    token: m.token,
    run_timeout_ms: m.run_timeout_ms ?? policy.runTimeoutMs,
    group: m.msg_group,
    resume_input: m.resume_input,
    resume_choice: m.resume_choice,
    ...(m.checkpoint === null ? {} : { checkpoint: storedValue(checkpointJson, m.checkpoint, m.id) }),
    ...(m.checkpoint_blob === null ? {} : { checkpoint_blob: { id: m.checkpoint_blob, bytes: m.checkpoint_blob_bytes ?? 0 } }),
    ...(m.traceparent === null ? {} : { traceparent: m.traceparent }),
    ...(policy.heartbeatTimeoutMs === null ? {} : { heartbeat_timeout_ms: policy.heartbeatTimeoutMs }),
    ...(m.run_key === null ? {} : { run_key: m.run_key }),
  };
}
