// Frames the coordinator sends, and the reports inside them, as schemas first: the types below are
// inferred from them, the worker builds frames of those types, and every receiver (CLI, client
// library, tests, the Python client through its generated JSON Schema) validates with the same
// schemas instead of casting. A frame that does not match is dropped, never half-trusted; unknown
// frame types are dropped too, so an older client keeps working with a newer coordinator.
import * as z from "zod/mini";
import { ERROR_CODES } from "./error-codes.ts";
import { webhookReportSchema } from "./webhooks.ts";
import { ON_DEADLINE, ON_UNKNOWN, POLICY_MODES, STEP_PHASES } from "./enums.ts";

const count = z.int().check(z.nonnegative());
const millis = z.number();

const holderInfo = z.object({ claim_seq: count, machine: z.string(), since: millis });

const connectionReport = z.object({
  claim_seq: z.nullable(count),
  held: z.boolean(),
  machine: z.string(),
  joined_at: millis,
  /** Measured when the report was taken; null where it cannot be (the directory): then only "within the TTL" is known. */
  heartbeat_age_seconds: z.nullable(z.number()),
  cursor: count,
  slots: count,
  running: count,
  priority: z.int(),
  drained: z.boolean(),
});

const runningMessage = z.object({
  id: count, attempt: count, token: count, claim_seq: z.nullable(count), machine: z.nullable(z.string()),
  /** Server ms at which the run times out and the message is taken back. */
  expires_at: z.nullable(millis), group: z.nullable(z.string()),
  /** The run's latest heartbeat (server ms), null while it sent none; its details are in the message's view. */
  heartbeat_at: z.nullable(millis),
});

/** What presence says about an agent's messages: its policy, how many wait, which run, wait for a person or gave up. */
const workReport = z.object({
  mode: z.enum(POLICY_MODES),
  max_running: count,
  run_timeout_seconds: z.number(),
  max_attempts: count,
  counts: z.object({ queued: count, running: count, parked: count, acknowledged: count, failed: count, rejected: z.optional(count), cancelled: z.optional(count), superseded: z.optional(count) }),
  running: z.array(runningMessage),
  /**
   * Messages waiting for a person: the newest 20 (counts.parked counts them all). `waiting_on`: the step of the effect whose outcome is unknown,
   * which a person settles with done or redo (null: the runner parked it to ask; absent from older
   * coordinators). `reason`: the same as a sentence ("outcome unknown: step charge"), still sent for
   * readers older than `waiting_on`; nothing reads it any more: read `waiting_on`.
   */
  parked: z.array(z.object({
    id: count, attempt: count, deadline: z.nullable(millis), group: z.nullable(z.string()),
    waiting_on: z.optional(z.nullable(z.string())), reason: z.optional(z.nullable(z.string())),
    /** What the person is asked (null: approve or reject), its choices, and what the deadline does. */
    question: z.optional(z.nullable(z.string())), choices: z.optional(z.nullable(z.array(z.string()))),
    on_deadline: z.optional(z.nullable(z.enum(ON_DEADLINE))),
    /** A question several people decide: how many have answered so far (absent otherwise, and from older coordinators). */
    answered: z.optional(count),
  })),
  /** The most recent failures, newest first. */
  failed: z.array(z.object({ id: count, attempts: count, error: z.nullable(z.string()) })),
  /** The most recent cancels, newest first: who (token name), from where, when, and why (absent from older coordinators). */
  cancelled: z.optional(z.array(z.object({
    id: count, at: millis, account: z.string(), token: z.string(), via: z.string(), reason: z.nullable(z.string()),
  }))),
});

/** Where the agent may run: pause, drained machines, preference timings. */
const controlsReport = z.object({
  paused: z.boolean(),
  paused_since: z.nullable(millis),
  drained: z.array(z.object({ machine: z.string(), since: millis })),
  hysteresis_seconds: z.number(),
  /** After a coordinator restart: the lease waits for its previous holder until then (server ms). */
  reserved_until: z.nullable(millis),
});

const transition = z.object({
  at: millis,
  from_claim: z.nullable(count),
  to_claim: z.nullable(count),
  from_machine: z.nullable(z.string()),
  to_machine: z.nullable(z.string()),
  fence: count,
  reason: z.string(),
});

/** One agent's presence (GET /agents/{agent}/presence, and inside observer frames). */
export const presenceSchema = z.object({
  agent: z.string(),
  connection_count: count,
  serve_candidates: count,
  serve_standbys: count,
  fence: count,
  holder: z.nullable(holderInfo),
  heartbeat_ttl_seconds: z.number(),
  connections: z.array(connectionReport),
  transitions: z.array(transition),
  recent_messages: z.array(z.object({ id: count, status: z.string(), attempts: count, created_at: millis, preview: z.string() })),
  work: workReport,
  controls: controlsReport,
  /** How many times the object has been invoked; auto-answered heartbeats do not count. */
  wakes: count,
  /** Webhook deliveries (wire/webhooks.ts); absent in entries reported by coordinators without webhooks. */
  webhook: z.optional(webhookReportSchema),
});

/** What an agent object sends its directory: its presence and the server time (ms) it was taken. */
export const presenceReportSchema = z.extend(presenceSchema, { reported_at: millis });

/** The answer of POST /agents/{agent}/pause, unpause, drain and undrain. */
export const agentControlsSchema = z.extend(controlsReport, { agent: z.string(), changed: z.boolean() });

/**
 * One agent as the directory shows it. `confirmed_until` is how long the agent's own object has
 * vouched for it (rules/directory-lease.ts); past it, `confirmed` is false and the entry says only
 * what was last known, not what is.
 */
export const directoryEntrySchema = z.extend(presenceReportSchema, { confirmed_until: millis, confirmed: z.boolean() });

/** GET /agents?view=summary: a directory entry without its transitions and recent messages (kept for CLIs before `view=who`). */
export const directorySummarySchema = z.omit(directoryEntrySchema, { transitions: true, recent_messages: true });

const idOnly = z.object({ id: count });
/** A parked message in `baton who`: its id and the step whose outcome a person must settle (absent from older coordinators). */
const parkedWho = z.object({ id: count, waiting_on: z.optional(z.nullable(z.string())) });

/**
 * GET /agents?view=who: what `baton who` shows of each agent and nothing more (two thirds of a
 * summary's bytes), so listing 1,000 agents reads and checks only what it prints.
 */
export const directoryWhoSchema = z.object({
  agent: z.string(),
  fence: count,
  holder: z.nullable(holderInfo),
  serve_standbys: count,
  heartbeat_ttl_seconds: z.number(),
  connections: z.array(connectionReport),
  work: z.object({ mode: workReport.shape.mode, counts: workReport.shape.counts, running: z.array(idOnly), parked: z.array(parkedWho), failed: z.array(idOnly) }),
  controls: z.pick(controlsReport, { paused: true, paused_since: true, drained: true, reserved_until: true }),
  confirmed_until: millis,
  confirmed: z.boolean(),
});

const limitsSchema = z.readonly(z.record(z.string(), z.unknown()));
const messageId = z.int().check(z.gte(1));
const token = z.int().check(z.gte(1));
const req = z.optional(z.string());

/** A value kept in R2 instead of inline: its blob id and size. */
export const blobRef = z.object({ id: z.string(), bytes: count });

/** What a journal record is: a run's step or effect, or a person's answer to a question (written only by the answer path). */
export const journalKind = z.enum(["step", "effect", "answer"]);

/** One record of a message's step journal, as its runner gets it (rules/step-journal.ts). */
const journalEntry = z.object({
  name: z.string(),
  kind: journalKind,
  /** intent: an effect that began and whose outcome was never recorded. */
  status: z.enum(STEP_PHASES),
  value: z.optional(z.unknown()),
  /** A result too large to ride inline: GET /agents/{agent}/messages/{id}/blobs/{id} holds its JSON. */
  blob: z.optional(blobRef),
  on_unknown: z.nullable(z.enum(ON_UNKNOWN)),
  attempt: count,
});

/**
 * A message for the agent, pushed to every serve connection so standbys keep history too.
 * `run` is true only on the holder's copy: the one connection that should execute it now.
 */
export const messageFrameSchema = z.object({
  type: z.literal("message"),
  id: messageId,
  text: z.string(),
  attempt: z.int().check(z.gte(1)),
  created_at: millis,
  run: z.boolean(),
  /** On a run copy: the message's own lease token, which every write for it must carry. */
  token: z.optional(token),
  /** On a run copy: milliseconds until the server takes the message back (its run timeout). */
  run_timeout_ms: z.optional(z.number().check(z.positive())),
  /** On a run copy: the message's checkpoint from an earlier attempt, if one was saved. */
  checkpoint: z.optional(z.unknown()),
  /** On a run copy: a checkpoint too large to ride inline, kept in R2 (GET …/messages/{id}/blobs/{id} holds its JSON). */
  checkpoint_blob: z.optional(blobRef),
  /** On a run copy after a resume: the input the resume carried, and the choice of the answer (approve, or one the question offered). */
  resume_input: z.optional(z.nullable(z.string())),
  resume_choice: z.optional(z.nullable(z.string())),
  group: z.optional(z.nullable(z.string())),
  /** On a run copy: the W3C trace context its post carried; the run continues that trace. */
  traceparent: z.optional(z.string()),
  /** On a run copy: its step journal, which the runner replays instead of running recorded steps again. */
  steps: z.optional(z.array(journalEntry)),
  /** On a run copy: a run that sends no heartbeat within this is taken back (absent: only the run timeout). */
  heartbeat_timeout_ms: z.optional(z.number().check(z.positive())),
  /** On a run copy: the secret HTTP writes for this run carry (`baton step` inside a serve command). */
  run_key: z.optional(z.string()),
});

/** Why a running message was taken from its runner; its writes are refused from now on. */
const revokeReason = z.enum(["run_timeout", "runner_gone", "heartbeat_timeout"]);

/** The answer to a client frame that carried a request, one shape per operation. */
const resultFrames = [
  /** serve_lease release: whether this connection's claim was given up (false: it held nothing), and the fence now. */
  z.object({ type: z.literal("result"), op: z.literal("release"), req, released: z.boolean(), fence: count }),
  /** sync: the last message id replayed, and whether more pages follow. */
  z.object({ type: z.literal("result"), op: z.literal("sync"), req, cursor: count, more: z.boolean() }),
  /** checkpoint: the agent's own (under `fence`) or a message's (under `id` and `token`). */
  z.object({ type: z.literal("result"), op: z.literal("checkpoint"), req, fence: z.optional(count), id: z.optional(messageId), token: z.optional(token) }),
  z.object({ type: z.literal("result"), op: z.literal("park"), req, id: messageId, token, deadline: z.nullable(millis) }),
  /** fail: queued again (with `retry_at`), failed for good, or parked for a person (an effect's outcome is unknown). */
  z.object({
    type: z.literal("result"), op: z.literal("fail"), req, id: messageId, token, status: z.enum(["queued", "failed", "parked"]), retry_at: z.nullable(millis),
  }),
  /** step: what the journal holds for `name` now; `duplicate` when it was done already (its stored `value` stands). */
  z.object({
    type: z.literal("result"), op: z.literal("step"), req, id: messageId, token, name: z.string(), status: z.enum(STEP_PHASES),
    duplicate: z.boolean(), value: z.optional(z.unknown()), blob: z.optional(z.nullable(blobRef)),
    /** For an effect: the key to hand the external API, the same on every attempt (wire/step-keys.ts). */
    idempotency_key: z.optional(z.string()),
  }),
  /** heartbeat: the run's deadline now (server ms). */
  z.object({ type: z.literal("result"), op: z.literal("heartbeat"), req, id: messageId, token, expires_at: z.nullable(millis) }),
  /** output: the offset the next byte of the message's output gets (its chunks are stored and readers see them). */
  z.object({ type: z.literal("result"), op: z.literal("output"), req, id: messageId, token, offset: count }),
  /** ack and reply: the write that finished the message; `duplicate` when it had already been made. */
  ...(["ack", "reply"] as const).map((op) => z.object({
    type: z.literal("result"), op: z.literal(op), req, id: messageId, token, fence: count, key: z.string(), duplicate: z.boolean(),
  })),
] as const;

/**
 * Frames for dashboard observers at GET /observe: the directory on connect (as much as fits 48 KiB;
 * `rest` more agents follow at once as presence frames, so no frame exceeds the cap), then one agent's
 * presence whenever it changes, and agent_gone when its last connection leaves. `server_time` lets
 * the page compute ages with the server's clock.
 */
const observerFrames = [
  z.object({ type: z.literal("directory"), agents: z.array(directoryEntrySchema), server_time: millis, rest: z.optional(count) }),
  z.object({ type: z.literal("presence"), presence: directoryEntrySchema, server_time: millis }),
  z.object({ type: z.literal("agent_gone"), agent: z.string(), server_time: millis }),
] as const;

export const serverFrameSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("pong") }),
  z.object({ type: z.literal("welcome"), agent: z.string(), heartbeat_ttl_ms: z.number().check(z.positive()), limits: limitsSchema }),
  z.object({
    type: z.literal("serve_lease"),
    held: z.boolean(),
    fence: count,
    claim_seq: count,
    /** Place in line: 0 holds, 1 is next; -1 is not in line (released, or drained). */
    position: z.int().check(z.gte(-1)),
    ttl_ms: z.number().check(z.positive()),
    holder: z.nullable(holderInfo),
    checkpoint: z.optional(z.unknown()),
    checkpoint_fence: z.optional(count),
  }),
  messageFrameSchema,
  z.object({ type: z.literal("revoked"), id: messageId, token, reason: revokeReason }),
  /**
   * A person cancelled the message this connection runs under `token`: stop it now. Every later
   * write under that token is refused (`cancelled`); the serve lease stays, and the next message follows.
   * `by`: the name of the token that cancelled; `reason`: what its person said (null: nothing).
   */
  z.object({ type: z.literal("cancel"), id: messageId, token, reason: z.nullable(z.string()), by: z.string() }),
  z.discriminatedUnion("op", resultFrames),
  z.object({ type: z.literal("error"), code: z.enum(ERROR_CODES), message: z.string(), req }),
  ...observerFrames,
]);

export type HolderInfo = z.infer<typeof holderInfo>;
export type ConnectionReport = z.infer<typeof connectionReport>;
export type RunningMessage = z.infer<typeof runningMessage>;
export type WorkReport = z.infer<typeof workReport>;
export type AgentControlsReport = z.infer<typeof controlsReport>;
export type Presence = z.infer<typeof presenceSchema>;
export type PresenceReport = z.infer<typeof presenceReportSchema>;
export type DirectoryEntry = z.infer<typeof directoryEntrySchema>;
export type DirectorySummary = z.infer<typeof directorySummarySchema>;
export type DirectoryWhoEntry = z.infer<typeof directoryWhoSchema>;
export type MessageFrame = z.infer<typeof messageFrameSchema>;
export type JournalEntry = z.infer<typeof journalEntry>;
export type RevokeReason = z.infer<typeof revokeReason>;
export type CancelFrame = Extract<z.infer<typeof serverFrameSchema>, { type: "cancel" }>;
export type ServerFrame = z.infer<typeof serverFrameSchema>;
export type ResultFrame = Extract<ServerFrame, { type: "result" }>;
export type ObserverFrame = Extract<ServerFrame, { type: "directory" | "presence" | "agent_gone" }>;

/** Reads one text frame from the coordinator; null for anything that is not a known, well-formed frame. */
export function parseServerFrame(raw: string): ServerFrame | null {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return null;
  }
  const result = serverFrameSchema.safeParse(data);
  return result.success ? result.data : null;
}
