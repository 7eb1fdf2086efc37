// The JSON bodies the coordinator answers HTTP requests with, as schemas: the worker builds them,
// the client library validates them on arrival (nothing is cast), and both share the types.
import * as z from "zod/mini";
import { ERROR_CODES } from "./protocol.ts";
import { agentControlsSchema, blobRef, directoryEntrySchema, journalKind, directorySummarySchema, directoryWhoSchema, presenceSchema } from "./server-frames.ts";
import { SCOPES } from "./token-scopes.ts";
import { MESSAGE_STATUSES, ON_BUSY, ON_DEADLINE, ON_UNKNOWN, POLICY_MODES, STEP_PHASES } from "./enums.ts";
import { OUTPUT_DROP_REASONS } from "./output.ts";

const count = z.int().check(z.nonnegative());

/** Every refusal: a named code and a sentence for people. Extra fields depend on the code. */
export const errorBodySchema = z.looseObject({ error: z.enum(ERROR_CODES), message: z.string() });

/** One answer to a parked message, as kept with it. `via`: page, cli or http; `token`: the name of the token that answered. */
export const answerRecordSchema = z.object({
  at: z.number(), choice: z.string(), text: z.nullable(z.string()), question: z.nullable(z.string()), account: z.string(), token: z.string(), via: z.string(),
});

/** What approving a question asked for an effect permits: the effect, its arguments as canonical JSON, their SHA-256 (wire/approvals.ts). */
export const approvalAskedSchema = z.object({ effect: z.string(), args: z.string(), digest: z.string() });
/**
 * A parked question several people decide (needs, reject_needs or approvers): each answer so far
 * (one per token, its latest), how many approve and reject of how many needed, and which named
 * approvers have not answered (null: the question names none).
 */
export const questionQuorumSchema = z.object({
  needs: z.int().check(z.gte(1)), reject_needs: z.int().check(z.gte(1)), approvals: count, rejections: count,
  approvers: z.nullable(z.array(z.string())), waiting_for: z.nullable(z.array(z.string())),
  answered: z.array(z.object({ token: z.string(), account: z.string(), via: z.string(), choice: z.string(), text: z.nullable(z.string()), at: z.number() })),
});
export type QuestionQuorum = z.infer<typeof questionQuorumSchema>;

export const messageViewSchema = z.object({
  id: z.int().check(z.gte(1)),
  text: z.string(),
  status: z.enum(MESSAGE_STATUSES),
  /** Hand-outs so far: the number of its latest attempt (numbers go on across a person's retry). */
  attempts: count,
  /** Hand-outs before a person's latest retry (0: never retried); max_attempts counts those after it (absent from older coordinators). */
  retried_after: z.optional(count),
  /** Of the hand-outs since the latest retry, those a stopping runner gave back unstarted: not counted against max_attempts (absent from older coordinators). */
  declined: z.optional(count),
  created_at: z.number(),
  acked_at: z.nullable(z.number()),
  acked_fence: z.nullable(count),
  reply: z.nullable(z.string()),
  /** A reply too large to keep inline (reply is then null): GET …/messages/{id}/blobs/{id} holds its text. */
  reply_blob: z.nullable(blobRef),
  /** The message's lease token (0 before its first hand-out), and the one that acknowledged it. */
  token: count,
  acked_token: z.nullable(count),
  group: z.nullable(z.string()),
  run_timeout_seconds: z.nullable(z.number()),
  /** Run deadline while running, park deadline while parked (server ms). */
  expires_at: z.nullable(z.number()),
  claim_seq: z.nullable(count),
  /** The machine of the runner it was last handed to. */
  machine: z.nullable(z.string()),
  checkpoint: z.unknown(),
  /** A checkpoint kept in R2 (checkpoint is then null): GET …/messages/{id}/blobs/{id} holds its JSON. */
  checkpoint_blob: z.nullable(blobRef),
  resume_input: z.nullable(z.string()),
  /** Why the latest attempt failed or was taken back; how many attempts failed; when a failed one runs again. */
  error: z.nullable(z.string()),
  failures: count,
  retry_at: z.nullable(z.number()),
  /** Its step journal, without values: name, kind, status (intent: an effect whose outcome was never recorded), attempt, size. */
  steps: z.array(z.object({
    name: z.string(), kind: journalKind, status: z.enum(STEP_PHASES), attempt: count, at: z.number(), bytes: count,
    on_unknown: z.nullable(z.enum(ON_UNKNOWN)),
  })),
  /** The effect whose outcome is unknown while a person decides (parked), else null. */
  waiting_on: z.nullable(z.string()),
  /** While parked: what a person is asked (absent a question: approve or reject), and what its deadline does. */
  question: z.nullable(z.object({
    text: z.nullable(z.string()), choices: z.array(z.string()), deadline: z.nullable(z.number()), on_deadline: z.enum(ON_DEADLINE),
    asked_at: z.nullable(z.number()),
    /** Asked for an effect that needs approval: the effect, its arguments as canonical JSON, and their SHA-256 (what approving permits, once). Absent from older coordinators. */
    approve: z.optional(z.nullable(approvalAskedSchema)),
    /** A question several people decide: who has answered and who not (absent otherwise, and from older coordinators). */
    quorum: z.optional(questionQuorumSchema),
  })),
  /**
   * Approvals of its effects, one per effect (the latest): what was approved (digest), by whom, and
   * the token of the attempt that spent it (null: not spent). Only on one message's view (GET …/messages/{id}).
   */
  permits: z.optional(z.array(z.object({
    effect: z.string(), digest: z.string(), args: z.string(), asked_token: count, granted_at: z.number(),
    by: z.object({ account: z.string(), token: z.string(), via: z.string() }), spent_token: z.nullable(count), spent_at: z.nullable(z.number()),
  }))),
  /**
   * Why some of its output was dropped (absent: none was, or older servers). Only on one message's
   * view (GET …/messages/{id}); `agent_budget`: all of it went to keep the agent within BATON_OUTPUT_BYTES_PER_AGENT.
   */
  output_dropped: z.optional(z.enum(OUTPUT_DROP_REASONS)),
  /** Who answered it, when, from where and with what (the newest 20). */
  answers: z.array(answerRecordSchema),
  /** The choice of the answer that queued it again (approve, or one the question offered). */
  resume_choice: z.nullable(z.string()),
  /** A question for a person alone (POST …/messages with a question): never run; its reply is the answer as JSON. Absent from older servers. */
  for_person: z.optional(z.boolean()),
  /** The running attempt's latest heartbeat (server ms) and its details. */
  heartbeat_at: z.nullable(z.number()),
  progress: z.unknown(),
  /** Superseded (on_busy replace): the newer message of its group that took its place; null otherwise (absent from older coordinators). */
  superseded_by: z.optional(z.nullable(count)),
  /**
   * Who cancelled it (token name, account, via), when and why; `unknown_effects`: effects whose intent
   * was recorded and whose outcome never was, so nobody knows whether they happened (never run again).
   * Null unless cancelled; absent from older coordinators.
   */
  cancelled: z.optional(z.nullable(z.object({
    at: z.number(), account: z.string(), token: z.string(), via: z.string(), reason: z.nullable(z.string()), unknown_effects: z.array(z.string()),
  }))),
});

/** GET /agents/{agent}/messages/{id}/steps/{name}: one record with its value. */
export const stepViewSchema = z.object({
  id: z.int().check(z.gte(1)),
  name: z.string(),
  kind: journalKind,
  status: z.enum(STEP_PHASES),
  attempt: count,
  value: z.unknown(),
  /** A result kept in R2 instead of inline (value is then null): GET …/blobs/{id} holds its JSON. */
  blob: z.nullable(blobRef),
  on_unknown: z.nullable(z.enum(ON_UNKNOWN)),
  /** The key to hand an external API for this effect: the same on every attempt. */
  idempotency_key: z.string(),
});

/** PUT /agents/{agent}/messages/{id}/steps/{name}: what the journal holds now; `duplicate` when it was done already. */
export const stepWrittenSchema = z.object({
  id: z.int().check(z.gte(1)), token: count, name: z.string(), status: z.enum(STEP_PHASES), duplicate: z.boolean(), value: z.unknown(),
  blob: z.optional(z.nullable(blobRef)),
  /** For an effect: the key to hand the external API, the same on every attempt (wire/step-keys.ts). */
  idempotency_key: z.optional(z.string()),
});

/** PUT /agents/{agent}/messages/{id}/blobs: an uploaded value, staged under the run's token until a write commits it. */
export const blobStagedSchema = z.object({ id: z.int().check(z.gte(1)), token: count, blob: z.string(), bytes: count });

/** POST /agents/{agent}/messages/{id}/ask: the question is stored with the run; it parks when the command exits. */
export const askedSchema = z.object({ id: z.int().check(z.gte(1)), token: count });

/** POST /agents/{agent}/messages/{id}/heartbeat: the run's deadline now (server ms). */
export const heartbeatAnswerSchema = z.object({ id: z.int().check(z.gte(1)), token: count, expires_at: z.nullable(z.number()) });

/** GET or PUT /agents/{agent}/policy. */
export const policyViewSchema = z.object({
  mode: z.enum(POLICY_MODES),
  max_running: count,
  run_timeout_seconds: z.number(),
  max_attempts: count,
  heartbeat_timeout_seconds: z.nullable(z.number()),
  /** What a new message does while its group is busy, and replace's debounce (absent from older coordinators). */
  on_busy: z.optional(z.enum(ON_BUSY)),
  debounce_ms: z.optional(z.nullable(count)),
  /** With a debounce: the ceiling in force (null: no debounce); absent from older coordinators. */
  debounce_max_ms: z.optional(z.nullable(count)),
  /** Whether the agent answers A2A, and its description (absent from older coordinators). */
  a2a: z.optional(z.boolean()),
  description: z.optional(z.nullable(z.string())),
  /**
   * The stored policy could not be read: what is wrong with it. The values shown are then the
   * defaults, which the coordinator runs with until a policy is saved again; they were not set by
   * anyone. Absent: the policy read fine (and from older coordinators).
   */
  policy_problem: z.optional(z.string()),
});

/** One page of history: at most LIMITS.historyPageMessages messages and LIMITS.historyPageBytes of JSON; `more`: ask again `?after=cursor`. */
export const messagePageSchema = z.object({ agent: z.string(), messages: z.array(messageViewSchema), cursor: count, more: z.boolean() });

export const agentListSchema = z.object({ agents: z.array(directoryEntrySchema) });
export const agentSummaryListSchema = z.object({ agents: z.array(directorySummarySchema) });
export const agentWhoListSchema = z.object({ agents: z.array(directoryWhoSchema) });

export { agentControlsSchema, presenceSchema };

/** 201 (new grant) or 200 (the same run acquiring again) from acquire, 200 from renew. */
export const leaseGrantSchema = z.object({
  run_id: z.string(),
  fence: count,
  fence_token: z.string(),
  expires_at: z.number(),
  ttl_seconds: z.int().check(z.positive()),
});

export const leaseReleasedSchema = z.object({ released: z.boolean() });

export const leaseStateSchema = z.object({
  session: z.string(),
  held: z.boolean(),
  fence: count,
  fence_token: z.string(),
  granted_at: z.nullable(z.number()),
  expires_at: z.nullable(z.number()),
  expires_in_ms: z.nullable(z.number()),
  ttl_seconds: z.nullable(z.number()),
});

export const leaseCheckSchema = z.object({ current: z.boolean(), latest_fence: count, latest_fence_token: z.string() });

/**
 * GET /whoami: the presented token's account, name and granted scopes (admin lists every scope; every token has read);
 * `agents` only for an OAuth grant limited to agents (docs/guides/remote.md#oauth).
 */
export const whoamiSchema = z.object({ account: z.string(), token: z.string(), scopes: z.array(z.enum(SCOPES)), agents: z.optional(z.array(z.string())) });

export type ErrorBody = z.infer<typeof errorBodySchema>;
export type MessageView = z.infer<typeof messageViewSchema>;
export type StepView = z.infer<typeof stepViewSchema>;
export type StepWritten = z.infer<typeof stepWrittenSchema>;
export type HeartbeatAnswer = z.infer<typeof heartbeatAnswerSchema>;
export type BlobStaged = z.infer<typeof blobStagedSchema>;
export type MessagePage = z.infer<typeof messagePageSchema>;
export type AgentList = z.infer<typeof agentListSchema>;
export type AgentSummaryList = z.infer<typeof agentSummaryListSchema>;
export type AgentControls = z.infer<typeof agentControlsSchema>;
export type LeaseGrant = z.infer<typeof leaseGrantSchema>;
export type LeaseState = z.infer<typeof leaseStateSchema>;
export type LeaseCheck = z.infer<typeof leaseCheckSchema>;
export type Whoami = z.infer<typeof whoamiSchema>;
