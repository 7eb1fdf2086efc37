// What the coordinator reports about an agent, as schemas first: its presence (connections,
// holder, work, controls, transitions), what the agent object tells its directory, and the
// directory's entries in their full, summary and `baton who` views. Sent inside presence and
// directory frames (server-frames.ts) and as HTTP answers (http-responses.ts).
import * as z from "zod/mini";
import { webhookReportSchema } from "./webhooks.ts";
import { ON_DEADLINE, POLICY_MODES } from "./enums.ts";

const count = z.int().check(z.nonnegative());
const millis = z.number();

export const holderInfo = z.object({ claim_seq: count, machine: z.string(), since: millis });

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
  /** The runner said it is stopping (its serve got SIGTERM): it is handed nothing new. Absent: it did not, or an older server. */
  stopping: z.optional(z.boolean()),
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
  /**
   * The stored policy could not be read: what is wrong with it. The values shown are then the
   * defaults, which the coordinator runs with until a policy is saved again; they were not set by
   * anyone. Absent: the policy read fine (and from older coordinators).
   */
  policy_problem: z.optional(z.string()),
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
  work: z.object({ mode: workReport.shape.mode, policy_problem: workReport.shape.policy_problem, counts: workReport.shape.counts, running: z.array(idOnly), parked: z.array(parkedWho), failed: z.array(idOnly) }),
  controls: z.pick(controlsReport, { paused: true, paused_since: true, drained: true, reserved_until: true }),
  confirmed_until: millis,
  confirmed: z.boolean(),
});

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
