// Frames the coordinator sends, validated on the receiving side (CLI, client library, tests)
// instead of cast: a frame that does not match its schema is dropped, never half-trusted.
// Unknown frame types are dropped too, so an older client keeps working with a newer coordinator.
import * as z from "zod/mini";
import { ERROR_CODES, type DirectoryEntry, type ServerFrame } from "./protocol.ts";

const count = z.int().check(z.nonnegative());
const millis = z.number();

const holderInfo = z.object({ claim_seq: count, machine: z.string(), since: millis });

const connectionReport = z.object({
  role: z.enum(["serve", "observer"]),
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

const workReport = z.object({
  mode: z.enum(["single", "pool"]),
  max_running: count,
  run_timeout_seconds: z.number(),
  max_attempts: count,
  counts: z.object({ queued: count, running: count, parked: count, acknowledged: count, failed: count }),
  running: z.array(z.object({
    id: count, attempt: count, token: count, claim_seq: z.nullable(count), machine: z.nullable(z.string()),
    expires_at: z.nullable(millis), group: z.nullable(z.string()),
  })),
  parked: z.array(z.object({ id: count, attempt: count, deadline: z.nullable(millis), group: z.nullable(z.string()) })),
  failed: z.array(z.object({ id: count, attempts: count, error: z.nullable(z.string()) })),
});

const controlsReport = z.object({
  paused: z.boolean(),
  paused_since: z.nullable(millis),
  drained: z.array(z.object({ machine: z.string(), since: millis })),
  hysteresis_seconds: z.number(),
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
  wakes: count,
});

/** The answer of POST /agents/{agent}/pause, unpause, drain and undrain. */
export const agentControlsSchema = z.extend(controlsReport, { agent: z.string(), changed: z.boolean() });

export const directoryEntrySchema = z.extend(presenceSchema, { reported_at: millis, confirmed_until: millis, confirmed: z.boolean() });

/** GET /agents?view=summary: a directory entry without the history that `baton who` does not show. */
export const directorySummarySchema = z.omit(directoryEntrySchema, { transitions: true, recent_messages: true });

const limitsSchema = z.record(z.string(), z.unknown());

export const serverFrameSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("pong") }),
  z.object({ type: z.literal("welcome"), agent: z.string(), heartbeat_ttl_ms: z.number().check(z.positive()), limits: limitsSchema }),
  z.object({
    type: z.literal("serve_lease"),
    held: z.boolean(),
    fence: count,
    claim_seq: count,
    position: count,
    ttl_ms: z.number().check(z.positive()),
    holder: z.nullable(holderInfo),
    checkpoint: z.optional(z.unknown()),
    checkpoint_fence: z.optional(count),
  }),
  z.object({
    type: z.literal("message"),
    id: z.int().check(z.gte(1)),
    text: z.string(),
    attempt: z.int().check(z.gte(1)),
    created_at: millis,
    run: z.boolean(),
    token: z.optional(z.int().check(z.gte(1))),
    run_timeout_ms: z.optional(z.number().check(z.positive())),
    checkpoint: z.optional(z.unknown()),
    resume_input: z.optional(z.nullable(z.string())),
    group: z.optional(z.nullable(z.string())),
  }),
  z.object({
    type: z.literal("revoked"), id: z.int().check(z.gte(1)), token: z.int().check(z.gte(1)), reason: z.enum(["run_timeout", "runner_gone"]),
  }),
  z.looseObject({ type: z.literal("result"), op: z.string(), req: z.optional(z.string()) }),
  z.object({ type: z.literal("error"), code: z.enum(ERROR_CODES), message: z.string(), req: z.optional(z.string()) }),
  z.object({ type: z.literal("directory"), agents: z.array(directoryEntrySchema), server_time: millis, rest: z.optional(count) }),
  z.object({ type: z.literal("presence"), presence: directoryEntrySchema, server_time: millis }),
  z.object({ type: z.literal("agent_gone"), agent: z.string(), server_time: millis }),
]);

type ParsedServerFrame = z.infer<typeof serverFrameSchema>;
// The schemas describe the very frames the worker builds: these fail to compile if the two drift.
const asServerFrame = (frame: ParsedServerFrame): ServerFrame => frame;
const asDirectoryEntry = (entry: z.infer<typeof directoryEntrySchema>): DirectoryEntry => entry;
void asServerFrame;
void asDirectoryEntry;

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
