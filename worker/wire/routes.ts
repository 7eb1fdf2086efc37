// Every HTTP route the coordinator answers, once: method and path, the scope a token needs, the
// body it takes, the answer it gives and what it is for. The Worker checks scopes and dispatches
// from this table (worker/routes.ts), clients build paths with routePath(), and
// docs/reference/routes.md is generated from it. A method and path not in it is no route at all.
import type * as z from "zod/mini";
import { leaseDataDeletedSchema, leaseDataDeleteSchema, leaseDataPageSchema, leaseDataPutAnswerSchema } from "./lease-data.ts";
import {
  agentControlsSchema, agentListSchema, askedSchema, blobStagedSchema, heartbeatAnswerSchema, leaseCheckSchema, leaseGrantSchema, leaseReleasedSchema,
  leaseStateSchema, messagePageSchema, messageViewSchema, policyViewSchema, presenceSchema, stepViewSchema, stepWrittenSchema, whoamiSchema,
} from "./http-responses.ts";
import {
  acquireSchema, answerSchema, approveSchema, askSchema, cancelSchema, checkSchema, drainSchema, heartbeatSchema, policySchema, postMessageSchema,
  releaseSchema, renewSchema, resumeSchema, stepWriteSchema,
} from "./protocol.ts";
import { outputPageSchema, outputWriteSchema, outputWrittenSchema } from "./output.ts";
import { grantListSchema, grantRevokedSchema, SIGN_IN_CODE_LIMITS, signInCodeSchema } from "./grants.ts";
import type { Scope } from "./token-scopes.ts";
import { webhookConfigSchema, webhookTestResultSchema, webhookViewSchema } from "./webhooks.ts";
import { a2aAgentCardSchema, a2aRequestSchema } from "./a2a.ts";
import { pushTargetBodySchema, pushTargetListSchema, pushTargetViewSchema } from "./push.ts";
import { scheduleBodySchema, scheduleListSchema, scheduleRemovedSchema, scheduleViewSchema } from "./schedules.ts";

/** A JSON body's schema, or what a route sends or answers that is not JSON. */
export type Payload = z.ZodMiniType | "bytes" | "websocket" | "prometheus" | "empty" | "event-stream" | "json-rpc";

export interface RouteSpec {
  scope: Scope;
  /** What the request carries (null: nothing is read). */
  body: Payload | null;
  /** What a 2xx answer carries. */
  response: Payload;
  /** One line for docs/reference/routes.md. */
  what: string;
}

const spec = (scope: Scope, body: Payload | null, response: Payload, what: string): RouteSpec => ({ scope, body, response, what });

/**
 * Keyed by "METHOD /path"; `{id}` is a message id (1-15 digits), any other `{…}` one non-empty
 * segment. Matched in this order; no two rows match the same request.
 */
export const ROUTES = {
  "GET /whoami": spec("read", null, whoamiSchema, "`{account, token, scopes}`: the presented token's account, name and granted scopes (and `agents` for an OAuth grant limited to them)"),
  "GET /metrics": spec("read", null, "prometheus", "the account's figures in the Prometheus text format ([metrics](metrics.md))"),
  "GET /agents": spec("read", null, agentListSchema, "the account's directory (`?view=who` or `?view=summary` for less)"),
  "GET /observe": spec("read", null, "websocket", "WebSocket: the directory and every presence change, live (the dashboard's feed)"),
  "GET /webhook": spec("admin", null, webhookViewSchema, "the account's webhook (never its secret)"),
  "PUT /webhook": spec("admin", webhookConfigSchema, webhookViewSchema, "set the account's webhook; a secret baton made is shown once"),
  "DELETE /webhook": spec("admin", null, "empty", "remove the account's webhook"),
  "POST /webhook/test": spec("admin", null, webhookTestResultSchema, "a signed `webhook.test` event to the account's webhook now"),
  "GET /grants": spec("admin", null, grantListSchema, "the account's OAuth grants: client, scopes, agents, who signed in ([remote](../guides/remote.md#oauth))"),
  "DELETE /grants/{grant}": spec("admin", null, grantRevokedSchema, "revoke an OAuth grant: its access and refresh tokens stop working at once"),
  "POST /sign-in-codes": spec("read", null, signInCodeSchema, `a one-time code (\`baton login --code\`) a person types on the OAuth sign-in page instead of this token: once, within ${SIGN_IN_CODE_LIMITS.minutes} minutes ([remote](../guides/remote.md#oauth))`),
  "POST /mcp": spec("read", "json-rpc", "json-rpc", "remote MCP over Streamable HTTP ([remote](../guides/remote.md)): baton's MCP tools, each call naming its `agent`; each tool call needs the scope of the route it makes"),
  "GET /mcp": spec("read", null, "empty", "always 405: no stream the server opens (the endpoint is stateless; long waits are MCP Tasks)"),
  "DELETE /mcp": spec("read", null, "empty", "always 405: an MCP session keeps nothing on the server, so there is nothing to end"),
  "GET /agents/{agent}/serve": spec("serve", "websocket", "websocket", "WebSocket: a serve connection; `?machine=LABEL` names it"),
  "GET /agents/{agent}/presence": spec("read", null, presenceSchema, "holder, standbys, connections, fence, transitions, recent messages"),
  "GET /agents/{agent}/messages": spec("read", null, messagePageSchema, "history (`?after=ID&limit=N`)"),
  "POST /agents/{agent}/messages": spec("send", postMessageSchema, messageViewSchema, "post a message (`Idempotency-Key` honoured)"),
  "GET /agents/{agent}/policy": spec("read", null, policyViewSchema, "the message policy: mode, max running, run timeout, max attempts, heartbeat timeout, on busy"),
  "PUT /agents/{agent}/policy": spec("admin", policySchema, policyViewSchema, "change the message policy"),
  "POST /agents/{agent}/pause": spec("admin", null, agentControlsSchema, "stop handing out messages; the lease stays"),
  "POST /agents/{agent}/unpause": spec("admin", null, agentControlsSchema, "hand out messages again"),
  "POST /agents/{agent}/drain": spec("admin", drainSchema, agentControlsSchema, "a machine (`{\"machine\"}`, default the holder's) finishes its run and hands the lease on"),
  "POST /agents/{agent}/undrain": spec("admin", drainSchema, agentControlsSchema, "a drained machine (default: every machine) may hold and run again"),
  "GET /agents/{agent}/webhook": spec("admin", null, webhookViewSchema, "the agent's own webhook (replaces the account's for its events)"),
  "PUT /agents/{agent}/webhook": spec("admin", webhookConfigSchema, webhookViewSchema, "set the agent's own webhook"),
  "DELETE /agents/{agent}/webhook": spec("admin", null, "empty", "remove the agent's own webhook"),
  "POST /agents/{agent}/webhook/test": spec("admin", null, webhookTestResultSchema, "a signed `webhook.test` event to the agent's webhook now"),
  "GET /agents/{agent}/a2a/.well-known/agent-card.json": spec("read", null, a2aAgentCardSchema, "the agent's A2A Agent Card, when its policy opted in (`a2a: true`; [remote](../guides/remote.md#a2a))"),
  // Each JSON-RPC method is dispatched to the route it wraps, whose scope the token needs too (worker/a2a-routes.ts).
  "POST /agents/{agent}/a2a": spec("read", a2aRequestSchema, "json-rpc", "A2A JSON-RPC 2.0 (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `ListTasks`, `SubscribeToTask`, and the four `…TaskPushNotificationConfig…` methods), each through the route it wraps and that route's scope"),
  "GET /agents/{agent}/schedules": spec("read", null, scheduleListSchema, "the agent's schedules, each with its next slot and its latest fires"),
  "POST /agents/{agent}/schedules": spec("admin", scheduleBodySchema, scheduleViewSchema, "add a schedule: `cron` + `tz`, `every_seconds` or a one-off `at` ([schedules](../guides/schedules.md))"),
  "GET /agents/{agent}/schedules/{schedule}": spec("read", null, scheduleViewSchema, "one schedule with its latest fires, linked to their messages"),
  "POST /agents/{agent}/schedules/{schedule}/pause": spec("admin", null, scheduleViewSchema, "stop posting its slots (each is recorded skipped; catch-up decides on resume)"),
  "POST /agents/{agent}/schedules/{schedule}/resume": spec("admin", null, scheduleViewSchema, "post its slots again"),
  "DELETE /agents/{agent}/schedules/{schedule}": spec("admin", null, scheduleRemovedSchema, "remove a schedule and its record of fires (its messages stay)"),
  "GET /agents/{agent}/messages/{id}": spec("read", null, messageViewSchema, "one message in full"),
  "POST /agents/{agent}/messages/{id}/resume": spec("answer", resumeSchema, messageViewSchema, "resume a parked message (`outcome`: `done` or `redo` for an unknown effect)"),
  "POST /agents/{agent}/messages/{id}/approve": spec("answer", approveSchema, messageViewSchema, "a person approves a parked message"),
  "POST /agents/{agent}/messages/{id}/reject": spec("answer", approveSchema, messageViewSchema, "a person rejects a parked message: it ends"),
  "POST /agents/{agent}/messages/{id}/answer": spec("answer", answerSchema, messageViewSchema, "a person answers the question with one of its choices"),
  "POST /agents/{agent}/messages/{id}/retry": spec("admin", null, messageViewSchema, "a failed message, queued again with a fresh set of tries: max_attempts counts from here, attempt numbers go on"),
  // Stopping work weighs like answering for it: a send-only token may not cancel, even its own message (docs/security.md).
  "POST /agents/{agent}/messages/{id}/cancel": spec("answer", cancelSchema, messageViewSchema, "stop the message wherever it is (final)"),
  // Push targets are the sender's: they make the coordinator send where they say, so every one needs send, reads included.
  "GET /agents/{agent}/messages/{id}/push": spec("send", null, pushTargetListSchema, "the message's A2A push targets (never their tokens; [remote](../guides/remote.md#push-notifications))"),
  "PUT /agents/{agent}/messages/{id}/push/{target}": spec("send", pushTargetBodySchema, pushTargetViewSchema, "set a push target: the task's status changes are POSTed there, signed with its token"),
  "GET /agents/{agent}/messages/{id}/push/{target}": spec("send", null, pushTargetViewSchema, "one push target"),
  "DELETE /agents/{agent}/messages/{id}/push/{target}": spec("send", null, "empty", "remove a push target and the pushes still waiting for it"),
  "POST /agents/{agent}/messages/{id}/ask": spec("serve", askSchema, askedSchema, "a served command's question (`baton ask`), proven by its token and run key"),
  "POST /agents/{agent}/messages/{id}/heartbeat": spec("serve", heartbeatSchema, heartbeatAnswerSchema, "a running message is alive; its progress"),
  "POST /agents/{agent}/messages/{id}/output": spec("serve", outputWriteSchema, outputWrittenSchema, "a running message's live output (`baton output`), proven by its token and run key"),
  "GET /agents/{agent}/messages/{id}/output": spec("read", null, "event-stream", "a message's output as Server-Sent Events from `?from=SEQ` or `Last-Event-ID`: stored events, then live ones until the message is final; `?format=json` (or `Accept: application/json`): one page, `outputPage` in wire/output.ts, which `&wait=SECONDS` (at most 25) holds until an event comes"),
  "GET /agents/{agent}/messages/{id}/steps/{step}": spec("serve", null, stepViewSchema, "a running message's step, with its value"),
  "PUT /agents/{agent}/messages/{id}/steps/{step}": spec("serve", stepWriteSchema, stepWrittenSchema, "record a step, proven by the message's token and run key"),
  "PUT /agents/{agent}/messages/{id}/blobs": spec("serve", "bytes", blobStagedSchema, "upload a large value (R2) for the running message"),
  "GET /agents/{agent}/messages/{id}/blobs/{blob}": spec("read", null, "bytes", "read a large value back"),
  "GET /leases/{session}": spec("read", null, leaseStateSchema, "the session lease's state"),
  "DELETE /leases/{session}": spec("serve", releaseSchema, leaseReleasedSchema, "release the session lease"),
  "POST /leases/{session}/acquire": spec("serve", acquireSchema, leaseGrantSchema, "acquire the session lease for a run id"),
  "POST /leases/{session}/renew": spec("serve", renewSchema, leaseGrantSchema, "renew it while unexpired"),
  "POST /leases/{session}/release": spec("serve", releaseSchema, leaseReleasedSchema, "release it"),
  "POST /leases/{session}/check": spec("serve", checkSchema, leaseCheckSchema, "is this fence still current?"),
  "GET /leases/{session}/data": spec("read", null, "bytes", "a value (`?key=`)"),
  "PUT /leases/{session}/data": spec("serve", "bytes", leaseDataPutAnswerSchema, "write a value (`?key=`), only as the holder with its fence"),
  "GET /leases/{session}/data/list": spec("read", null, leaseDataPageSchema, "list values by prefix, a page at a time"),
  "POST /leases/{session}/data/delete": spec("serve", leaseDataDeleteSchema, leaseDataDeletedSchema, "delete values by prefix, fenced like a write"),
} as const satisfies Record<string, RouteSpec>;

export type RouteKey = keyof typeof ROUTES;
/** A path of the table, as written there: "/agents/{agent}/messages". */
export type RoutePattern = RouteKey extends infer K ? (K extends `${string} ${infer P}` ? P : never) : never;
type ParamNames<P extends string> = P extends `${string}{${infer N}}${infer Rest}` ? N | ParamNames<Rest> : never;
/** The values a path needs, by name: `{ agent: "reviewer", id: 7 }`. */
export type RouteParams<P extends RoutePattern> = Record<ParamNames<P>, string | number>;

/** A route's method and path pattern, split from its key. */
export function routeParts(key: RouteKey): { method: string; path: string } {
  const space = key.indexOf(" ");
  return { method: key.slice(0, space), path: key.slice(space + 1) };
}

/**
 * A path of the table with its parameters filled in, each percent-encoded as one segment: what
 * clients request, so a path no route answers does not compile.
 */
export function routePath<P extends RoutePattern>(pattern: P, ...[params]: ParamNames<P> extends never ? [] : [RouteParams<P>]): string {
  const values = (params ?? {}) as Record<string, string | number>;
  return pattern.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(values[name])));
}

const MATCHERS = (Object.keys(ROUTES) as RouteKey[]).map((key) => {
  const { method, path } = routeParts(key);
  const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const literal = path.replace(/[.+?^$()[\]|\\]/g, "\\$&");
  const source = literal.replace(/\{id\}/g, "(\\d{1,15})").replace(/\{\w+\}/g, "([^/]+)");
  return { key, method, names, pattern: new RegExp(`^${source}$`) };
});

/** A matched route: its key and its path parameters, still percent-encoded as sent. */
export interface RouteMatch {
  key: RouteKey;
  params: Record<string, string>;
}

/**
 * The route that answers `method` on `pathname`, or null. Empty segments are dropped first, so
 * `/agents/a/presence/` is `/agents/a/presence`. A known path with another method is no route.
 */
export function matchRoute(method: string, pathname: string): RouteMatch | null {
  const path = `/${pathname.split("/").filter(Boolean).join("/")}`;
  for (const m of MATCHERS) {
    if (m.method !== method) continue;
    const found = m.pattern.exec(path);
    if (found) return { key: m.key, params: Object.fromEntries(m.names.map((name, i) => [name, found[i + 1]!])) };
  }
  return null;
}
