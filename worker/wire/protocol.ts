// The wire: every frame that crosses a baton WebSocket, the HTTP bodies, the limits and the
// error codes. Worker and CLI both import this module, so the two sides cannot disagree.
import * as z from "zod/mini";
import type { ErrorCode } from "./error-codes.ts";
import type { ServerFrame } from "./server-frames.ts";
import { EFFECT_KEY_CHARS } from "./step-keys.ts";
import { canonicalJson, inexactNumber } from "./approvals.ts";
import { TOKEN_NAME } from "./token-scopes.ts";
import { batchRefusal, OUTPUT_LIMITS, outputFrameSchema } from "./output.ts";
import { ON_BUSY, ON_DEADLINE, ON_UNKNOWN, POLICY_MODES, RESUME_OUTCOMES, STEP_PHASES } from "./enums.ts";

export const LIMITS = {
  frameBytes: 64 * 1024,
  /** Largest HTTP request body the Worker reads; a larger one is 413 before any object sees it. */
  requestBodyBytes: 80 * 1024,
  messageTextBytes: 32 * 1024,
  replyTextBytes: 32 * 1024,
  checkpointBytes: 16 * 1024,
  machineLabelChars: 64,
  idempotencyKeyChars: 128,
  connectionsPerAgent: 64,
  framesPerSecond: 50,
  /** Characters of frames one connection may send per second, on top of the frame count. */
  frameCharsPerSecond: 1024 * 1024,
  /** One sync answers one page: at most this many messages and this many bytes of text (always at least one message). */
  syncPageMessages: 100,
  syncPageBytes: 256 * 1024,
  /** One page of history over HTTP (GET /agents/{agent}/messages): at most this many messages and this many bytes of JSON (always at least one message). */
  historyPageMessages: 500,
  historyPageBytes: 256 * 1024,
  /** Bytes of history sync pages may replay per second: to one connection, and to all of one agent's connections together. */
  replayBytesPerSecond: 1024 * 1024,
  replayBytesPerSecondPerAgent: 4 * 1024 * 1024,
  leaseTtlSeconds: { min: 1, max: 3600, default: 30 },
  /** Messages one runner may run at once (`baton serve --concurrency`). */
  runnerSlots: 64,
  groupChars: 128,
  /** Characters of an agent's description (policy `description`, its A2A card). */
  descriptionChars: 1000,
  resumeInputBytes: 16 * 1024,
  /** Why a run failed (exit code, signal, the last lines of stderr), as a runner tells it. */
  failReasonChars: 4096,
  /** Run timeouts (per agent or per message) and park deadlines, in seconds. */
  runTimeoutSeconds: { min: 1, max: 7 * 86_400 },
  parkDeadlineSeconds: { min: 1, max: 30 * 86_400 },
  priority: { min: -1000, max: 1000 },
  drainedMachines: 64,
  /** One step's or effect's recorded result (JSON), and what one message's journal may hold in all. */
  stepValueBytes: 48 * 1024,
  stepsPerMessage: 1000,
  journalBytes: 2 * 1024 * 1024,
  stepNameChars: 128,
  /** An effect's idempotency key (`baton:<account tag>:<agent>:<message id>:<name>`) is at most this long. */
  effectKeyChars: EFFECT_KEY_CHARS,
  /** A heartbeat's details, kept as the run's progress. */
  progressBytes: 4 * 1024,
  heartbeatTimeoutSeconds: { min: 1, max: 86_400 },
  /**
   * Values too large to keep inline (a step's result over stepValueBytes) go to R2 as blobs: one
   * blob, and all blobs of one message together (uploaded but never committed ones count too).
   */
  blobBytes: 16 * 1024 * 1024,
  messageBlobBytes: 64 * 1024 * 1024,
  blobsPerMessage: 64,
  /** A question for a person: its text, its choices (each a short label), and how many it may offer. */
  questionChars: 2000,
  choiceChars: 64,
  choices: 10,
  /** A question that needs several people: how many named approvers it may list (and so how many approvals it may need). */
  approvers: 20,
  answerTextBytes: 16 * 1024,
  /** An approved effect's arguments, as the canonical JSON a person is shown and its permit is bound to. */
  approveArgsBytes: 8 * 1024,
  /**
   * Data stored under a session lease (/leases/{s}/data): a key's length, a value kept inline in
   * the lease's shard (larger ones, up to blobBytes, go to R2), one list page (entries, and bytes
   * of inline values it carries), and rows one fenced delete removes before it answers `more`.
   */
  leaseDataKeyChars: 512,
  leaseDataInlineBytes: 32 * 1024,
  leaseDataPageEntries: 100,
  leaseDataPageBytes: 256 * 1024,
  leaseDataDeleteRows: 500,
  /** What one session's data may hold in all: keys, and bytes (inline and in R2 together). */
  leaseDataKeysPerSession: 100_000,
  leaseDataBytesPerSession: 1024 * 1024 * 1024,
  /**
   * on_busy replace's debounce (ms): how long a new message is held at most (`debounce_ms`), and
   * the ceiling over a burst (`debounce_max_ms`; unset: this many times the debounce): a debounced
   * message runs at most that long after the first message of its burst, however steady the trickle.
   */
  debounceMs: { max: 600_000 },
  debounceMaxMs: { max: 3_600_000, defaultTimesDebounce: 10 },
  /** How deep JSON may nest in a frame or a body: deeper values pass the byte budgets but cost every copy between isolates. */
  jsonDepth: 64,
  /** A run's live output (wire/output.ts): one frame's batch, the per-message budget's cap, one read page. */
  ...OUTPUT_LIMITS,
  /**
   * Schedules (worker/wire/schedules.ts): how many one agent and one account may have, the
   * shortest interval between two slots (cron and --every alike), the text a slot posts, a cron
   * expression's length, the most jitter a slot may be delayed by, and fires kept per schedule.
   */
  schedulesPerAgent: 50,
  schedulesPerAccount: 5000,
  scheduleIntervalSeconds: { min: 60, max: 366 * 86_400 },
  scheduleTextBytes: 8 * 1024,
  scheduleCronChars: 128,
  scheduleJitterSeconds: 300,
  scheduleFiresKept: 20,
} as const;

/** Agent names: 1-63 chars of lowercase letters, digits, '.', '_' or '-', starting with a letter or digit. */
export const AGENT_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
/** Session keys (lease API): 1-128 chars of letters, digits, '.', '_' or '-', starting with a letter or digit. */
export const SESSION_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/**
 * Machine labels are shown in terminals and the dashboard: no control or invisible format
 * characters (escape sequences, bidi overrides), so a label cannot rewrite what an operator sees.
 */
export const MACHINE_LABEL = /^[^\p{Cc}\p{Cf}]+$/u;
/** A question's text: printable, lines and tabs allowed. */
const QUESTION_TEXT = /^(?:[^\p{Cc}\p{Cf}]|[\n\t])+$/u;
/** Step and effect names: 1-128 chars of letters, digits, '.', '_', ':' or '-', starting with a letter or digit (they are a path segment). */
export const STEP_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** Runner ids: 1-64 chars of letters, digits, '.', '_' or '-' (serve uses a random UUID per process). */
export const RUNNER_ID = /^[A-Za-z0-9._-]{1,64}$/;

export const PING_TEXT = '{"type":"ping"}';
export const PONG_TEXT = '{"type":"pong"}';

export { CLOSE_CODES, ERROR_CODES, type ErrorCode } from "./error-codes.ts";
export { accountTag, idempotencyKey, unknownOutcomeReason, type OnUnknown } from "./step-keys.ts";

const fence = z.int().check(z.nonnegative());
const messageId = z.int().check(z.gte(1));
const req = z.optional(z.string().check(z.maxLength(64)));
const machine = z.string().check(z.minLength(1), z.maxLength(LIMITS.machineLabelChars), z.regex(MACHINE_LABEL));
/** A message's own lease token, as handed out in its `message` frame. */
const token = z.int().check(z.gte(1));
const concurrency = z.optional(z.int().check(z.gte(1), z.lte(LIMITS.runnerSlots)));
/** Higher runs the agent by preference (serve --priority); equal priorities keep the first claimant. */
const priority = z.int().check(z.gte(LIMITS.priority.min), z.lte(LIMITS.priority.max));
/** A serve process's own id, the same across its reconnects, so a restarted coordinator can recognise its holder. */
const runnerId = z.string().check(z.regex(RUNNER_ID));
const stepName = z.string().check(z.regex(STEP_NAME));
const stepKind = z.enum(["step", "effect"]);
const stepPhase = z.enum(STEP_PHASES);
/** A blob id as the coordinator hands it out on upload (b- and 32 hex digits). */
export const BLOB_ID = /^b-[0-9a-f]{32}$/;
const blobId = z.string().check(z.regex(BLOB_ID));
/** A value too large for its frame: uploaded first (PUT …/messages/{id}/blobs), then committed by the write that names it. */
const blob = z.optional(blobId);
const onUnknown = z.enum(ON_UNKNOWN);
const choice = z.string().check(z.minLength(1), z.maxLength(LIMITS.choiceChars), z.regex(MACHINE_LABEL));
const parkDeadlineSeconds = z.int().check(z.gte(LIMITS.parkDeadlineSeconds.min), z.lte(LIMITS.parkDeadlineSeconds.max));

/** What several people deciding asks of a question or an effect's approval (rules/quorum.ts), checked the same on both. */
function quorumChecks(what: string) {
  type Quorum = { choices?: string[]; needs?: number; reject_needs?: number; approvers?: string[] };
  return [
    // Counting approvals means every answer is approve or reject; a choice among several is one person's.
    z.refine<Quorum>((q) => ((q.needs ?? 1) === 1 && (q.reject_needs ?? 1) === 1) || q.choices === undefined, {
      error: `needs and reject_needs above 1 take ${what} without choices (approve or reject)`,
    }),
    // Otherwise the named approvers could never decide it and only its deadline would.
    z.refine<Quorum>((q) => q.approvers === undefined || Math.max(q.needs ?? 1, q.reject_needs ?? 1) <= q.approvers.length, {
      error: "needs and reject_needs are at most the number of approvers",
    }),
  ];
}

/**
 * What a person is asked when a message parks: a short text, optional choices (absent: approve or
 * reject), what the deadline does if nobody answers (with the park's deadline_seconds), and the
 * journal step the answer is recorded under, so a handler run again from the top gets it back.
 */
export const questionSchema = z.strictObject({
  // Read by a person on a page or a terminal: no control or format characters but newline and tab.
  text: z.string().check(z.minLength(1), z.maxLength(LIMITS.questionChars), z.regex(QUESTION_TEXT)),
  // Reject is always offered and always ends the message, so it is no choice of the question's.
  choices: z.optional(z.array(choice).check(z.minLength(1), z.maxLength(LIMITS.choices),
    z.refine((cs) => new Set(cs).size === cs.length && !cs.includes("reject"), { error: "choices are distinct, and reject is always offered (not one of them)" }))),
  on_deadline: z.optional(z.enum(ON_DEADLINE)),
  step: z.optional(stepName),
  // Several people (rules/quorum.ts): approvals from this many distinct tokens decide approve (default 1).
  needs: z.optional(z.int().check(z.gte(1), z.lte(LIMITS.approvers))),
  // Only these tokens (by name) may answer; absent: any token that may answer.
  approvers: z.optional(z.array(z.string().check(z.regex(TOKEN_NAME))).check(z.minLength(1), z.maxLength(LIMITS.approvers),
    z.refine((names) => new Set(names).size === names.length, { error: "approvers are distinct token names" }))),
  // Rejects from this many distinct tokens decide reject (default 1: any one reject decides).
  reject_needs: z.optional(z.int().check(z.gte(1), z.lte(LIMITS.approvers))),
}).check(z.refine((q) => q.on_deadline !== "approve" || q.choices === undefined || q.choices.includes("approve"), {
  // The deadline would answer a choice the question does not offer, and the run that asked would never get one of its own.
  error: "on_deadline approve needs approve among the choices (or no choices)",
}), ...quorumChecks("a question"));
export type Question = z.infer<typeof questionSchema>;

/**
 * An effect that needs a person's approval (on its intent): the question, the arguments the
 * person approves (JSON; shown as canonical JSON with its SHA-256, wire/approvals.ts), and the
 * choices besides reject (absent: approve or reject; with choices, approve is one of them) and what
 * the park's deadline does (never approve). The
 * coordinator records the intent only on an unspent permit for these very arguments; otherwise it
 * stores this question for the attempt and refuses with approval_required (rules/permits.ts).
 */
export const effectApprovalSchema = z.strictObject({
  question: z.string().check(z.minLength(1), z.maxLength(LIMITS.questionChars), z.regex(QUESTION_TEXT)),
  args: z.unknown().check(z.refine((a) => a !== undefined, { error: "approve.args is a JSON value" })),
  choices: z.optional(z.array(choice).check(z.minLength(1), z.maxLength(LIMITS.choices),
    z.refine((cs) => new Set(cs).size === cs.length && cs.includes("approve") && !cs.includes("reject"), { error: "choices are distinct and include approve; reject is always offered" }))),
  /** What the park's deadline does: fail (default), reject or escalate. Never approve: a deadline grants no permit. */
  on_deadline: z.optional(z.enum(["fail", "reject", "escalate"])),
  /** Several people, as on a question (rules/quorum.ts): the permit is granted once this many distinct tokens approve. */
  needs: questionSchema.shape.needs,
  approvers: questionSchema.shape.approvers,
  reject_needs: questionSchema.shape.reject_needs,
}).check(...quorumChecks("an approval"));
export type EffectApproval = z.infer<typeof effectApprovalSchema>;

export const clientFrameSchema = z.discriminatedUnion("type", [
  // PING_TEXT exactly is answered by the runtime without waking the object; a holder's ping carries
  // its fence, so the object itself answers it and timestamps the holder's proof of life.
  z.strictObject({ type: z.literal("ping"), fence: z.optional(fence) }),
  // hello once took a `cursor` that nothing read; it is refused now like any unknown field.
  z.strictObject({ type: z.literal("hello"), machine: z.optional(machine), concurrency }),
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
  "ping", "hello", "serve_lease", "sync", "ack", "reply", "agent_checkpoint", "message_checkpoint", "fail", "park", "step", "heartbeat", "output",
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

export type {
  DirectoryEntry, HolderInfo, JournalEntry, MessageFrame, ObserverFrame, PresenceReport, ResultFrame, RevokeReason, ServerFrame,
} from "./server-frames.ts";

export type Parsed<T> = { ok: true; frame: T } | { ok: false; code: ErrorCode; message: string; req?: string };

function byteLength(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}

/** Validates one text frame from a client. Never throws; a rejection names its error code. */
export function parseClientFrame(raw: string | ArrayBuffer): Parsed<ClientFrame> {
  if (typeof raw !== "string") return { ok: false, code: "binary_frame", message: "frames must be JSON text" };
  // A UTF-16 code unit is at most 3 bytes of UTF-8, so only a frame past a third of the cap is encoded to count.
  if (raw.length > LIMITS.frameBytes || (raw.length * 3 > LIMITS.frameBytes && byteLength(raw) > LIMITS.frameBytes)) {
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
  if (frame.type === "reply" && byteLength(frame.text) > LIMITS.replyTextBytes) {
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
  if (frame.type === "step" && frame.value !== undefined && byteLength(JSON.stringify(frame.value)) > LIMITS.stepValueBytes) {
    return `a step's value is JSON of at most ${LIMITS.stepValueBytes} bytes`;
  }
  if (frame.type === "heartbeat" && frame.details !== undefined && byteLength(JSON.stringify(frame.details)) > LIMITS.progressBytes) {
    return `heartbeat details are JSON of at most ${LIMITS.progressBytes} bytes`;
  }
  return null;
}

/** Why an approval on a journal write is refused (not an effect's intent, arguments not JSON or over their budget), or null. */
export function approvalRefusal(kind: string, phase: string, approve: EffectApproval): { code: "bad_request" | "too_large"; message: string } | null {
  if (kind !== "effect" || phase !== "intent") return { code: "bad_request", message: "approve goes with an effect's intent" };
  let canonical: string;
  try {
    canonical = canonicalJson(approve.args);
  } catch (err) {
    return { code: "bad_request", message: (err as Error).message };
  }
  const inexact = inexactNumber(approve.args);
  if (inexact !== null) {
    return { code: "bad_request", message: `approve.args holds ${inexact}, beyond what a JSON number carries exactly (±2^53): send it as a string` };
  }
  return byteLength(canonical) > LIMITS.approveArgsBytes ? { code: "too_large", message: `approve.args is canonical JSON of at most ${LIMITS.approveArgsBytes} bytes` } : null;
}

export function checkpointTooLarge(value: unknown): boolean {
  return value === undefined || byteLength(JSON.stringify(value)) > LIMITS.checkpointBytes;
}

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

// HTTP bodies

/** A W3C traceparent (version 00): trace id, parent span id, flags, in lower-case hex. */
export const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

const runTimeoutSeconds = z.number().check(z.gte(LIMITS.runTimeoutSeconds.min), z.lte(LIMITS.runTimeoutSeconds.max));
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
/** What a person writes to a run (an answer's or a resume's text): it reaches a command's environment, so no NUL or other control characters but newline, carriage return and tab. */
const personText = z.string().check(z.regex(/^(?:[^\p{Cc}]|[\n\r\t])*$/u, { error: "text may hold no control characters but newline, carriage return and tab" }));
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

const ttl = z.int().check(z.gte(LIMITS.leaseTtlSeconds.min), z.lte(LIMITS.leaseTtlSeconds.max));
/** A session lease's run id: a UUID the client makes up once per run. */
export const RUN_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const runId = z.string().check(z.regex(RUN_ID));

export const acquireSchema = z.strictObject({ run_id: runId, ttl_seconds: z.optional(ttl) });
export const renewSchema = z.strictObject({ run_id: runId, ttl_seconds: z.optional(ttl) });
export const releaseSchema = z.strictObject({ run_id: runId });
export const checkSchema = z.strictObject({ run_id: z.optional(runId), fence });

/** Validates an HTTP JSON body against a schema; the error text is ready for a 400 response. */
export function parseBody<T>(schema: z.ZodMiniType<T>, data: unknown): { ok: true; value: T } | { ok: false; message: string } {
  const result = schema.safeParse(data);
  return result.success ? { ok: true, value: result.data } : { ok: false, message: z.prettifyError(result.error) };
}

export function utf8Bytes(text: string): number {
  return byteLength(text);
}
