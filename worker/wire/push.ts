// A task's push targets on the wire, schema first: where a message's status changes are pushed
// (A2A push notifications: a task is a message), as baton's routes take them (PUT, GET, DELETE
// /agents/{agent}/messages/{id}/push/{target}) and as A2A's JSON-RPC methods name them
// (TaskPushNotificationConfig). Every push goes through the webhook outbox, signed (Standard
// Webhooks, keyed by the target's token) and checked like a webhook URL (rules/webhook-exposure.ts).
import * as z from "zod/mini";
import { isWebhookUrl, WEBHOOK_LIMITS } from "./webhooks.ts";

/** How many push targets there may be (part of LIMITS, wire/protocol.ts). */
export const PUSH_TARGET_LIMITS = {
  /** Targets one task may have. */
  pushTargetsPerTask: 4,
  /** Targets one agent's open tasks may have in all. */
  pushTargetsPerAgent: 100,
  /** Targets an account's agents may have in all (counted by the account's directory, as schedules are). */
  pushTargetsPerAccount: 1000,
} as const;

export const PUSH_LIMITS = {
  perTask: PUSH_TARGET_LIMITS.pushTargetsPerTask,
  perAgent: PUSH_TARGET_LIMITS.pushTargetsPerAgent,
  perAccount: PUSH_TARGET_LIMITS.pushTargetsPerAccount,
  /** A target's id: a path segment. */
  idChars: 64,
  /** The token keys each push's signature and rides in X-A2A-Notification-Token. */
  tokenChars: { min: 16, max: 256 },
  authSchemeChars: 64,
  authCredentialsChars: 1024,
  urlChars: WEBHOOK_LIMITS.urlChars,
} as const;

/** The header that carries a target's token, as A2A receivers read it. */
export const PUSH_TOKEN_HEADER = "x-a2a-notification-token";
/** The `baton-event-type` of every push. */
export const PUSH_EVENT_TYPE = "a2a.task_status";

export const PUSH_TARGET_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
/** Visible ASCII only: a token and credentials go into a header. */
const HEADER_VALUE = /^[\x21-\x7e]+$/;
/** An HTTP authentication scheme (RFC 9110 token). */
const AUTH_SCHEME = /^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*$/;

const URL_RULE = `url must be an http: or https: URL of at most ${PUSH_LIMITS.urlChars} characters`;
const TOKEN_RULE = `token must be ${PUSH_LIMITS.tokenChars.min}-${PUSH_LIMITS.tokenChars.max} visible ASCII characters: it keys every push's webhook-signature (a whsec_ token as Standard Webhooks reads it) and is sent as X-A2A-Notification-Token`;
const SCHEME_RULE = `auth_scheme must be an HTTP authentication scheme (Bearer, Basic...) of at most ${PUSH_LIMITS.authSchemeChars} characters`;
const CREDENTIALS_RULE = `auth_credentials must be 1-${PUSH_LIMITS.authCredentialsChars} visible ASCII characters`;

/** PUT …/messages/{id}/push/{target}: where, the token, and an Authorization header the receiver wants (scheme and credentials together). */
export const pushTargetBodySchema = z.strictObject({
  url: z.string({ error: URL_RULE }).check(z.refine(isWebhookUrl, { error: URL_RULE })),
  token: z.string({ error: TOKEN_RULE }).check(
    z.minLength(PUSH_LIMITS.tokenChars.min, { error: TOKEN_RULE }), z.maxLength(PUSH_LIMITS.tokenChars.max, { error: TOKEN_RULE }), z.regex(HEADER_VALUE, { error: TOKEN_RULE }),
  ),
  auth_scheme: z.optional(z.string({ error: SCHEME_RULE }).check(z.maxLength(PUSH_LIMITS.authSchemeChars, { error: SCHEME_RULE }), z.regex(AUTH_SCHEME, { error: SCHEME_RULE }))),
  auth_credentials: z.optional(z.string({ error: CREDENTIALS_RULE }).check(
    z.maxLength(PUSH_LIMITS.authCredentialsChars, { error: CREDENTIALS_RULE }), z.regex(HEADER_VALUE, { error: CREDENTIALS_RULE }),
  )),
}, {
  error: (issue) => issue.code === "unrecognized_keys" ? `unknown field: ${issue.keys.join(", ")}` : "the body must be a JSON object",
}).check(z.refine((b) => (b.auth_scheme === undefined) === (b.auth_credentials === undefined), { error: "give auth_scheme and auth_credentials together, or neither" }));

/** A target as GET shows it: never its token or credentials. */
export const pushTargetViewSchema = z.object({
  task: z.int().check(z.gte(1)),
  id: z.string(),
  url: z.string(),
  auth_scheme: z.nullable(z.string()),
  created_at: z.number(),
});

export const pushTargetListSchema = z.object({ task: z.int().check(z.gte(1)), targets: z.array(pushTargetViewSchema) });

export type PushTargetBody = z.infer<typeof pushTargetBodySchema>;
export type PushTargetView = z.infer<typeof pushTargetViewSchema>;
export type PushTargetList = z.infer<typeof pushTargetListSchema>;

/** A2A's TaskPushNotificationConfig, as CreateTaskPushNotificationConfig and SendMessage's configuration carry it. */
export const a2aPushConfigSchema = z.object({
  tenant: z.optional(z.string()),
  /** Absent: the task id (so a retried SendMessage names the same target). */
  id: z.optional(z.string()),
  taskId: z.optional(z.string().check(z.maxLength(128))),
  url: z.string(),
  token: z.optional(z.string()),
  authentication: z.optional(z.object({ scheme: z.string(), credentials: z.optional(z.string()) })),
});

export const a2aPushIdParamsSchema = z.object({
  tenant: z.optional(z.string()),
  taskId: z.string().check(z.minLength(1), z.maxLength(128)),
  id: z.string().check(z.maxLength(128)),
});

export const a2aPushListParamsSchema = z.object({
  tenant: z.optional(z.string()),
  taskId: z.string().check(z.minLength(1), z.maxLength(128)),
  pageSize: z.optional(z.int()),
  pageToken: z.optional(z.string()),
});

export type A2APushConfig = z.infer<typeof a2aPushConfigSchema>;
