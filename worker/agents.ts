// The agent HTTP API, answered in the Worker: one handler per route under /agents/{agent}/ in the
// route table (wire/routes.ts). Each validates the input, calls one typed RPC method on the agent's
// object (agent-object.ts) and renders the answer. Only the serve socket upgrade is forwarded as a
// request. Bad input is a 400 with a named code and reaches no object. A running command's own
// writes over HTTP (ask, step, heartbeat) are in run-routes.ts.
import { downloadBlob, uploadBlob } from "./blobs.ts";
import { readJsonBody } from "./objects/http.ts";
import type { AgentCoordinator } from "./objects/agent-object.ts";
import { agentObjectName } from "./objects/names.ts";
import type { ControlRoute } from "./objects/agent-controls.ts";
import { deleteWebhook, getWebhook, putWebhook, webhookTestRoute } from "./webhook-routes.ts";
import { debounceCeilingMs } from "./rules/on-busy.ts";
import type { MessagePolicy } from "./rules/message-lease.ts";
import type * as z from "zod/mini";
import type { policyViewSchema } from "./wire/http-responses.ts";
import {
  answerSchema, approveSchema, CANCEL_REASON_CHARS, cancelSchema, errorResponse, LIMITS, MACHINE_LABEL, parseBody, policySchema, postMessageSchema, resumeSchema, utf8Bytes,
} from "./wire/protocol.ts";
import type { Answerer } from "./objects/message-leases.ts";
import { callerOf } from "./scopes.ts";
import { hexDigest } from "./auth.ts";
import { webhookCounts } from "./rules/webhook-exposure.ts";
import type { Presence } from "./wire/server-frames.ts";
import type { Handler, Handlers, RouteCall } from "./routes.ts";
import type { RouteKey } from "./wire/routes.ts";
import { RESUME_OUTCOMES } from "./wire/enums.ts";
import { getOutput, postOutput } from "./output-routes.ts";
import { stillCaller } from "./pipeline.ts";
import { askRoute, getStep, heartbeatRoute, putStep } from "./run-routes.ts";
import { scheduleHandlers } from "./schedule-routes.ts";
import { pushHandlers } from "./push-routes.ts";
import { a2aRpc, agentCard } from "./a2a-routes.ts";

const SMALL_BODY_BYTES = 4 * 1024;

/**
 * The object's RPC methods as the Worker calls them. The runtime's stub type maps every result
 * through its serializable-type check, which cannot express the JSON values (`unknown`) in a
 * checkpoint; structured clone carries them unchanged, so the methods' own types are the true ones.
 */
export type Stub = {
  [M in keyof AgentCoordinator as AgentCoordinator[M] extends (...args: never[]) => unknown ? M : never]:
    AgentCoordinator[M] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
};

type AgentRoute = Extract<RouteKey, `${string} /agents/{agent}/${string}`>;
export type AgentHandler = (call: RouteCall, stub: Stub, id: number) => Promise<Response> | Response;

/** Who acted, for the routes that record it. */
const answerer = ({ request, account }: RouteCall): Answerer => ({ account, token: callerOf(request).tokenName, via: viaOf(request) });
const agentWhat = ({ params }: RouteCall) => `agent ${params.agent}`;

const AGENT_HANDLERS: { [K in AgentRoute]: AgentHandler } = {
  "GET /agents/{agent}/serve": ({ request }, stub) => {
    // Refused here, unread, unless it is an upgrade: only a socket reaches the object as a request.
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return errorResponse(426, "upgrade_required", "expected a WebSocket upgrade");
    return stub.fetch(request);
  },
  "GET /agents/{agent}/presence": async ({ request }, stub) => Response.json(presenceFor(request, await stub.presence())),
  "GET /agents/{agent}/messages": ({ url }, stub) => messagePage(url, stub),
  "POST /agents/{agent}/messages": (call, stub) => postMessage(call.request, stub, answerer(call)),
  "GET /agents/{agent}/policy": async (_, stub) => {
    const { policy, problem } = await stub.policy();
    return Response.json(policyView(policy, problem));
  },
  "PUT /agents/{agent}/policy": ({ request }, stub) => setPolicy(request, stub),
  "POST /agents/{agent}/pause": ({ request }, stub) => control(request, "pause", stub),
  "POST /agents/{agent}/unpause": ({ request }, stub) => control(request, "unpause", stub),
  "POST /agents/{agent}/drain": ({ request }, stub) => control(request, "drain", stub),
  "POST /agents/{agent}/undrain": ({ request }, stub) => control(request, "undrain", stub),
  "GET /agents/{agent}/webhook": (call, stub) => getWebhook(stub, agentWhat(call)),
  "PUT /agents/{agent}/webhook": ({ request, env }, stub) => putWebhook(request, stub, env.BATON_WEBHOOK_ALLOW_PRIVATE),
  "DELETE /agents/{agent}/webhook": (call, stub) => deleteWebhook(stub, agentWhat(call)),
  "POST /agents/{agent}/webhook/test": (call, stub) => webhookTestRoute(stub, `${agentWhat(call)} (of its own; test the account's with POST /webhook/test)`, call.env.BATON_WEBHOOK_ALLOW_PRIVATE),
  ...scheduleHandlers,
  ...pushHandlers,
  "GET /agents/{agent}/a2a/.well-known/agent-card.json": (call) => agentCard(call),
  "POST /agents/{agent}/a2a": (call) => a2aRpc(call),
  "GET /agents/{agent}/messages/{id}": async (_, stub, id) => {
    const view = await stub.message(id);
    return view ? Response.json(view) : errorResponse(404, "not_found", `no message ${id}`);
  },
  "POST /agents/{agent}/messages/{id}/resume": (call, stub, id) => resumeMessage(call.request, id, answerer(call), stub),
  "POST /agents/{agent}/messages/{id}/approve": (call, stub, id) => answerMessage(call.request, id, "approve", answerer(call), stub),
  "POST /agents/{agent}/messages/{id}/reject": (call, stub, id) => answerMessage(call.request, id, "reject", answerer(call), stub),
  "POST /agents/{agent}/messages/{id}/answer": (call, stub, id) => answerMessage(call.request, id, "answer", answerer(call), stub),
  "POST /agents/{agent}/messages/{id}/retry": async (call, stub, id) => decided(await stub.retry(id, answerer(call))),
  "POST /agents/{agent}/messages/{id}/cancel": (call, stub, id) => cancelMessage(call.request, id, answerer(call), stub),
  "POST /agents/{agent}/messages/{id}/ask": ({ request }, stub, id) => askRoute(request, id, stub),
  "POST /agents/{agent}/messages/{id}/heartbeat": ({ request }, stub, id) => heartbeatRoute(request, id, stub),
  "POST /agents/{agent}/messages/{id}/output": ({ request }, stub, id) => postOutput(request, id, stub),
  "GET /agents/{agent}/messages/{id}/output": ({ request, url, env, account }, stub, id) => getOutput(request, url, id, stub, () => stillCaller(request, env, account)),
  "GET /agents/{agent}/messages/{id}/steps/{step}": ({ request, params }, stub, id) => getStep(request, id, decodeSegment(params.step!), stub),
  "PUT /agents/{agent}/messages/{id}/steps/{step}": ({ request, params }, stub, id) => putStep(request, id, decodeSegment(params.step!), stub),
  "PUT /agents/{agent}/messages/{id}/blobs": ({ request, env }, stub, id) => uploadBlob(request, env, id, stub),
  "GET /agents/{agent}/messages/{id}/blobs/{blob}": ({ env, params }, stub, id) => downloadBlob(env, id, params.blob!, stub),
};

function agentStub({ env, account, params }: RouteCall): Stub {
  return env.AGENTS.get(env.AGENTS.idFromName(agentObjectName(account, params.agent!))) as unknown as Stub;
}

/** Each agent route with its object's stub and its message id (NaN where the path has none) in hand. */
export const agentHandlers = Object.fromEntries(
  Object.entries(AGENT_HANDLERS).map(([key, handle]): [string, Handler] => [key, (call) => handle(call, agentStub(call), Number(call.params.id))]),
) as Handlers<AgentRoute>;

/** Presence as the caller may see it: where webhooks went and what answered only for tokens that may configure them (admin). */
function presenceFor(request: Request, presence: Presence): Presence {
  if (callerOf(request).scopes.includes("admin") || presence.webhook === undefined) return presence;
  return { ...presence, webhook: webhookCounts(presence.webhook) };
}

/** A path segment as its client meant it (`a%3Ab` is the step `a:b`); an undecodable one stays as sent and fails the name check. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The key a post's Idempotency-Key is kept under: the caller's own (its credential's digest first),
 * so one caller's key, or a key A2A or MCP derived for it, never finds another caller's message, and
 * no client key is a schedule slot's (`schedule:...`).
 */
async function ownKey(credential: string, key: string): Promise<string> {
  // The first 16 bytes of the digest.
  const digest = (await hexDigest(credential)).slice(0, 32);
  return `${digest}/${key}`;
}

/** With an Idempotency-Key header, a retry by the same credential within the key's retention returns the first post's message (200, Idempotent-Replayed). */
async function postMessage(request: Request, stub: Stub, by: Answerer): Promise<Response> {
  const given = request.headers.get("idempotency-key");
  if (given !== null && (given.length < 1 || given.length > LIMITS.idempotencyKeyChars || !MACHINE_LABEL.test(given))) {
    return errorResponse(400, "bad_request", `Idempotency-Key must be 1-${LIMITS.idempotencyKeyChars} printable characters`);
  }
  const key = given === null ? null : await ownKey(callerOf(request).credential, given);
  const body = await readJsonBody(request, LIMITS.messageTextBytes * 2);
  if (!body.ok) return body.response;
  const parsed = postMessageSchema.safeParse(body.data);
  if (!parsed.success) {
    return errorResponse(400, "bad_request", `body must be {"text": "<non-empty string>", "group"?: "<label>", "run_timeout_seconds"?: <seconds>} or, for a question to a person, {"text", "question": {"text", "choices"?, "on_deadline"?}, "deadline_seconds"?}: ${parsed.error.issues[0]?.message ?? ""}`);
  }
  const { text, group, run_timeout_seconds, question, deadline_seconds, traceparent } = parsed.data;
  if (utf8Bytes(text) > LIMITS.messageTextBytes) return errorResponse(413, "too_large", `message text exceeds ${LIMITS.messageTextBytes} bytes`);
  if (question === undefined && deadline_seconds !== undefined) return errorResponse(400, "bad_request", "deadline_seconds goes with a question");
  if (question !== undefined && (group !== undefined || run_timeout_seconds !== undefined || question.step !== undefined)) {
    return errorResponse(400, "bad_request", "a question for a person is never run: it takes no group, run_timeout_seconds or step");
  }
  const runTimeoutMs = run_timeout_seconds === undefined ? undefined : Math.round(run_timeout_seconds * 1000);
  const posted = await stub.post(text, { group, runTimeoutMs, key, by, question, deadlineSeconds: deadline_seconds, traceparent });
  if (posted.status === 409) return errorResponse(409, posted.code, posted.message, { holder: posted.holder });
  return Response.json(posted.view, { status: posted.status, headers: posted.replayed ? { "Idempotent-Replayed": "true" } : {} });
}

async function messagePage(url: URL, stub: Stub): Promise<Response> {
  const after = Number(url.searchParams.get("after") ?? "0");
  const limit = Number(url.searchParams.get("limit") ?? "100");
  if (!Number.isInteger(after) || after < 0 || !Number.isInteger(limit) || limit < 1) {
    return errorResponse(400, "bad_request", "after must be an integer >= 0 and limit an integer >= 1");
  }
  return Response.json(await stub.messagePage(after, limit));
}

/** Pause, unpause, drain, undrain; drain and undrain may name a machine. */
async function control(request: Request, route: ControlRoute, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, LIMITS.frameBytes, {});
  if (!body.ok) return body.response;
  const outcome = await stub.control(route, body.data);
  if (!outcome.ok) return errorResponse(outcome.status, outcome.code, outcome.message);
  return Response.json({ agent: outcome.agent, changed: outcome.changed, ...outcome.report });
}

async function setPolicy(request: Request, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, SMALL_BODY_BYTES);
  if (!body.ok) return body.response;
  const parsed = parseBody(policySchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad policy: ${parsed.message}`);
  const { mode, max_running, run_timeout_seconds, max_attempts, heartbeat_timeout_seconds, on_busy, debounce_ms, debounce_max_ms, a2a, description } = parsed.value;
  const update: Partial<MessagePolicy> = {
    ...(heartbeat_timeout_seconds === undefined ? {} : { heartbeatTimeoutMs: heartbeat_timeout_seconds === null ? null : heartbeat_timeout_seconds * 1000 }),
    ...(mode === undefined ? {} : { mode }),
    ...(max_running === undefined ? {} : { maxRunning: max_running }),
    ...(run_timeout_seconds === undefined ? {} : { runTimeoutMs: Math.round(run_timeout_seconds * 1000) }),
    ...(max_attempts === undefined ? {} : { maxAttempts: max_attempts }),
    ...(on_busy === undefined ? {} : { onBusy: on_busy }),
    ...(debounce_ms === undefined ? {} : { debounceMs: debounce_ms === 0 ? null : debounce_ms }),
    ...(debounce_max_ms === undefined ? {} : { debounceMaxMs: debounce_max_ms === 0 ? null : debounce_max_ms }),
    ...(a2a === undefined ? {} : { a2a }),
    ...(description === undefined ? {} : { description }),
  };
  const decided = await stub.setPolicy(update);
  return decided.ok ? Response.json(policyView(decided.policy)) : errorResponse(decided.status, decided.code, `bad policy: ${decided.message}`);
}

/** Where an answer came from, as the client says (the dashboard and the CLI say so); anything else is plain HTTP. */
function viaOf(request: Request): string {
  const via = request.headers.get("x-baton-via");
  return via === "page" || via === "cli" || via === "a2a" ? via : "http";
}

function decided(answer: Awaited<ReturnType<Stub["resume"]>>): Response {
  return answer.ok ? Response.json(answer.view) : errorResponse(answer.status, answer.code, answer.message);
}

/** POST …/answer {choice, text?}; …/approve and …/reject {text?} stand for those choices. Reject ends the message. */
async function answerMessage(request: Request, id: number, kind: "answer" | "approve" | "reject", by: Answerer, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, LIMITS.answerTextBytes * 2, {});
  if (!body.ok) return body.response;
  const parsed = kind === "answer"
    ? parseBody(answerSchema, body.data)
    : ((p) => (p.ok ? { ok: true as const, value: { choice: kind, text: p.value.text } } : p))(parseBody(approveSchema, body.data));
  if (!parsed.ok) return errorResponse(400, "bad_request", `body must be ${kind === "answer" ? '{"choice": "<choice>", "text"?: "<text>"}' : '{"text"?: "<text>"}'}: ${parsed.message}`);
  const text = parsed.value.text ?? null;
  if (text !== null && utf8Bytes(text) > LIMITS.answerTextBytes) return errorResponse(413, "too_large", `an answer's text is at most ${LIMITS.answerTextBytes} bytes`);
  const { choice } = parsed.value;
  return decided(await stub.answer(id, { choice, text }, by));
}

/** POST …/cancel {reason?}: 200 with the message as it is now, also when an earlier cancel stands; 409 when it ended first. */
async function cancelMessage(request: Request, id: number, by: Answerer, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, SMALL_BODY_BYTES * 2, {});
  if (!body.ok) return body.response;
  const parsed = parseBody(cancelSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `body must be {"reason"?: "<text of at most ${CANCEL_REASON_CHARS} characters>"}: ${parsed.message}`);
  const answer = await stub.cancel(id, parsed.value.reason ?? null, by);
  return answer.ok ? Response.json(answer.view) : errorResponse(answer.status, answer.code, answer.message);
}

async function resumeMessage(request: Request, id: number, by: Answerer, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, LIMITS.resumeInputBytes * 2);
  if (!body.ok) return body.response;
  const parsed = parseBody(resumeSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `body must be {"input"?: "<text>", "outcome"?: ${RESUME_OUTCOMES.map((o) => `"${o}"`).join(" | ")}}: ${parsed.message}`);
  const input = parsed.value.input ?? null;
  if (input !== null && utf8Bytes(input) > LIMITS.resumeInputBytes) {
    return errorResponse(413, "too_large", `resume input exceeds ${LIMITS.resumeInputBytes} bytes`);
  }
  return decided(await stub.resume(id, input, parsed.value.outcome ?? null, by));
}

/** The policy as HTTP shows it; `problem`: the stored one could not be read, so these are the defaults in force. */
function policyView(p: MessagePolicy, problem: string | null = null): z.infer<typeof policyViewSchema> {
  return {
    ...(problem === null ? {} : { policy_problem: problem }),
    mode: p.mode, max_running: p.maxRunning, run_timeout_seconds: p.runTimeoutMs / 1000, max_attempts: p.maxAttempts,
    heartbeat_timeout_seconds: p.heartbeatTimeoutMs === null ? null : p.heartbeatTimeoutMs / 1000,
    on_busy: p.onBusy, debounce_ms: p.debounceMs, debounce_max_ms: debounceCeilingMs(p), a2a: p.a2a, description: p.description,
  };
}
