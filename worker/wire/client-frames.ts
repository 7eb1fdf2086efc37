// The frames a client sends over a baton WebSocket: one schema, and parseClientFrame, the one
// check every frame passes (size, JSON depth, fields, budgets) before the worker acts on it.
import * as z from "zod/mini";
import type { ErrorCode } from "./error-codes.ts";
import { batchRefusal, outputFrameSchema } from "./output.ts";
import { LIMITS, utf8Bytes } from "./limits.ts";
import { blob, concurrency, fence, machine, messageId, onUnknown, parkDeadlineSeconds, priority, req, runnerId, stepKind, stepName, stepPhase, token } from "./fields.ts";
import { approvalRefusal, effectApprovalSchema, questionSchema } from "./questions.ts";

export const clientFrameSchema = z.discriminatedUnion("type", [
  // PING_TEXT exactly is answered by the runtime without waking the object; a holder's ping carries
  // its fence, so the object itself answers it and timestamps the holder's proof of life.
  z.strictObject({ type: z.literal("ping"), fence: z.optional(fence) }),
  // hello once took a `cursor` that nothing read; it is refused now like any unknown field.
  // `stopping`: the runner is shutting down (SIGTERM): it is handed nothing new, finishes or stops what
  // it runs, then releases. A coordinator older than it refuses the frame (bad_frame) and changes nothing.
  z.strictObject({ type: z.literal("hello"), machine: z.optional(machine), concurrency, stopping: z.optional(z.literal(true)) }),
  z.strictObject({
    type: z.literal("serve_lease"),
    op: z.enum(["claim", "release"]),
    fence: z.optional(fence),
    concurrency,
    priority: z.optional(priority),
    runner_id: z.optional(runnerId),
    req,
  }),
  z.strictObject({ type: z.literal("sync"), after: fence, req }),
  // Writes for a message carry its lease `token`. (The older fence-only ack and reply, from before
  // per-message leases, are refused: a fence says who holds the agent, not who runs the message.)
  z.strictObject({ type: z.literal("ack"), id: messageId, token, req }),
  z.strictObject({
    type: z.literal("reply"),
    id: messageId,
    token,
    key: z.string().check(z.minLength(1), z.maxLength(LIMITS.idempotencyKeyChars)),
    /** The reply, or "" with `blob`: a reply over replyTextBytes uploaded first. */
    text: z.string(),
    blob,
    req,
  }),
  // The agent's own checkpoint, from its holder under the serve fence.
  z.strictObject({ type: z.literal("agent_checkpoint"), fence, value: z.unknown(), req }),
  // A running message's checkpoint under its token: inline, or a staged blob.
  z.strictObject({ type: z.literal("message_checkpoint"), id: messageId, token, value: z.optional(z.unknown()), blob, req }),
  // The runner never started this run: its serve said it was stopping (hello `stopping`) before the
  // message reached it. The message goes back to the queue and the attempt is not counted. Only a
  // connection that said stopping may decline (any other fails the attempt instead: a decline is no retry).
  z.strictObject({ type: z.literal("decline"), id: messageId, token, req }),
  // The run failed (non-zero exit, could not start, killed, the handler threw): `reason` says why.
  z.strictObject({ type: z.literal("fail"), id: messageId, token, reason: z.string().check(z.maxLength(LIMITS.failReasonChars)), req }),
  // Gives a running message's lease up until someone resumes it; `value` is its checkpoint.
  z.strictObject({
    type: z.literal("park"),
    id: messageId,
    token,
    value: z.optional(z.unknown()),
    blob,
    deadline_seconds: z.optional(parkDeadlineSeconds),
    /** What a person must decide (absent: a question the run stored with POST …/ask, if any). */
    question: z.optional(questionSchema),
    req,
  }),
  // A step's result (phase done), or an effect's intent before it runs and its outcome after (rules/step-journal.ts).
  z.strictObject({
    type: z.literal("step"), id: messageId, token, name: stepName, kind: stepKind, phase: stepPhase, value: z.optional(z.unknown()), blob,
    on_unknown: z.optional(onUnknown), approve: z.optional(effectApprovalSchema), req,
  }),
  // The run is alive: its deadline moves a heartbeat timeout on; `details` are kept as its progress.
  z.strictObject({ type: z.literal("heartbeat"), id: messageId, token, details: z.optional(z.unknown()), req }),
  // A batch of the run's live output (wire/output.ts), under the same token check as every write.
  outputFrameSchema,
]);

export type ClientFrame = z.infer<typeof clientFrameSchema>;
export const CLIENT_FRAME_TYPES = [
  "ping", "hello", "serve_lease", "sync", "ack", "reply", "agent_checkpoint", "message_checkpoint", "decline", "fail", "park", "step", "heartbeat", "output",
] as const;

/**
 * The `checkpoint` frame of clients before the split: one type for two operations, told apart by
 * its fields (`id` and `token`: the message's; only `fence`: the agent's). Still understood, read as
 * the frame it stands for.
 */
const legacyCheckpointSchema = z.strictObject({
  type: z.literal("checkpoint"), fence: z.optional(fence), id: z.optional(messageId), token: z.optional(token), value: z.optional(z.unknown()), blob, req,
});

/** A legacy checkpoint as the frame it stands for (still checked against that frame's schema). */
function splitCheckpoint(legacy: z.infer<typeof legacyCheckpointSchema>): unknown {
  const { fence: f, id, token: t, value, blob: b, req: r } = legacy;
  const req = r === undefined ? {} : { req: r };
  if (id !== undefined || t !== undefined) return { type: "message_checkpoint", id, token: t, ...(value === undefined ? {} : { value }), ...(b === undefined ? {} : { blob: b }), ...req };
  return { type: "agent_checkpoint", fence: f, value, ...(b === undefined ? {} : { blob: b }), ...req };
}

export type Parsed<T> = { ok: true; frame: T } | { ok: false; code: ErrorCode; message: string; req?: string };

/** Validates one text frame from a client. Never throws; a rejection names its error code. */
export function parseClientFrame(raw: string | ArrayBuffer): Parsed<ClientFrame> {
  if (typeof raw !== "string") return { ok: false, code: "binary_frame", message: "frames must be JSON text" };
  // A UTF-16 code unit is at most 3 bytes of UTF-8, so only a frame past a third of the cap is encoded to count.
  if (raw.length > LIMITS.frameBytes || (raw.length * 3 > LIMITS.frameBytes && utf8Bytes(raw) > LIMITS.frameBytes)) {
    return { ok: false, code: "frame_too_large", message: `frame exceeds ${LIMITS.frameBytes} bytes` };
  }
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return { ok: false, code: "bad_json", message: "frame is not valid JSON" };
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return { ok: false, code: "bad_frame", message: "frame must be a JSON object" };
  }
  const type = (data as Record<string, unknown>).type;
  const reqValue = (data as Record<string, unknown>).req;
  const reqId = typeof reqValue === "string" && reqValue.length <= 64 ? reqValue : undefined;
  // V8 parses deep JSON fine; copying it between isolates (RPC, storage) does not, so it stops here.
  if (jsonTooDeep(raw)) return { ok: false, code: "bad_json", message: `JSON nests deeper than ${LIMITS.jsonDepth} levels`, req: reqId };
  if (typeof type !== "string" || !(CLIENT_FRAME_TYPES as readonly string[]).includes(type) && type !== "checkpoint") {
    return { ok: false, code: "unknown_type", message: `unknown frame type ${JSON.stringify(type)}`, req: reqId };
  }
  let input: unknown = data;
  if (type === "checkpoint") {
    const legacy = legacyCheckpointSchema.safeParse(data);
    if (!legacy.success) return { ok: false, code: "bad_frame", message: `invalid checkpoint frame: ${z.prettifyError(legacy.error)}`, req: reqId };
    input = splitCheckpoint(legacy.data);
  }
  const result = clientFrameSchema.safeParse(input);
  if (!result.success) {
    return { ok: false, code: "bad_frame", message: `invalid ${type} frame: ${z.prettifyError(result.error)}`, req: reqId };
  }
  const frame = result.data;
  if (frame.type === "reply" && utf8Bytes(frame.text) > LIMITS.replyTextBytes) {
    return { ok: false, code: "too_large", message: `reply text exceeds ${LIMITS.replyTextBytes} bytes`, req: reqId };
  }
  const blobbed = blobConflict(frame);
  if (blobbed) return { ok: false, code: "bad_frame", message: `invalid ${type} frame: ${blobbed}`, req: reqId };
  const inline = frame.type === "agent_checkpoint" || (frame.type === "message_checkpoint" && frame.blob === undefined) || (frame.type === "park" && frame.value !== undefined);
  if (inline && checkpointTooLarge(frame.value)) {
    return { ok: false, code: "too_large", message: `checkpoint exceeds ${LIMITS.checkpointBytes} bytes`, req: reqId };
  }
  if (frame.type === "output") {
    const over = batchRefusal(frame.chunks);
    if (over) return { ok: false, code: "too_large", message: over, req: reqId };
  }
  const sized = oversizedValue(frame);
  if (sized) return { ok: false, code: "too_large", message: sized, req: reqId };
  const unapprovable = frame.type === "step" && frame.approve !== undefined ? approvalRefusal(frame.kind, frame.phase, frame.approve) : null;
  if (unapprovable) return { ok: false, code: unapprovable.code === "too_large" ? "too_large" : "bad_frame", message: unapprovable.message, req: reqId };
  return { ok: true, frame };
}

/** A value rides inline or as a blob, never both; only a message's own writes may name a blob. */
function blobConflict(frame: ClientFrame): string | null {
  if (frame.type === "reply" && frame.blob !== undefined && frame.text !== "") return "a reply is text or a blob, not both";
  if (frame.type === "message_checkpoint" && frame.blob !== undefined && frame.value !== undefined) return "a checkpoint is a value or a blob, not both";
  if (frame.type === "message_checkpoint" && frame.blob === undefined && frame.value === undefined) return "a checkpoint needs a value or a blob";
  if (frame.type === "agent_checkpoint" && frame.value === undefined) return "a checkpoint needs a value";
  if (frame.type === "park" && frame.blob !== undefined && frame.value !== undefined) return "a park's checkpoint is a value or a blob, not both";
  return null;
}

/**
 * Whether JSON text nests deeper than LIMITS.jsonDepth: one pass over the text, before it is parsed.
 * Brackets inside strings do not count.
 */
export function jsonTooDeep(text: string, max: number = LIMITS.jsonDepth): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: the next character is escaped
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/** A step value or heartbeat details over its budget, in bytes of JSON. */
function oversizedValue(frame: ClientFrame): string | null {
  if (frame.type === "step" && frame.value !== undefined && utf8Bytes(JSON.stringify(frame.value)) > LIMITS.stepValueBytes) {
    return `a step's value is JSON of at most ${LIMITS.stepValueBytes} bytes`;
  }
  if (frame.type === "heartbeat" && frame.details !== undefined && utf8Bytes(JSON.stringify(frame.details)) > LIMITS.progressBytes) {
    return `heartbeat details are JSON of at most ${LIMITS.progressBytes} bytes`;
  }
  return null;
}

export function checkpointTooLarge(value: unknown): boolean {
  return value === undefined || utf8Bytes(JSON.stringify(value)) > LIMITS.checkpointBytes;
}
