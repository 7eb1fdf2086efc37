// What a runner's writes for a message look like from outside the object: who writes (a connection
// or a run key over HTTP) and the answers and refusals (decided in ../rules/plan/run-write.ts).
import { LIMITS, type ClientFrame } from "../wire/protocol.ts";
import type { ConnState } from "./connections.ts";
import type { AnswerRecord } from "./message-row.ts";

export interface DeskSocket {
  ws: WebSocket;
  state: ConnState;
}

/** A write made under a message's token: reply, ack, message checkpoint, fail, park, step or heartbeat. */
export type TokenWrite = Extract<ClientFrame, { type: "ack" | "reply" | "message_checkpoint" | "decline" | "fail" | "park" | "step" | "heartbeat" }>;

/** Who makes a write for a running message: a connection (by its runner id) or an HTTP caller with the run's key. */
export type Writer = { runner: string } | { runKey: string };

export { REFUSAL_STATUS, type BlobReserve, type HeartbeatAnswer, type Refusal, type StepAnswer } from "../rules/plan/run-write.ts";

/** How much one message's journal may hold. */
export const JOURNAL_BUDGET = { steps: LIMITS.stepsPerMessage, bytes: LIMITS.journalBytes };

/** Who answers a parked message: the account, the name of its token, and from where (page, cli, http). */
export type Answerer = Pick<AnswerRecord, "account" | "token" | "via">;
