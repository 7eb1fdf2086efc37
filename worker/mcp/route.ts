// POST /mcp: baton's MCP tools (client/mcp-tools.ts, the ones `baton mcp` serves on stdio) over
// Streamable HTTP, one endpoint per account (the account is the token's; each call names its
// agent, so one host config reaches every agent the token may reach). The SDK's transport runs
// stateless, a fresh server per request: a Worker's requests land on any isolate, and everything
// a session would remember is already the coordinator's (messages, answers, leases), so no
// per-session object is kept. Each tool call goes through the pipeline (pipeline.ts) as an
// internal request with the caller's own credential: the route table, its scope check, the
// agent's plan and its idempotency keys apply as to any client. `ask` and `send` run as MCP
// Tasks when the client asks for one (tasks.ts); without, they wait within the call, with progress
// notifications, and hand back get_answer's handle.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import * as z from "zod/mini";
import type { Connection } from "../../client/http.ts";
import { askShape, batonToolSpecs, postQuestion, postSend, sendShape, type ToolSpec, type ToolsOptions } from "../../client/mcp-tools.ts";
import { presentedToken, sha256 } from "../auth.ts";
import type { Env } from "../env.ts";
import { readBody } from "../objects/http.ts";
import { handle } from "../pipeline.ts";
import type { Handlers } from "../routes.ts";
import { callerOf } from "../scopes.ts";
import { AGENT_NAME, jsonTooDeep, LIMITS } from "../wire/protocol.ts";
import { messageOf, MessageTaskStore, serveTaskResults, taskOf, TASK_POLL_MS } from "./tasks.ts";

/** Tools that may wait long: Tasks where the client asks for one. */
const TASK_TOOLS = new Set(["ask", "send"]);
/** Tools whose plain call may outlive a quick answer, so they answer as an event stream (progress), as tasks/result does. */
const STREAMED_TOOLS = new Set(["ask", "send", "get_output"]);
/** How long a plain (non-task) ask keeps its call open before it hands back get_answer: below common host timeouts. */
const PLAIN_ASK_WAIT_MS = 50_000;
/** Mcp-Session-Id as the spec allows it: visible ASCII. */
const SESSION_ID = /^[\x21-\x7e]{1,128}$/;

/** JSON-RPC's own error shape, for what never reaches the SDK's server (too large, not JSON, a batch). */
function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
}

const rpcMessage = z.object({
  method: z.optional(z.string()),
  id: z.optional(z.union([z.string(), z.number()])),
  params: z.optional(z.object({ name: z.optional(z.string()), task: z.optional(z.unknown()) })),
});

async function hex(text: string): Promise<string> {
  return [...(await sha256(text))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The Idempotency-Key of a post made by one tool call: the same token, session and JSON-RPC id is
 * the same call, so a host's retry of it finds the first post. Without a session id (a client that
 * ignored the one it was given) a request id alone is no identity, so nothing is deduplicated.
 */
function postKeyOf(tokenName: string, session: string | null): ToolsOptions["postKey"] {
  if (session === null) return undefined;
  return async (extra) => `mcp-${(await hex(`${tokenName}\n${session}\n${String(extra.requestId)}`)).slice(0, 40)}`;
}

/** A server for one request: with only the called tool when it is a tools/call (`only`), else every tool. */
function serverFor(conn: Connection, plainCall: boolean, only: string | undefined, postKey: ToolsOptions["postKey"]): McpServer {
  const store = new MessageTaskStore(conn);
  const server = new McpServer({ name: "baton", version: "1" }, {
    capabilities: { tasks: { requests: { tools: { call: {} } }, cancel: {} } },
    taskStore: store,
    defaultTaskPollInterval: TASK_POLL_MS,
    // The SDK's default (ajv) is left out of the bundle (absent.ts): this server never checks a client's JSON Schema.
    jsonSchemaValidator: { getValidator: () => () => ({ valid: false, data: undefined, errorMessage: "no JSON Schema validation here: baton's MCP endpoint never elicits" }) },
  });
  serveTaskResults(server, store);
  const options = { agent: null, conn, askWaitMs: PLAIN_ASK_WAIT_MS, postKey };
  const called = batonToolSpecs({ ...options, only });
  // A call of a tool there is none of meets every tool, so the SDK answers it as for any unknown tool.
  for (const spec of called.length > 0 ? called : batonToolSpecs(options)) {
    if (TASK_TOOLS.has(spec.name) && !plainCall) registerTaskTool(server, spec, store, conn, postKey);
    else server.registerTool(spec.name, { title: spec.title, description: spec.description, inputSchema: spec.inputSchema }, spec.handler);
  }
  return server;
}

const agentArg = { agent: z.string().check(z.regex(AGENT_NAME)) };
const askArgs = z.object({ ...agentArg, ...askShape });
const sendArgs = z.object({ ...agentArg, ...sendShape });

/** `ask` or `send` as a task: its post is the task, whose status and result are the message's (tasks.ts). */
function registerTaskTool(server: McpServer, spec: ToolSpec, store: MessageTaskStore, conn: Connection, postKey: ToolsOptions["postKey"]): void {
  server.experimental.tasks.registerToolTask(spec.name, {
    title: spec.title, description: spec.description, inputSchema: spec.inputSchema, execution: { taskSupport: "optional" },
  }, {
    createTask: async (raw, extra) => {
      const key = await postKey?.(extra);
      if (spec.name === "ask") {
        const args = z.parse(askArgs, raw);
        const id = await postQuestion(args.agent, args, conn, key);
        return { task: taskOf(args.agent, await messageOf(conn, args.agent, id)) };
      }
      const args = z.parse(sendArgs, raw);
      return { task: taskOf(args.agent, await postSend(args.agent, args, conn, key)) };
    },
    getTask: async (_args, extra) => {
      const task = await store.getTask(extra.taskId);
      if (task === null) throw new Error(`no task ${extra.taskId}`);
      return task;
    },
    getTaskResult: (_args, extra) => store.toolResult(extra.taskId),
  });
}

/** POST /mcp: one JSON-RPC message in, the SDK's answer out (JSON, or an event stream for a call that may wait). */
async function postMcp(request: Request, env: Env): Promise<Response> {
  const session = request.headers.get("mcp-session-id");
  if (session !== null && !SESSION_ID.test(session)) return jsonRpcError(400, -32600, "Mcp-Session-Id must be 1-128 visible ASCII characters");
  const body = await readBody(request, LIMITS.requestBodyBytes);
  if (!body.ok) return jsonRpcError(413, -32600, `an MCP request is at most ${LIMITS.requestBodyBytes} bytes`);
  const text = new TextDecoder().decode(body.bytes);
  let parsed: unknown;
  try {
    if (jsonTooDeep(text)) throw new Error("too deep");
    parsed = JSON.parse(text);
  } catch {
    return jsonRpcError(400, -32700, "Parse error: the body is not JSON (or nests too deep)");
  }
  if (Array.isArray(parsed)) return jsonRpcError(400, -32600, "JSON-RPC batches are not accepted: send one message per request");
  const message = rpcMessage.safeParse(parsed);
  const method = message.success ? message.data.method : undefined;
  const tool = message.success && method === "tools/call" ? message.data.params?.name ?? "" : "";
  const plainCall = tool !== "" && message.success && message.data.params?.task === undefined;
  const caller = callerOf(request);
  const conn: Connection = {
    url: new URL(request.url).origin,
    token: presentedToken(request) ?? "",
    fetch: (input, init) => handle(new Request(input, init), env),
  };
  const server = serverFor(conn, plainCall, tool === "" ? undefined : tool, postKeyOf(caller.tokenName, session));
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: !((plainCall && STREAMED_TOOLS.has(tool)) || method === "tasks/result"),
  });
  await server.connect(transport);
  const response = await transport.handleRequest(request, { parsedBody: parsed });
  if (method !== "initialize" || response.status !== 200) return response;
  // A session id scopes the client's request ids, so a retried call is known (postKeyOf); the server keeps nothing under it.
  const headers = new Headers(response.headers);
  headers.set("mcp-session-id", crypto.randomUUID());
  return new Response(response.body, { status: response.status, headers });
}

function notAllowed(what: string): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: what }, id: null }), {
    status: 405, headers: { allow: "POST", "content-type": "application/json" },
  });
}

export const mcpHandlers: Handlers<"POST /mcp" | "GET /mcp" | "DELETE /mcp"> = {
  "POST /mcp": ({ request, env }) => postMcp(request, env),
  "GET /mcp": () => notAllowed("Method not allowed: this endpoint opens no stream of its own; long waits are MCP Tasks"),
  "DELETE /mcp": () => notAllowed("Method not allowed: an MCP session keeps nothing on this server, so there is nothing to end"),
};
