// The dispatch: each row of the route table (wire/routes.ts) has exactly one handler here, by its
// key; the compiler refuses a row without one. index.ts has already matched the route and checked
// its scope; this checks the names in the path (400 bad_name, before any object is asked) and calls
// the handler. The account's own routes are below; the agent's are in agents.ts, the session
// leases' in leases.ts.
import { agentHandlers } from "./agents.ts";
import type { Env } from "./env.ts";
import { leaseHandlers } from "./leases.ts";
import { codeHandlers } from "./oauth/code-sign-in.ts";
import { grantHandlers } from "./oauth/grant-routes.ts";
import { mcpHandlers } from "./mcp/route.ts";
import { readBody } from "./objects/http.ts";
import { metricsResponse } from "./objects/metrics-scrape.ts";
import { directoryObjectName } from "./objects/names.ts";
import { callerOf } from "./scopes.ts";
import { deleteWebhook, getWebhook, putWebhook, webhookTestRoute } from "./webhook-routes.ts";
import type { Whoami } from "./wire/http-responses.ts";
import { AGENT_NAME, errorResponse, LIMITS, SESSION_NAME } from "./wire/protocol.ts";
import type { RouteKey, RouteMatch } from "./wire/routes.ts";

/** One request on its way to a handler: who asked (account) and the path's parameters, names already checked. */
export interface RouteCall {
  request: Request;
  env: Env;
  account: string;
  url: URL;
  params: Record<string, string>;
}

export type Handler = (call: RouteCall) => Promise<Response> | Response;
export type Handlers<K extends RouteKey> = { [P in K]: Handler };

const directoryOf = ({ env, account }: RouteCall) => env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account)));
const ACCOUNT = "the account";

/**
 * Hands a request to an object unchanged, except that its body is read here, within
 * LIMITS.requestBodyBytes, so an object that refuses it early never leaves a client stream half-read.
 */
async function forward(stub: { fetch(request: Request): Promise<Response> }, request: Request): Promise<Response> {
  const body = await readBody(request, LIMITS.requestBodyBytes);
  if (!body.ok) return body.response;
  return stub.fetch(new Request(request, request.body ? { body: body.bytes } : {}));
}

const accountHandlers: Handlers<"GET /whoami" | "GET /metrics" | "GET /agents" | "GET /observe" | "GET /webhook" | "PUT /webhook" | "DELETE /webhook" | "POST /webhook/test"> = {
  "GET /whoami": ({ request }) => {
    const { account, tokenName, scopes, agents } = callerOf(request);
    return Response.json({ account, token: tokenName, scopes: [...scopes], ...(agents === undefined ? {} : { agents: [...agents] }) } satisfies Whoami);
  },
  "GET /metrics": ({ env, account }) => metricsResponse(env, account),
  "GET /agents": async (call) => {
    const view = call.url.searchParams.get("view");
    const body = await directoryOf(call).listBody(view === "who" || view === "summary" ? view : "full");
    return new Response(body, { headers: { "content-type": "application/json" } });
  },
  "GET /observe": (call) => forward(directoryOf(call), call.request),
  "GET /webhook": (call) => getWebhook(directoryOf(call), ACCOUNT),
  "PUT /webhook": (call) => putWebhook(call.request, directoryOf(call), call.env.BATON_WEBHOOK_ALLOW_PRIVATE),
  "DELETE /webhook": (call) => deleteWebhook(directoryOf(call), ACCOUNT),
  "POST /webhook/test": (call) => webhookTestRoute(directoryOf(call), ACCOUNT, call.env.BATON_WEBHOOK_ALLOW_PRIVATE),
};

const HANDLERS: Handlers<RouteKey> = { ...accountHandlers, ...grantHandlers, ...codeHandlers, ...agentHandlers, ...leaseHandlers, ...mcpHandlers };

/** A path segment with its %-escapes decoded, or null when they are malformed (a bad name, not a crash). */
function decodedSegment(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}

/** Answers a matched request whose token has the route's scope: a bad agent or session name is 400 and reaches no object. */
export function dispatch(request: Request, env: Env, account: string, url: URL, { key, params }: RouteMatch): Promise<Response> | Response {
  const named = { ...params };
  if (params.agent !== undefined) {
    const agent = decodedSegment(params.agent);
    if (agent === null || !AGENT_NAME.test(agent)) {
      return errorResponse(400, "bad_name", "agent names are 1-63 chars of a-z, 0-9, '.', '_' or '-', starting with a letter or digit");
    }
    named.agent = agent;
  }
  if (params.session !== undefined && !SESSION_NAME.test(params.session)) {
    return errorResponse(400, "bad_name", "session names are 1-128 chars of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit");
  }
  return HANDLERS[key]({ request, env, account, url, params: named });
}
