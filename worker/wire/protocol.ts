// The wire: every frame that crosses a baton WebSocket, the HTTP bodies, the limits and the
// error codes. Worker and CLI both import this module, so the two sides cannot disagree. Each part
// lives in its own file (limits, fields, questions, client-frames, server-frames, http-bodies);
// this one gathers them and answers errors.
import type { ErrorCode } from "./error-codes.ts";
import type { ServerFrame } from "./server-frames.ts";

export {
  AGENT_NAME, BLOB_ID, LIMITS, MACHINE_LABEL, RUN_ID, RUNNER_ID, SESSION_NAME, STEP_NAME, TRACEPARENT, utf8Bytes,
} from "./limits.ts";
export { approvalRefusal, effectApprovalSchema, questionSchema, type EffectApproval, type Question } from "./questions.ts";
export {
  CLIENT_FRAME_TYPES, checkpointTooLarge, clientFrameSchema, jsonTooDeep, parseClientFrame, type ClientFrame, type Parsed,
} from "./client-frames.ts";
export {
  acquireSchema, answerSchema, approveSchema, askSchema, CANCEL_REASON_CHARS, cancelSchema, checkSchema, drainSchema, heartbeatSchema,
  parseBody, policySchema, postMessageSchema, releaseSchema, renewSchema, resumeSchema, stepWriteSchema,
} from "./http-bodies.ts";

export const PING_TEXT = '{"type":"ping"}';
export const PONG_TEXT = '{"type":"pong"}';

export { CLOSE_CODES, ERROR_CODES, type ErrorCode } from "./error-codes.ts";
export { accountTag, idempotencyKey, unknownOutcomeReason, type OnUnknown } from "./step-keys.ts";

export type {
  DirectoryEntry, HolderInfo, JournalEntry, MessageFrame, ObserverFrame, PresenceReport, ResultFrame, RevokeReason, ServerFrame,
} from "./server-frames.ts";

export function errorFrame(code: ErrorCode, message: string, reqId?: string): ServerFrame {
  return reqId === undefined ? { type: "error", code, message } : { type: "error", code, message, req: reqId };
}

/** The body of every HTTP error: the same code vocabulary as error frames. */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
  [detail: string]: unknown;
}

/** The one way to answer an HTTP request with an error: `{"error": code, "message", ...detail}`. */
export function errorResponse(status: number, code: ErrorCode, message: string, detail: Record<string, unknown> = {}): Response {
  const body: ErrorBody = { ...detail, error: code, message };
  return Response.json(body, { status });
}
