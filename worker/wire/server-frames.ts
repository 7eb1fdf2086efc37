// Frames the coordinator sends, and the reports inside them, as schemas first: the types below are
// inferred from them, the worker builds frames of those types, and every receiver (CLI, client
// library, tests, the Python client through its generated JSON Schema) validates with the same
// schemas instead of casting. A frame that does not match is dropped, never half-trusted; unknown
// frame types are dropped too, so an older client keeps working with a newer coordinator. The
// reports of presence and the directory are in presence-reports.ts.
import * as z from "zod/mini";
import { ERROR_CODES } from "./error-codes.ts";
import { ON_UNKNOWN, STEP_PHASES } from "./enums.ts";
import { directoryEntrySchema, holderInfo } from "./presence-reports.ts";

export {
  agentControlsSchema, directoryEntrySchema, directorySummarySchema, directoryWhoSchema, presenceReportSchema, presenceSchema,
  type AgentControlsReport, type ConnectionReport, type DirectoryEntry, type DirectorySummary, type DirectoryWhoEntry, type HolderInfo,
  type Presence, type PresenceReport, type RunningMessage, type WorkReport,
} from "./presence-reports.ts";

const count = z.int().check(z.nonnegative());
const millis = z.number();

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
  /** decline: the message is queued again, its attempt not counted. */
  z.object({ type: z.literal("result"), op: z.literal("decline"), req, id: messageId, token }),
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
