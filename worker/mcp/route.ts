// POST /mcp: baton's MCP tools (client/mcp-tools.ts, the ones `baton mcp` serves on stdio) over
// Streamable HTTP, one endpoint per account (the account is the token's; each call names its
// agent, so one host config reaches every agent the token may reach). The SDK's transport runs
// stateless, a new one per request, with a server that keeps nothing between requests
// (servers.ts): a Worker's requests land on any isolate, and everything a session would remember
// is already the coordinator's (messages, answers, leases), so no per-session object is kept.
// Each tool call goes through the pipeline (pipeline.ts) as an internal request for the caller
// the endpoint let in: the route table, its scope check and agent limit, the agent's plan and its
// idempotency keys apply as to any client. A quick tool's plain call that passes every check the
// SDK would make is answered without the SDK's server (quick-call.ts). `ask` and `send` run as MCP
// Tasks when the client asks for one (tasks.ts); without, they wait within the call, with progress
// notifications, and hand back get_answer's handle.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import * as z from "zod/mini";
import type { ToolsOptions } from "../../client/mcp-tools.ts";
import { hexDigest, presentedToken } from "../auth.ts";
import type { Env } from "../env.ts";
import { readBody } from "../objects/http.ts";
import { handle, handleAs } from "../pipeline.ts";
import type { Handlers } from "../routes.ts";
import { callerOf } from "../scopes.ts";
import { jsonTooDeep, LIMITS } from "../wire/protocol.ts";
import { quickCandidate, quickToolCall } from "./quick-call.ts";
import { serverFor, withKeptServer, type McpCall } from "./servers.ts";

/** Tools whose plain call may outlive a quick answer, so they answer as an event stream (progress), as tasks/result does. */
const STREAMED_TOOLS = new Set(["ask", "send", "get_output"]);
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

/**
 * The Idempotency-Key of a post made by one tool call: the same credential (never a token name, which many share), session and JSON-RPC id is
 * the same call, so a host's retry of it finds the first post. Without a session id (a client that
 * ignored the one it was given) a request id alone is no identity, so nothing is deduplicated.
 */
function postKeyOf(credential: string, session: string | null): ToolsOptions["postKey"] {
  if (session === null) return undefined;
  return async (extra) => `mcp-${(await hexDigest(`${credential}\n${session}\n${String(extra.requestId)}`)).slice(0, 40)}`;
}

/** What one request's tool calls go out with: `json` (answered in one JSON reply) lets them in as the caller already let in. */
function mcpCall(request: Request, url: URL, env: Env, session: string | null, json: boolean): McpCall {
  const caller = callerOf(request);
  return {
    conn: {
      url: url.origin,
      token: presentedToken(request) ?? "",
      ownAnswers: true,
      // A quick answer's calls are this request's caller's (handleAs); a streamed one's may wait for minutes, so each is let in anew.
      fetch: json ? (input, init) => handleAs(caller, new Request(input, init), env) : (input, init) => handle(new Request(input, init), env),
    },
    postKey: postKeyOf(caller.credential, session),
  };
}

/** POST /mcp: one JSON-RPC message in, the SDK's answer out (JSON, or an event stream for a call that may wait). */
async function postMcp(request: Request, url: URL, env: Env): Promise<Response> {
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
  // A quick tool's plain call that passes every check the SDK would make needs none of the SDK's machinery (quick-call.ts).
  const candidate = quickCandidate(request, parsed);
  if (candidate !== null) {
    const quick = await quickToolCall(candidate, mcpCall(request, url, env, session, true));
    if (quick !== null) return quick;
  }
  const message = rpcMessage.safeParse(parsed);
  const method = message.success ? message.data.method : undefined;
  const tool = message.success && method === "tools/call" ? message.data.params?.name ?? "" : "";
  const plainCall = tool !== "" && message.success && message.data.params?.task === undefined;
  const json = !((plainCall && STREAMED_TOOLS.has(tool)) || method === "tasks/result");
  const call = mcpCall(request, url, env, session, json);
  const answer = async (server: McpServer) => {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
    await server.connect(transport);
    return transport.handleRequest(request, { parsedBody: parsed });
  };
  // initialize leaves the client's capabilities on the server, so it gets one of its own, as a streamed answer and a notification do.
  const response = json && method !== undefined && method !== "initialize" && message.success && message.data.id !== undefined
    ? await withKeptServer(call, plainCall, answer)
    : await answer(serverFor(call, plainCall, tool === "" ? undefined : tool));
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
  "POST /mcp": ({ request, url, env }) => postMcp(request, url, env),
  "GET /mcp": () => notAllowed("Method not allowed: this endpoint opens no stream of its own; long waits are MCP Tasks"),
  "DELETE /mcp": () => notAllowed("Method not allowed: an MCP session keeps nothing on this server, so there is nothing to end"),
};
