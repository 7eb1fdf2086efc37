// What a runner's writes for a message look like from outside the object: who writes (a connection
// or a run key over HTTP), the answers and refusals (with the HTTP status each answers with), and
// which refusals are the token check's, which /metrics counts.
import type { MessageChange } from "../rules/agent-plan.ts";
import type { WriteDecision } from "../rules/plan/write.ts";
import { LIMITS, type ClientFrame, type ErrorCode } from "../wire/protocol.ts";
import type { ConnState } from "./connections.ts";
import type { AnswerRecord } from "./message-row.ts";

export interface DeskSocket {
  ws: WebSocket;
  state: ConnState;
}

/** A write made under a message's token: reply, ack, message checkpoint, fail, park, step or heartbeat. */
export type TokenWrite = Extract<ClientFrame, { type: "ack" | "reply" | "message_checkpoint" | "fail" | "park" | "step" | "heartbeat" }>;

/** Who makes a write for a running message: a connection (by its runner id) or an HTTP caller with the run's key. */
export type Writer = { runner: string } | { runKey: string };

/** A refused write, with the HTTP status it answers with; `expired`: the run deadline had passed, so the object plans again. */
export interface Refusal {
  ok: false;
  status: 400 | 403 | 404 | 409 | 413;
  code: ErrorCode;
  message: string;
  expired: boolean;
}

export type StepAnswer =
  | {
    ok: true; id: number; token: number; name: string; status: "intent" | "done"; duplicate: boolean; value: unknown; blob: { id: string; bytes: number } | null;
    idempotency_key?: string;
  }
  | Refusal;
export type BlobReserve = { ok: true; blob: string; r2Key: string; token: number } | Refusal;
export type HeartbeatAnswer = { ok: true; id: number; token: number; expires_at: number | null } | Refusal;

export const REFUSAL_STATUS: Partial<Record<ErrorCode, Refusal["status"]>> = {
  unknown_message: 404, not_your_message: 403, stale_token: 409, message_not_running: 409, cancelled: 409, too_large: 413, bad_request: 400, effect_in_progress: 409,
};

/** How much one message's journal may hold. */
export const JOURNAL_BUDGET = { steps: LIMITS.stepsPerMessage, bytes: LIMITS.journalBytes };

/** A runner's write as checked at its token: its answer, what it moves for the plan, and a refusal of the token check (for /metrics). */
export type WriteOutcome = WriteDecision;

/** A run's journal write (step, heartbeat) decided: its answer, and the change the plan stores (null: nothing to store). */
export interface Journaled<T> {
  answer: T;
  change: MessageChange | null;
}

/** The refusals of the token check, which /metrics counts. */
const TOKEN_REFUSALS: ReadonlySet<ErrorCode> = new Set(["stale_token", "not_your_message", "message_not_running", "cancelled"]);

/** `code` when the token check refused the write, else null. */
export function refusedAtToken(code: ErrorCode): ErrorCode | null {
  return TOKEN_REFUSALS.has(code) ? code : null;
}

/** Who answers a parked message: the account, the name of its token, and from where (page, cli, http). */
export type Answerer = Pick<AnswerRecord, "account" | "token" | "via">;
