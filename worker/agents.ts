// The agent HTTP API, answered in the Worker: it matches the route, validates the input, calls one
// typed RPC method on the agent's object (agent-object.ts) and renders the answer. Only the serve
// socket upgrade is forwarded as a request. Bad input is a 400 with a named code and reaches no object.
import type { Env } from "./env.ts";
import { downloadBlob, uploadBlob } from "./blobs.ts";
import { readJsonBody } from "./objects/http.ts";
import type { AgentCoordinator } from "./objects/agent-object.ts";
import { agentObjectName } from "./objects/names.ts";
import { CONTROL_ROUTES, type ControlRoute } from "./objects/agent-controls.ts";
import { webhookRoute, webhookTestRoute } from "./webhook-routes.ts";
import type { MessagePolicy } from "./rules/message-lease.ts";
import {
  answerSchema, approveSchema, askSchema, CANCEL_REASON_CHARS, cancelSchema, errorResponse, heartbeatSchema, LIMITS, MACHINE_LABEL, parseBody, policySchema, postMessageSchema, resumeSchema,
  STEP_NAME, stepWriteSchema, utf8Bytes,
} from "./wire/protocol.ts";
import type { Answerer } from "./objects/message-leases.ts";
import { callerOf } from "./scopes.ts";
import { webhookCounts } from "./rules/webhook-exposure.ts";
import type { Presence } from "./wire/server-frames.ts";

const SMALL_BODY_BYTES = 4 * 1024;

type Method =
  | "presence" | "post" | "messagePage" | "message" | "control" | "policy" | "setPolicy" | "resume" | "answer" | "retry" | "ask" | "stepOf" | "recordStep"
  | "heartbeatRun" | "reserveBlob" | "stageBlob" | "blobKey" | "webhook" | "setWebhook" | "deleteWebhook" | "webhookTest" | "cancel";
/**
 * The object's methods as the Worker calls them. The runtime's stub type maps every result through
 * its serializable-type check, which cannot express the JSON values (`unknown`) in a checkpoint;
 * structured clone carries them unchanged, so the methods' own types are the true ones.
 */
type Stub = { [M in Method]: (...args: Parameters<AgentCoordinator[M]>) => Promise<Awaited<ReturnType<AgentCoordinator[M]>>> } & {
  fetch(request: Request): Promise<Response>;
};

/** Answers one request under /agents/{agent}/; `agent` is already a valid name of `account`. */
export async function agentRequest(request: Request, env: Env, account: string, agent: string, url: URL): Promise<Response> {
  const stub = env.AGENTS.get(env.AGENTS.idFromName(agentObjectName(account, agent))) as unknown as Stub;
  const route = url.pathname.split("/").filter(Boolean).slice(2).join("/");
  const { method } = request;
  if (route === "serve") {
    // Refused here, unread, unless it is an upgrade: only a socket reaches the object as a request.
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return errorResponse(426, "upgrade_required", "expected a WebSocket upgrade");
    return stub.fetch(request);
  }
  if (route === "presence" && method === "GET") return Response.json(presenceFor(request, await stub.presence()));
  if (route === "messages" && method === "POST") return postMessage(request, stub, { account, token: callerOf(request).tokenName, via: viaOf(request) });
  if (route === "messages" && method === "GET") return messagePage(url, stub);
  if (route === "policy") return policy(request, stub);
  if (route === "webhook") return webhookRoute(request, stub, `agent ${agent}`, env.BATON_WEBHOOK_ALLOW_PRIVATE);
  if (route === "webhook/test" && method === "POST") return webhookTestRoute(stub, `agent ${agent} (of its own; test the account's with POST /webhook/test)`);
  if (CONTROL_ROUTES.includes(route) && method === "POST") return control(request, route as ControlRoute, stub);
  const one = route.match(/^messages\/(\d{1,15})$/);
  if (one && method === "GET") {
    const view = await stub.message(Number(one[1]));
    return view ? Response.json(view) : errorResponse(404, "not_found", `no message ${one[1]}`);
  }
  const decision = route.match(/^messages\/(\d{1,15})\/(resume|answer|approve|reject|retry|ask|cancel)$/);
  if (decision && method === "POST") {
    const id = Number(decision[1]);
    const by: Answerer = { account, token: callerOf(request).tokenName, via: viaOf(request) };
    switch (decision[2]) {
      case "resume":
        return resumeMessage(request, id, by, stub);
      case "ask":
        return askRoute(request, id, stub);
      case "retry":
        return decided(await stub.retry(id, by));
      case "cancel":
        return cancelMessage(request, id, by, stub);
      default:
        return answerMessage(request, id, decision[2] as "answer" | "approve" | "reject", by, stub);
    }
  }
  const step = route.match(/^messages\/(\d{1,15})\/steps\/([^/]+)$/);
  if (step) return stepRoute(request, Number(step[1]), decodeSegment(step[2]!), stub);
  const blobs = route.match(/^messages\/(\d{1,15})\/blobs$/);
  if (blobs && method === "PUT") return uploadBlob(request, env, Number(blobs[1]), stub);
  const blob = route.match(/^messages\/(\d{1,15})\/blobs\/([^/]+)$/);
  if (blob && method === "GET") return downloadBlob(env, Number(blob[1]), blob[2]!, stub);
  const beat = route.match(/^messages\/(\d{1,15})\/heartbeat$/);
  if (beat && method === "POST") return heartbeatRoute(request, Number(beat[1]), stub);
  return errorResponse(404, "not_found", `no route for ${method} ${url.pathname}`);
}

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

/** With an Idempotency-Key header, a retry within the key's retention returns the first post's message (200, Idempotent-Replayed). */
async function postMessage(request: Request, stub: Stub, by: Answerer): Promise<Response> {
  const key = request.headers.get("idempotency-key");
  if (key !== null && (key.length < 1 || key.length > LIMITS.idempotencyKeyChars || !MACHINE_LABEL.test(key))) {
    return errorResponse(400, "bad_request", `Idempotency-Key must be 1-${LIMITS.idempotencyKeyChars} printable characters`);
  }
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

async function policy(request: Request, stub: Stub): Promise<Response> {
  if (request.method === "GET") return Response.json(policyView(await stub.policy()));
  if (request.method !== "PUT") return errorResponse(405, "bad_request", "policy takes GET or PUT");
  const body = await readJsonBody(request, SMALL_BODY_BYTES);
  if (!body.ok) return body.response;
  const parsed = parseBody(policySchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad policy: ${parsed.message}`);
  const { mode, max_running, run_timeout_seconds, max_attempts, heartbeat_timeout_seconds, on_busy, debounce_ms } = parsed.value;
  const update: Partial<MessagePolicy> = {
    ...(heartbeat_timeout_seconds === undefined ? {} : { heartbeatTimeoutMs: heartbeat_timeout_seconds === null ? null : heartbeat_timeout_seconds * 1000 }),
    ...(mode === undefined ? {} : { mode }),
    ...(max_running === undefined ? {} : { maxRunning: max_running }),
    ...(run_timeout_seconds === undefined ? {} : { runTimeoutMs: Math.round(run_timeout_seconds * 1000) }),
    ...(max_attempts === undefined ? {} : { maxAttempts: max_attempts }),
    ...(on_busy === undefined ? {} : { onBusy: on_busy }),
    ...(debounce_ms === undefined ? {} : { debounceMs: debounce_ms === 0 ? null : debounce_ms }),
  };
  return Response.json(policyView(await stub.setPolicy(update)));
}

/** Where an answer came from, as the client says (the dashboard and the CLI say so); anything else is plain HTTP. */
function viaOf(request: Request): string {
  const via = request.headers.get("x-baton-via");
  return via === "page" || via === "cli" ? via : "http";
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

/** POST …/ask {token, run_key, question}: a served command's question, which its park carries. */
async function askRoute(request: Request, id: number, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, SMALL_BODY_BYTES * 2);
  if (!body.ok) return body.response;
  const parsed = parseBody(askSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad question: ${parsed.message}`);
  const answer = await stub.ask(id, parsed.value.token, parsed.value.run_key, parsed.value.question, parsed.value.deadline_seconds ?? null);
  if (!answer.ok) return errorResponse(answer.status, answer.code, answer.message);
  const { ok: _ok, ...asked } = answer;
  return Response.json(asked);
}

async function resumeMessage(request: Request, id: number, by: Answerer, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, LIMITS.resumeInputBytes * 2);
  if (!body.ok) return body.response;
  const parsed = parseBody(resumeSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `body must be {"input"?: "<text>", "outcome"?: "done" | "redo"}: ${parsed.message}`);
  const input = parsed.value.input ?? null;
  if (input !== null && utf8Bytes(input) > LIMITS.resumeInputBytes) {
    return errorResponse(413, "too_large", `resume input exceeds ${LIMITS.resumeInputBytes} bytes`);
  }
  return decided(await stub.resume(id, input, parsed.value.outcome ?? null, by));
}

/**
 * GET a step with its value; PUT records one under the message's token and run key (the HTTP
 * form of the `step` frame, for `baton step` and any language).
 */
async function stepRoute(request: Request, id: number, name: string, stub: Stub): Promise<Response> {
  if (!STEP_NAME.test(name)) return errorResponse(400, "bad_request", `step names are 1-${LIMITS.stepNameChars} letters, digits, '.', '_', ':' or '-'`);
  if (request.method === "GET") {
    const view = await stub.stepOf(id, name);
    return view ? Response.json(view) : errorResponse(404, "not_found", `message ${id} has no step ${name}`);
  }
  if (request.method !== "PUT") return errorResponse(405, "bad_request", "a step takes GET or PUT");
  const body = await readJsonBody(request, LIMITS.stepValueBytes + SMALL_BODY_BYTES);
  if (!body.ok) return body.response;
  const parsed = parseBody(stepWriteSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad step: ${parsed.message}`);
  const { token, run_key, kind, phase, value, blob, on_unknown } = parsed.value;
  const json = value === undefined ? null : JSON.stringify(value);
  if (json !== null && utf8Bytes(json) > LIMITS.stepValueBytes) return errorResponse(413, "too_large", `a step's value is JSON of at most ${LIMITS.stepValueBytes} bytes`);
  const answer = await stub.recordStep(id, token, run_key, { name, kind, phase, value: json, blob: blob === undefined ? null : { id: blob, bytes: 0 }, onUnknown: on_unknown ?? null });
  if (!answer.ok) return errorResponse(answer.status, answer.code, answer.message);
  const { ok: _ok, ...written } = answer;
  return Response.json(written);
}

async function heartbeatRoute(request: Request, id: number, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, LIMITS.progressBytes + SMALL_BODY_BYTES);
  if (!body.ok) return body.response;
  const parsed = parseBody(heartbeatSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad heartbeat: ${parsed.message}`);
  const { token, run_key, details } = parsed.value;
  if (details !== undefined && utf8Bytes(JSON.stringify(details)) > LIMITS.progressBytes) {
    return errorResponse(413, "too_large", `heartbeat details are JSON of at most ${LIMITS.progressBytes} bytes`);
  }
  const answer = await stub.heartbeatRun(id, token, run_key, details);
  if (!answer.ok) return errorResponse(answer.status, answer.code, answer.message);
  const { ok: _ok, ...beat } = answer;
  return Response.json(beat);
}

export function policyView(p: MessagePolicy) {
  return {
    mode: p.mode, max_running: p.maxRunning, run_timeout_seconds: p.runTimeoutMs / 1000, max_attempts: p.maxAttempts,
    heartbeat_timeout_seconds: p.heartbeatTimeoutMs === null ? null : p.heartbeatTimeoutMs / 1000,
    on_busy: p.onBusy, debounce_ms: p.debounceMs,
  };
}
