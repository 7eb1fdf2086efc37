// The wire's limits and the patterns names must match: every budget (bytes as well as counts) in
// one LIMITS object, read by the worker, the clients and the generated Python types.
import { EFFECT_KEY_CHARS } from "./step-keys.ts";
import { OUTPUT_LIMITS } from "./output.ts";
import { PUSH_TARGET_LIMITS } from "./push.ts";

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
  /** A2A push targets (worker/wire/push.ts): per task, per agent, per account. */
  ...PUSH_TARGET_LIMITS,
  /**
   * Schedules (worker/wire/schedules.ts): how many one agent and one account may have, the
   * shortest interval between two slots (cron and --every alike), the text a slot posts, a cron
   * expression's length, the most jitter a slot may be delayed by, fires kept per schedule, and
   * the UTF-8 bytes kept and shown of what a failed fire threw (cut with "…").
   */
  schedulesPerAgent: 50,
  schedulesPerAccount: 5000,
  scheduleIntervalSeconds: { min: 60, max: 366 * 86_400 },
  scheduleTextBytes: 8 * 1024,
  scheduleCronChars: 128,
  scheduleJitterSeconds: 300,
  scheduleFiresKept: 20,
  scheduleErrorBytes: 500,
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
export const QUESTION_TEXT = /^(?:[^\p{Cc}\p{Cf}]|[\n\t])+$/u;
/** Step and effect names: 1-128 chars of letters, digits, '.', '_', ':' or '-', starting with a letter or digit (they are a path segment). */
export const STEP_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** Runner ids: 1-64 chars of letters, digits, '.', '_' or '-' (serve uses a random UUID per process). */
export const RUNNER_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** A blob id as the coordinator hands it out on upload (b- and 32 hex digits). */
export const BLOB_ID = /^b-[0-9a-f]{32}$/;
/** A W3C traceparent (version 00): trace id, parent span id, flags, in lower-case hex. */
export const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** A session lease's run id: a UUID the client makes up once per run. */
export const RUN_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}
