// Webhooks on the wire, schema first: the body that configures one (PUT /webhook, PUT
// /agents/{agent}/webhook), what GET answers, what presence says about deliveries, and the JSON
// events a receiver gets. Types are inferred from the schemas; the worker builds values of these
// types and tests validate what a receiver got against the same schemas.
import * as z from "zod/mini";
import { ON_DEADLINE, SKIP_REASONS, WEBHOOK_SCOPES } from "./enums.ts";

export const WEBHOOK_LIMITS = {
  urlChars: 2048,
  /** A secret is `whsec_` and the base64 of this many random bytes (Standard Webhooks). */
  secretBytes: { min: 24, max: 64 },
  /** After a new secret is set, the one it replaces still signs beside it this long (default a day; 0: not at all). */
  keepOldSecretSeconds: { min: 0, max: 7 * 86_400, default: 86_400 },
  /** agent.no_holder fires once the agent has had no holder this long (default 60 s). */
  noHolderAfterSeconds: { min: 1, max: 86_400, default: 60 },
  /** Characters of a message's text an event carries. */
  previewChars: 500,
} as const;

/**
 * The headers of every delivery (besides content-type: application/json): Standard Webhooks v1
 * (`webhook-id`, the event's id on every retry; `webhook-timestamp`, Unix seconds of this attempt;
 * `webhook-signature`, `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per live secret, separated
 * by spaces), and the event's type.
 */
export const WEBHOOK_HEADERS = { id: "webhook-id", timestamp: "webhook-timestamp", signature: "webhook-signature", type: "baton-event-type" } as const;

/** The `whsec_` prefix of a Standard Webhooks secret. */
export const SECRET_PREFIX = "whsec_";

export const WEBHOOK_EVENT_TYPES = [
  "message.parked", "message.escalated", "message.outcome_unknown", "message.failed", "message.cancelled", "message.superseded", "agent.no_holder", "webhook.test",
  "schedule.fired", "schedule.skipped",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

const count = z.int().check(z.nonnegative());
const millis = z.number();

/** An http: or https: URL of at most WEBHOOK_LIMITS.urlChars characters. */
export function isWebhookUrl(raw: string): boolean {
  if (raw.length > WEBHOOK_LIMITS.urlChars) return false;
  try {
    const url = new URL(raw);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/** `whsec_` and the standard base64 of WEBHOOK_LIMITS.secretBytes bytes. */
export function isWebhookSecret(raw: string): boolean {
  const b64 = raw.startsWith(SECRET_PREFIX) ? raw.slice(SECRET_PREFIX.length) : null;
  if (b64 === null || b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return false;
  const bytes = (b64.length / 4) * 3 - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);
  return bytes >= WEBHOOK_LIMITS.secretBytes.min && bytes <= WEBHOOK_LIMITS.secretBytes.max;
}

const URL_RULE = `url must be an http: or https: URL of at most ${WEBHOOK_LIMITS.urlChars} characters`;
const SECRET_RULE = `secret must be whsec_ and the base64 of ${WEBHOOK_LIMITS.secretBytes.min}-${WEBHOOK_LIMITS.secretBytes.max} random bytes (leave it out and baton makes one)`;
const KEEP_RULE = `keep_old_secret_seconds must be a whole number from ${WEBHOOK_LIMITS.keepOldSecretSeconds.min} to ${WEBHOOK_LIMITS.keepOldSecretSeconds.max}`;
const NO_HOLDER_RULE = `no_holder_after_seconds must be a whole number from ${WEBHOOK_LIMITS.noHolderAfterSeconds.min} to ${WEBHOOK_LIMITS.noHolderAfterSeconds.max}`;

/**
 * PUT /webhook and PUT /agents/{agent}/webhook; every refusal names its field and its rule. Without
 * `secret`, a new webhook gets one made by baton (shown once, in the answer) and an existing one
 * keeps its own; `rotate_secret: true` makes a new one. A new secret replaces the old one, which
 * still signs beside it for `keep_old_secret_seconds`.
 */
export const webhookConfigSchema = z.strictObject({
  url: z.string({ error: URL_RULE }).check(z.refine(isWebhookUrl, { error: URL_RULE })),
  secret: z.optional(z.string({ error: SECRET_RULE }).check(z.refine(isWebhookSecret, { error: SECRET_RULE }))),
  rotate_secret: z.optional(z.boolean({ error: "rotate_secret must be true or false" })),
  keep_old_secret_seconds: z.optional(z.int({ error: KEEP_RULE }).check(
    z.gte(WEBHOOK_LIMITS.keepOldSecretSeconds.min, { error: KEEP_RULE }), z.lte(WEBHOOK_LIMITS.keepOldSecretSeconds.max, { error: KEEP_RULE }),
  )),
  no_holder_after_seconds: z.optional(z.int({ error: NO_HOLDER_RULE }).check(
    z.gte(WEBHOOK_LIMITS.noHolderAfterSeconds.min, { error: NO_HOLDER_RULE }), z.lte(WEBHOOK_LIMITS.noHolderAfterSeconds.max, { error: NO_HOLDER_RULE }),
  )),
}, {
  error: (issue) => issue.code === "unrecognized_keys" ? `unknown field: ${issue.keys.join(", ")}` : "the body must be a JSON object",
}).check(z.refine((b) => !(b.secret !== undefined && b.rotate_secret === true), { error: "give secret or rotate_secret, not both" }));

/** GET (and the answer to PUT) of a webhook: never the secret. `link_origin` is where event links point. */
export const webhookViewSchema = z.object({
  scope: z.enum(WEBHOOK_SCOPES),
  agent: z.nullable(z.string()),
  url: z.string(),
  no_holder_after_seconds: count,
  link_origin: z.string(),
  updated_at: millis,
  /** Only in the answer to the PUT that made it, when baton made it: it is never shown again. */
  secret: z.optional(z.string()),
  /** While a replaced secret still signs beside the current one: until when (null: only the current one signs). */
  old_secret_expires_at: z.nullable(millis),
});

/** POST /webhook/test and /agents/{agent}/webhook/test: one signed `webhook.test` event, sent at once, and what the receiver said. */
export const webhookTestResultSchema = z.object({
  id: z.string(),
  url: z.string(),
  /** The receiver's HTTP status; null when it did not answer (network error or timeout). */
  status: z.nullable(z.int()),
  /** True on a 2xx answer. */
  delivered: z.boolean(),
  error: z.nullable(z.string()),
});

/** What presence says about an agent's webhook deliveries. */
export const webhookReportSchema = z.object({
  /** Which webhook events go to: the agent's own, the account's (as last fetched), or none known. */
  configured: z.nullable(z.enum(WEBHOOK_SCOPES)),
  /** The receiver's host only; never the URL's path or the secret. */
  host: z.nullable(z.string()),
  /** Events waiting to be delivered (at most 1000; older ones are dropped). */
  pending: count,
  next_retry_at: z.nullable(millis),
  last_attempt_at: z.nullable(millis),
  /** The HTTP status of the last attempt; null when it got no answer (network error or timeout). */
  last_status: z.nullable(z.int()),
  last_error: z.nullable(z.string()),
  delivered: count,
  /** Attempts that got no 2xx answer (each is retried). */
  failed_attempts: count,
  /** Events given up: 24 h without a 2xx, or pushed out of a full outbox. */
  dropped: count,
});

const eventBase = {
  /** `evt_` and 32 hex digits: the same on every retry of one event. */
  id: z.string().check(z.regex(/^evt_[0-9a-f]{32}$/)),
  created_at: millis,
  account: z.string(),
  agent: z.string(),
  /** The dashboard, at the agent (and message), on the coordinator origin that configured the webhook. */
  link: z.string(),
};

const messageBase = {
  id: z.int().check(z.gte(1)),
  /** The first WEBHOOK_LIMITS.previewChars characters of the message's text. */
  text_preview: z.string(),
  text_truncated: z.boolean(),
  /**
   * Hand-outs so far, the number of its latest attempt (numbers go on across a person's retry);
   * `retried_after`, present after a retry: the hand-outs before the latest one; `declined`, present
   * when any: of the hand-outs since, those a stopping runner gave back unstarted. max_attempts counts
   * attempts - retried_after - declined.
   */
  attempts: count,
  retried_after: z.optional(count),
  declined: z.optional(count),
};

/** What the person is asked (null text: approve or reject), its choices, and what its deadline does. */
const questionFacts = z.object({
  text: z.nullable(z.string()), choices: z.array(z.string()), on_deadline: z.enum(ON_DEADLINE),
  /** A question several people decide: approvals and rejects it needs, and who may answer (null: anyone who may answer). */
  quorum: z.optional(z.object({ needs: z.int(), reject_needs: z.int(), approvers: z.nullable(z.array(z.string())) })),
});

export const webhookEventSchema = z.discriminatedUnion("type", [
  /** A runner parked the message for a person, with its question; at `park_deadline` (null: it waits) the question's on_deadline happens unless answered. */
  z.object({ ...eventBase, type: z.literal("message.parked"), message: z.object({ ...messageBase, park_deadline: z.nullable(millis), question: z.optional(questionFacts) }) }),
  /** Nobody answered by the deadline of a question whose on_deadline is escalate: it waits until the new `park_deadline`. */
  z.object({ ...eventBase, type: z.literal("message.escalated"), message: z.object({ ...messageBase, park_deadline: z.nullable(millis), question: questionFacts }) }),
  /** The message parked because an effect's outcome is unknown: a person says done or redo for `waiting_on`. */
  z.object({
    ...eventBase, type: z.literal("message.outcome_unknown"),
    message: z.object({ ...messageBase, park_deadline: z.nullable(millis), waiting_on: z.string() }),
  }),
  /** The message failed for good (attempts used up, or its park deadline passed). */
  z.object({ ...eventBase, type: z.literal("message.failed"), message: z.object({ ...messageBase, error: z.nullable(z.string()) }) }),
  /** A person cancelled the message (`by`: the name of their token, `via`: page, cli or http): it never runs again. */
  z.object({
    ...eventBase, type: z.literal("message.cancelled"),
    message: z.object({ ...messageBase, reason: z.nullable(z.string()), by: z.string(), via: z.string(), was: z.enum(["queued", "running", "parked"]) }),
  }),
  /** A queued message that never started was replaced by a newer one of its group (on_busy replace): it never runs. */
  z.object({ ...eventBase, type: z.literal("message.superseded"), message: z.object({ ...messageBase, superseded_by: z.int().check(z.gte(1)) }) }),
  /** The agent has had no leaseholder since `no_holder_since`, for longer than `after_seconds`; once per outage. */
  z.object({ ...eventBase, type: z.literal("agent.no_holder"), no_holder_since: millis, after_seconds: count }),
  /** A schedule's slot posted its message; `late_ms`: from the slot's time (with its jitter) to the post, by the coordinator's clock. */
  z.object({
    ...eventBase, type: z.literal("schedule.fired"),
    schedule: z.object({ id: z.int().check(z.gte(1)), slot: millis, late_ms: count }), message_id: z.int().check(z.gte(1)),
  }),
  /** `count` slots of a schedule (with `count_at_least`: more than `count`), from `slot` to `last_slot`, were skipped: the agent or schedule was paused, they were missed past the late grace, on_busy reject refused one, or the fire threw (`failed`, with `error`, at most LIMITS.scheduleErrorBytes UTF-8 bytes: rolled back, not posted). */
  z.object({
    ...eventBase, type: z.literal("schedule.skipped"),
    schedule: z.object({ id: z.int().check(z.gte(1)), slot: millis, last_slot: millis, count, count_at_least: z.optional(z.literal(true)) }), reason: z.enum(SKIP_REASONS),
    error: z.optional(z.string()),
  }),
  /** Sent once, at once, by `baton webhook test` (never queued or retried); `agent` is null for the account's webhook. */
  z.object({ ...eventBase, type: z.literal("webhook.test"), agent: z.nullable(z.string()) }),
]);

export type WebhookConfigBody = z.infer<typeof webhookConfigSchema>;
export type WebhookView = z.infer<typeof webhookViewSchema>;
export type WebhookReport = z.infer<typeof webhookReportSchema>;
export type WebhookEvent = z.infer<typeof webhookEventSchema>;
export type WebhookTestResult = z.infer<typeof webhookTestResultSchema>;
