// Each agent that opts in (policy `a2a: true`) is an A2A agent (A2A v1.0 over JSON-RPC, what
// @a2a-js/sdk 1.3 speaks): its Agent Card at /agents/{agent}/a2a/.well-known/agent-card.json and
// JSON-RPC at /agents/{agent}/a2a. A task is a message, a context its on_busy group. Each method
// goes through the route it wraps (a2a-calls.ts): SendMessage posts (the A2A messageId, scoped to
// the caller's credential, is the post's Idempotency-Key, so a retry never posts twice) or, naming a task that waits for a person,
// answers it; GetTask reads; CancelTask cancels (the runner's process tree stops); ListTasks pages
// the history; the push-notification methods set, read and remove a task's push targets through
// …/messages/{id}/push (push-routes.ts). Bad input is JSON-RPC's error and changes nothing.
import { a2aCaller, inner, sendKey, type A2ACaller, type Inner } from "./a2a-calls.ts";
import { A2A_SEND_WAIT_MS, awaitStop, outputEnd, taskStream } from "./a2a-stream.ts";
import { answerChoice, choicesOf, contextOf, messageIdOf, taskOf, taskState } from "./rules/a2a-task.ts";
import { a2aConfigOf, pushTargetOf } from "./rules/a2a-push.ts";
import { webhookTargetRefusal } from "./rules/webhook-exposure.ts";
import { allowsPrivate } from "./push-routes.ts";
import {
  a2aPushConfigSchema, a2aPushIdParamsSchema, a2aPushListParamsSchema, PUSH_TARGET_ID, pushTargetBodySchema, type A2APushConfig, type PushTargetList, type PushTargetView,
} from "./wire/push.ts";
import { readJsonBody } from "./objects/http.ts";
import type { RouteCall } from "./routes.ts";
import {
  A2A_ERRORS, A2A_PAGE_SIZE, A2A_PROTOCOL_VERSION, A2A_REQUEST_BYTES, a2aListParamsSchema, a2aRequestSchema, a2aSendParamsSchema, a2aTaskIdParamsSchema,
  type A2AAgentCard, type A2AIncomingMessage, type A2ARpcId, type A2ATask,
} from "./wire/a2a.ts";
import type { MessagePage, MessageView } from "./wire/http-responses.ts";
import { errorResponse, parseBody } from "./wire/protocol.ts";

type PolicyView = { a2a?: boolean; description?: string | null };

class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown, readonly httpStatus = 200) {
    super(message);
  }
}

const rpcResult = (id: A2ARpcId, result: unknown) => Response.json({ jsonrpc: "2.0", id, result });
const rpcError = (id: A2ARpcId, e: RpcError) =>
  Response.json({ jsonrpc: "2.0", id, error: { code: e.code, message: e.message, ...(e.data === undefined ? {} : { data: e.data }) } }, { status: e.httpStatus });

/** A refusal of the wrapped route, in JSON-RPC's terms; baton's error rides in `data.baton`. */
function refusal(read: Extract<Inner<unknown>, { ok: false }>, notFound: number = A2A_ERRORS.taskNotFound): RpcError {
  const data = { baton: read.error };
  const { message } = read.error;
  if (read.status === 403 || read.status === 401) return new RpcError(A2A_ERRORS.invalidRequest, message, data, read.status);
  if (read.status === 404) return new RpcError(notFound, message, data);
  if (read.status === 409) return new RpcError(A2A_ERRORS.unsupportedOperation, message, data);
  if (read.status === 400 || read.status === 413) return new RpcError(A2A_ERRORS.invalidParams, message, data);
  return new RpcError(A2A_ERRORS.internalError, message, data);
}

function unwrap<T>(read: Inner<T>, notFound?: number): T {
  if (!read.ok) throw refusal(read, notFound);
  return read.value;
}

const notAnA2AAgent = (agent: string) => `agent ${agent} does not answer A2A: PUT /agents/${agent}/policy {"a2a": true} (admin) opts it in`;

async function optedIn(c: A2ACaller): Promise<PolicyView> {
  const policy = unwrap(await inner<PolicyView>(c, "GET", "/policy"));
  if (policy.a2a !== true) throw new RpcError(A2A_ERRORS.unsupportedOperation, notAnA2AAgent(c.agent), undefined, 404);
  return policy;
}

/** GET /agents/{agent}/a2a/.well-known/agent-card.json */
export async function agentCard({ request, env, account, url, params }: RouteCall): Promise<Response> {
  const c = a2aCaller(request, env, account, params.agent!, url);
  const policy = await inner<PolicyView>(c, "GET", "/policy");
  if (!policy.ok) return Response.json(policy.error, { status: policy.status });
  if (policy.value.a2a !== true) return errorResponse(404, "not_found", notAnA2AAgent(c.agent));
  const description = policy.value.description ?? `baton agent ${c.agent}: a message is run by the one machine that holds its lease`;
  const card: A2AAgentCard = {
    name: c.agent,
    description,
    version: A2A_PROTOCOL_VERSION,
    supportedInterfaces: [{ url: `${c.origin}/agents/${encodeURIComponent(c.agent)}/a2a`, protocolBinding: "JSONRPC", protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: { organization: "baton", url: c.origin },
    capabilities: { streaming: true, pushNotifications: true },
    securitySchemes: {
      baton: { httpAuthSecurityScheme: { scheme: "Bearer", description: "a baton token: read for the card and GetTask/ListTasks, send to send, answer to answer a question or cancel" } },
    },
    securityRequirements: [{ schemes: { baton: { list: [] } } }],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "message", name: c.agent, description, tags: ["baton"] }],
  };
  return Response.json(card);
}

/** POST /agents/{agent}/a2a: one JSON-RPC 2.0 call (no batches). */
export async function a2aRpc({ request, env, account, url, params }: RouteCall): Promise<Response> {
  const body = await readJsonBody(request, A2A_REQUEST_BYTES);
  if (!body.ok) {
    const tooLarge = body.response.status === 413;
    return rpcError(null, new RpcError(tooLarge ? A2A_ERRORS.invalidRequest : A2A_ERRORS.parseError, tooLarge ? `a request is at most ${A2A_REQUEST_BYTES} bytes` : "body is not valid JSON", undefined, tooLarge ? 413 : 200));
  }
  const envelope = parseBody(a2aRequestSchema, body.data);
  const id = envelope.ok ? envelope.value.id : null;
  try {
    if (!envelope.ok) throw new RpcError(A2A_ERRORS.invalidRequest, `not a JSON-RPC 2.0 request: ${envelope.message}`);
    const version = request.headers.get("a2a-version");
    if (version !== null && version.trim() !== "" && version.trim().split(".")[0] !== "1") {
      throw new RpcError(A2A_ERRORS.versionNotSupported, `this agent speaks A2A ${A2A_PROTOCOL_VERSION}, not ${version}`);
    }
    const c = a2aCaller(request, env, account, params.agent!, url);
    const method = METHODS[envelope.value.method];
    if (method === undefined) throw new RpcError(A2A_ERRORS.methodNotFound, `no method ${envelope.value.method}; this agent answers ${Object.keys(METHODS).join(", ")}`);
    // Reads go beside the opt-in check (one round trip, not two); nothing is written before it passed.
    const gate = optedIn(c);
    gate.catch(() => {});
    const result = await method(c, envelope.value.params ?? {}, id, gate);
    return result instanceof Response ? result : rpcResult(id, result);
  } catch (e) {
    if (e instanceof RpcError) return rpcError(id, e);
    throw e;
  }
}

type Method = (c: A2ACaller, params: Record<string, unknown>, id: A2ARpcId, gate: Promise<unknown>) => Promise<unknown>;

/** A read beside the opt-in check: its answer only once the check passed (an agent that did not opt in says so first). */
async function read<T>(c: A2ACaller, path: string, gate: Promise<unknown>): Promise<T> {
  const value = inner<T>(c, "GET", path);
  value.catch(() => {});
  await gate;
  return unwrap(await value);
}

function paramsOf<T>(schema: Parameters<typeof parseBody<T>>[0], params: unknown): T {
  const parsed = parseBody(schema, params);
  if (!parsed.ok) throw new RpcError(A2A_ERRORS.invalidParams, `bad params: ${parsed.message}`);
  return parsed.value;
}

function taskIdOf(raw: string): number {
  const id = messageIdOf(raw);
  if (id === null) throw new RpcError(A2A_ERRORS.taskNotFound, `no task ${raw}: a task id is a message id`);
  return id;
}

/** A push config checked as its route will check it, before anything is posted (its id may default to the task's, not known yet). */
function checkPushConfig(c: A2ACaller, config: A2APushConfig): void {
  const { id, body } = pushTargetOf(config, 1);
  if (!PUSH_TARGET_ID.test(id)) throw new RpcError(A2A_ERRORS.invalidParams, "a push config id is 1-64 chars of A-Z, a-z, 0-9, '.', '_', ':' or '-'");
  const parsed = parseBody(pushTargetBodySchema, body);
  const refused = parsed.ok ? webhookTargetRefusal(parsed.value.url, allowsPrivate(c.env.BATON_WEBHOOK_ALLOW_PRIVATE)) : parsed.message;
  if (refused !== null) throw new RpcError(A2A_ERRORS.invalidParams, `bad push config: ${refused}`);
}

/** Sets a push target of task `taskId` through PUT …/messages/{id}/push/{target}. */
async function setPushTarget(c: A2ACaller, taskId: number, config: A2APushConfig): Promise<PushTargetView> {
  const { id, body } = pushTargetOf(config, taskId);
  if (!PUSH_TARGET_ID.test(id)) throw new RpcError(A2A_ERRORS.invalidParams, "a push config id is 1-64 chars of A-Z, a-z, 0-9, '.', '_', ':' or '-'");
  return unwrap(await inner<PushTargetView>(c, "PUT", `/messages/${taskId}/push/${encodeURIComponent(id)}`, body));
}

const pushPath = (taskId: string, id: string) => `/messages/${taskIdOf(taskId)}/push/${encodeURIComponent(id === "" ? taskId : id)}`;

/**
 * Posts the message, or answers the parked one it names, and sets the push target the
 * configuration carries (checked before anything is posted); the message then, and the output seq
 * a stream of it starts from.
 */
async function send(c: A2ACaller, params: Record<string, unknown>): Promise<{ m: MessageView; from: number; wait: boolean }> {
  const { message, configuration } = paramsOf(a2aSendParamsSchema, params);
  const push = configuration?.taskPushNotificationConfig;
  if (push !== undefined) checkPushConfig(c, push);
  const sent = await sendMessage(c, message, configuration?.returnImmediately !== true);
  if (push !== undefined) await setPushTarget(c, sent.m.id, push).catch((e: unknown) => {
    // A task that ended before its target was set is answered as it ended: nothing is left to push.
    if (!(e instanceof RpcError && (e.data as { baton?: { error?: string } } | undefined)?.baton?.error === "message_finished")) throw e;
  });
  return sent;
}

async function sendMessage(c: A2ACaller, message: A2AIncomingMessage, wait: boolean): Promise<{ m: MessageView; from: number; wait: boolean }> {
  if (message.role !== "ROLE_USER") throw new RpcError(A2A_ERRORS.invalidParams, "a message to an agent has role ROLE_USER");
  if (message.parts.some((p) => p.text === undefined)) throw new RpcError(A2A_ERRORS.contentTypeNotSupported, "a baton agent takes text parts only");
  const text = message.parts.map((p) => p.text!).join("\n");
  if (message.taskId !== undefined && message.taskId !== "") {
    const id = taskIdOf(message.taskId);
    const parked = unwrap(await inner<MessageView>(c, "GET", `/messages/${id}`));
    if (taskState(parked) !== "TASK_STATE_INPUT_REQUIRED") {
      throw new RpcError(A2A_ERRORS.unsupportedOperation, `task ${id} is not waiting for input (message ${parked.status}); send without taskId for new work`);
    }
    const choice = answerChoice(parked, text);
    if (choice === null) throw new RpcError(A2A_ERRORS.invalidParams, `answer task ${id} with one of: ${choicesOf(parked).join(", ")}`);
    const from = await outputEnd(c, id);
    return { m: unwrap(await inner<MessageView>(c, "POST", `/messages/${id}/answer`, { choice })), from, wait };
  }
  const posted = await inner<MessageView>(c, "POST", "/messages", { text, ...(message.contextId ? { group: message.contextId } : {}) }, { "idempotency-key": await sendKey(c, message.messageId) });
  return { m: unwrap(posted, A2A_ERRORS.invalidParams), from: 0, wait };
}

const METHODS: Record<string, Method> = {
  SendMessage: async (c, params, _, gate) => {
    await gate;
    const { m, wait } = await send(c, params);
    return { task: taskOf(wait ? await awaitStop(c, m, A2A_SEND_WAIT_MS) : m, c.agent, Date.now()) };
  },
  SendStreamingMessage: async (c, params, id, gate) => {
    await gate;
    const { m, from } = await send(c, params);
    return sse(taskStream(c, id, m, from));
  },
  SubscribeToTask: async (c, params, id, gate) => {
    const m = await read<MessageView>(c, `/messages/${taskIdOf(paramsOf(a2aTaskIdParamsSchema, params).id)}`, gate);
    return sse(taskStream(c, id, m, 0));
  },
  GetTask: async (c, params, _, gate) => {
    const p = paramsOf(a2aTaskIdParamsSchema, params);
    return taskOf(await read<MessageView>(c, `/messages/${taskIdOf(p.id)}`, gate), c.agent, Date.now(), p.historyLength);
  },
  CancelTask: async (c, params, _, gate) => {
    await gate;
    const id = taskIdOf(paramsOf(a2aTaskIdParamsSchema, params).id);
    const read = await inner<MessageView>(c, "POST", `/messages/${id}/cancel`, { reason: "cancelled over A2A" });
    if (!read.ok && read.status === 409) throw new RpcError(A2A_ERRORS.taskNotCancelable, read.error.message, { baton: read.error });
    return taskOf(unwrap(read), c.agent, Date.now());
  },
  ListTasks: async (c, params, _, gate) => {
    const p = paramsOf(a2aListParamsSchema, params);
    const after = p.pageToken === undefined || p.pageToken === "" ? 0 : Number(p.pageToken);
    if (!Number.isSafeInteger(after) || after < 0) throw new RpcError(A2A_ERRORS.invalidParams, "pageToken is the nextPageToken of the page before");
    const page = await read<MessagePage>(c, `/messages?after=${after}&limit=${p.pageSize ?? A2A_PAGE_SIZE.default}`, gate);
    const tasks: A2ATask[] = page.messages
      .filter((m) => (p.contextId === undefined || p.contextId === "" || contextOf(m) === p.contextId) && (p.status === undefined || taskState(m) === p.status))
      .map((m) => taskOf(m, c.agent, Date.now(), p.historyLength));
    return { tasks, nextPageToken: page.more ? String(page.cursor) : "", pageSize: tasks.length };
  },
  CreateTaskPushNotificationConfig: async (c, params, _, gate) => {
    await gate;
    const config = paramsOf(a2aPushConfigSchema, params);
    return a2aConfigOf(await setPushTarget(c, taskIdOf(config.taskId ?? ""), config));
  },
  GetTaskPushNotificationConfig: async (c, params, _, gate) => {
    const p = paramsOf(a2aPushIdParamsSchema, params);
    return a2aConfigOf(await read<PushTargetView>(c, pushPath(p.taskId, p.id), gate));
  },
  ListTaskPushNotificationConfigs: async (c, params, _, gate) => {
    const p = paramsOf(a2aPushListParamsSchema, params);
    const list = await read<PushTargetList>(c, `/messages/${taskIdOf(p.taskId)}/push`, gate);
    return { configs: list.targets.map(a2aConfigOf), nextPageToken: "" };
  },
  DeleteTaskPushNotificationConfig: async (c, params, _, gate) => {
    await gate;
    const p = paramsOf(a2aPushIdParamsSchema, params);
    unwrap(await inner<null>(c, "DELETE", pushPath(p.taskId, p.id)));
    return {};
  },
  GetExtendedAgentCard: async (_c, _p, _i, gate) => {
    await gate; throw new RpcError(A2A_ERRORS.extendedCardNotConfigured, "the card at .well-known/agent-card.json is the whole card"); },
};

function sse(body: ReadableStream<Uint8Array>): Response {
  return new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" } });
}
