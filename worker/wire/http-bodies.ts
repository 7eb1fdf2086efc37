// The JSON bodies of baton's HTTP routes (a post, a policy, an answer, a step written over HTTP,
// a session lease's acquire and renew), and parseBody, which checks one against its schema.
import * as z from "zod/mini";
import { POLICY_MODES, ON_BUSY, RESUME_OUTCOMES } from "./enums.ts";
import { LIMITS, MACHINE_LABEL, TRACEPARENT } from "./limits.ts";
import { blobId, choice, fence, machine, onUnknown, parkDeadlineSeconds, personText, runId, runTimeoutSeconds, stepKind, stepPhase, token, ttl } from "./fields.ts";
import { effectApprovalSchema, questionSchema } from "./questions.ts";

/** POST /agents/{agent}/drain and /undrain: a machine label, or none for the holder's (drain) or every one (undrain). */
export const drainSchema = z.strictObject({ machine: z.optional(machine) });

export const postMessageSchema = z.strictObject({
  text: z.string().check(z.minLength(1)),
  /** Messages of one group (a conversation) run one at a time, in the order they were posted. */
  group: z.optional(z.string().check(z.minLength(1), z.maxLength(LIMITS.groupChars), z.regex(MACHINE_LABEL))),
  /** Overrides the agent's run timeout for this message. */
  run_timeout_seconds: z.optional(runTimeoutSeconds),
  /**
   * A question for a person alone (`baton mcp`'s ask): the message is parked with it from the start,
   * never handed to a runner, and ends with the answer as its reply.
   */
  question: z.optional(questionSchema),
  /** With a question: how long a person has before its on_deadline action. */
  deadline_seconds: z.optional(parkDeadlineSeconds),
  /** The W3C trace context of the post: every attempt's run continues this trace (OpenTelemetry). */
  traceparent: z.optional(z.string().check(z.regex(TRACEPARENT))),
});

/** PUT /agents/{agent}/policy: any subset of the agent's message policy. */
export const policySchema = z.strictObject({
  mode: z.optional(z.enum(POLICY_MODES)),
  max_running: z.optional(z.int().check(z.gte(1), z.lte(10_000))),
  run_timeout_seconds: z.optional(runTimeoutSeconds),
  max_attempts: z.optional(z.int().check(z.gte(1), z.lte(100))),
  /** null: only the run timeout takes a silent run back. */
  heartbeat_timeout_seconds: z.optional(z.nullable(z.int().check(z.gte(LIMITS.heartbeatTimeoutSeconds.min), z.lte(LIMITS.heartbeatTimeoutSeconds.max)))),
  /** What a new message does while its group is busy (worker/rules/on-busy.ts); default queue. */
  on_busy: z.optional(z.enum(ON_BUSY)),
  /** With replace: hold a new message this long (ms, at most 10 minutes), so a burst becomes one run; null or 0: no hold. */
  debounce_ms: z.optional(z.nullable(z.int().check(z.gte(0), z.lte(LIMITS.debounceMs.max)))),
  /** With a debounce: a held message runs at most this long (ms) after the first of its burst; null or 0: 10 times debounce_ms. */
  debounce_max_ms: z.optional(z.nullable(z.int().check(z.gte(0), z.lte(LIMITS.debounceMaxMs.max)))),
  /** Answer A2A: an Agent Card at /agents/{agent}/a2a/.well-known/agent-card.json and JSON-RPC at /agents/{agent}/a2a (default false). */
  a2a: z.optional(z.boolean()),
  /** What the agent does, in a sentence or two: its A2A card's description and skill (null: none). */
  description: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(LIMITS.descriptionChars), z.regex(/^[^\p{Cc}\p{Cf}]+$/u)))),
});

/**
 * POST /agents/{agent}/messages/{id}/resume. `outcome` answers for a step whose outcome is unknown:
 * done (it happened; `input` is recorded as its result) or redo (it runs again).
 */
export const resumeSchema = z.strictObject({ input: z.optional(z.nullable(personText)), outcome: z.optional(z.enum(RESUME_OUTCOMES)) });

/** What HTTP writes for a running message carry instead of a connection: its token and its run key (BATON_RUN_KEY). */
const runProof = { token, run_key: z.string().check(z.minLength(16), z.maxLength(64)) };

/** POST /agents/{agent}/messages/{id}/ask: the running attempt stores its question (`baton ask`), then parks. */
export const askSchema = z.strictObject({ ...runProof, question: questionSchema, deadline_seconds: z.optional(parkDeadlineSeconds) });

/**
 * POST /agents/{agent}/messages/{id}/answer: a person's answer to a parked message. `choice` is
 * approve, reject, or one of the question's choices; `text` reaches the next attempt as its resume
 * input. /approve and /reject take `{text?}` and stand for those choices.
 */
export const answerSchema = z.strictObject({ choice: choice, text: z.optional(z.nullable(personText)) });
export const approveSchema = z.strictObject({ text: z.optional(z.nullable(personText)) });

/** Characters a cancel's reason may hold. */
export const CANCEL_REASON_CHARS = 1000;
/** POST /agents/{agent}/messages/{id}/cancel: why, kept with who cancelled (optional; an empty body is fine). */
export const cancelSchema = z.strictObject({ reason: z.optional(z.nullable(z.string().check(z.maxLength(CANCEL_REASON_CHARS)))) });

/** PUT /agents/{agent}/messages/{id}/steps/{name}: the same write as a `step` frame. */
export const stepWriteSchema = z.strictObject({
  ...runProof, kind: stepKind, phase: stepPhase, value: z.optional(z.unknown()), blob: z.optional(blobId), on_unknown: z.optional(onUnknown),
  approve: z.optional(effectApprovalSchema),
});

/** POST /agents/{agent}/messages/{id}/heartbeat: the same as a `heartbeat` frame. */
export const heartbeatSchema = z.strictObject({ ...runProof, details: z.optional(z.unknown()) });
export const acquireSchema = z.strictObject({ run_id: runId, ttl_seconds: z.optional(ttl) });
export const renewSchema = z.strictObject({ run_id: runId, ttl_seconds: z.optional(ttl) });
export const releaseSchema = z.strictObject({ run_id: runId });
export const checkSchema = z.strictObject({ run_id: z.optional(runId), fence });

/** Validates an HTTP JSON body against a schema; the error text is ready for a 400 response. */
export function parseBody<T>(schema: z.ZodMiniType<T>, data: unknown): { ok: true; value: T } | { ok: false; message: string } {
  const result = schema.safeParse(data);
  return result.success ? { ok: true, value: result.data } : { ok: false, message: z.prettifyError(result.error) };
}
