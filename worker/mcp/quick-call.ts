// A plain tools/call of a tool that answers at once (who, get_answer, cancel, the lease tools),
// answered without the SDK's server and transport. Those cost more than the call itself: a
// transport built and connected per request, four zod parses of the message and one of the result,
// closing the server again (profiled in wrangler dev; see the MCP section of `npm run bench`). The
// quick path takes a request only when every check the SDK's path makes would pass: the transport's
// Accept, Content-Type and MCP-Protocol-Version checks, a strict JSON-RPC request (as
// JSONRPCRequestSchema), params with a name and an arguments object only, and arguments the tool's
// own input schema accepts. Anything else, a notification or a check that fails included, goes to
// the SDK, which answers it with its own error shape; so both paths answer every input alike
// (test/worker/mcp-quick.test.ts holds them side by side).
import { isJsonContentType } from "@modelcontextprotocol/sdk/shared/mediaType.js";
import { SUPPORTED_PROTOCOL_VERSIONS, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod/mini";
import { batonToolSpecs, type ToolExtra } from "../../client/mcp-tools.ts";
import type { McpCall } from "./servers.ts";

/** Tools whose plain call never waits, sends no progress and reads nothing of the request but its arguments. */
export const QUICK_TOOLS: ReadonlySet<string> = new Set(["who", "get_answer", "cancel", "lease_acquire", "lease_renew", "lease_release"]);

export interface QuickMessage {
  id: string | number;
  name: string;
  arguments: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const only = (o: Record<string, unknown>, keys: readonly string[]) => Object.keys(o).every((k) => keys.includes(k));

/** The transport's own header checks (WebStandardStreamableHTTPServerTransport.handlePostRequest and validateProtocolVersion), all passed. */
function headersPass(headers: Headers): boolean {
  const accept = headers.get("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) return false;
  if (!isJsonContentType(headers.get("content-type"))) return false;
  const version = headers.get("mcp-protocol-version");
  return version === null || SUPPORTED_PROTOCOL_VERSIONS.includes(version);
}

/** A strict JSON-RPC tools/call request of a quick tool, with nothing the SDK would read beyond name and arguments; else null. */
function quickMessage(parsed: unknown): QuickMessage | null {
  if (!isObject(parsed) || !only(parsed, ["jsonrpc", "id", "method", "params"])) return null;
  const { jsonrpc, id, method, params } = parsed;
  if (jsonrpc !== "2.0" || method !== "tools/call") return null;
  if (typeof id !== "string" && !(typeof id === "number" && Number.isSafeInteger(id))) return null;
  if (!isObject(params) || !only(params, ["name", "arguments"]) || typeof params.name !== "string" || !QUICK_TOOLS.has(params.name)) return null;
  if (!isObject(params.arguments)) return null;
  return { id, name: params.name, arguments: params.arguments };
}

const argsSchemas = new Map<string, z.ZodMiniObject>();

/** What the quick tools' handlers may be given: they read none of it, and a notification or request from one is a bug. */
function quickExtra(id: string | number): ToolExtra {
  const none = () => Promise.reject(new Error("a quick MCP tool sends no notification or request"));
  return { signal: new AbortController().signal, requestId: id, sendNotification: none, sendRequest: none } as ToolExtra;
}

/**
 * The quick tool call `parsed` is, when the quick path may take it as far as the request shows
 * (headers and message); null: the SDK's path must answer it. Checked before the endpoint's own
 * parse of the message, which a quick call does not need.
 */
export function quickCandidate(request: Request, parsed: unknown): QuickMessage | null {
  return headersPass(request.headers) ? quickMessage(parsed) : null;
}

/** The JSON reply to a quick candidate whose arguments the tool's schema accepts; null: the SDK's path must answer it (see the head of this file). */
export async function quickToolCall(message: QuickMessage, call: McpCall): Promise<Response | null> {
  const [spec] = batonToolSpecs({ agent: null, conn: call.conn, postKey: call.postKey, only: message.name });
  if (spec === undefined) return null;
  let schema = argsSchemas.get(spec.name);
  if (schema === undefined) argsSchemas.set(spec.name, (schema = z.object(spec.inputSchema)));
  const args = z.safeParse(schema, message.arguments);
  if (!args.success) return null;
  let result: CallToolResult;
  try {
    result = await spec.handler(args.data, quickExtra(message.id));
  } catch (err) {
    // As McpServer's tools/call handler answers a tool that threw.
    result = { content: [{ type: "text", text: err instanceof Error ? err.message : String(err) }], isError: true };
  }
  return Response.json({ result, jsonrpc: "2.0", id: message.id });
}
