// The push-target routes of a message (/agents/{agent}/messages/{id}/push…), answered in the
// Worker: the target id and the body are checked here (the schema, then the private-address rule
// webhooks have, BATON_WEBHOOK_ALLOW_PRIVATE included), then one RPC on the agent's object, which
// refuses a task that ended or a budget passed (the account's, as its directory counts the other
// agents' targets) and stores nothing it refuses. A2A's push methods
// (a2a-routes.ts) come through these routes.
import type { AgentHandler } from "./agents.ts";
import { addHoldingPlace } from "./account-place.ts";
import { readJsonBody } from "./objects/http.ts";
import { directoryObjectName } from "./objects/names.ts";
import type { PushAnswer } from "./objects/a2a-push.ts";
import { webhookTargetRefusal } from "./rules/webhook-exposure.ts";
import { errorResponse, parseBody } from "./wire/protocol.ts";
import { PUSH_TARGET_ID, pushTargetBodySchema, type PushTargetList } from "./wire/push.ts";
import type { RouteKey } from "./wire/routes.ts";

type PushRoute = Extract<RouteKey, `${string} /agents/{agent}/messages/{id}/push${string}`>;

const BODY_BYTES = 8 * 1024;

function answered<T>(a: PushAnswer<T>, render: (value: T) => unknown = (v) => v): Response {
  return a.ok ? Response.json(render(a.value)) : errorResponse(a.status, a.code, a.message);
}

/** The target id in the path, decoded, or a 400 naming the rule. */
function targetId(raw: string | undefined): string | Response {
  let id: string;
  try {
    id = decodeURIComponent(raw ?? "");
  } catch {
    id = "";
  }
  return PUSH_TARGET_ID.test(id) ? id : errorResponse(400, "bad_name", "a push target id is 1-64 chars of A-Z, a-z, 0-9, '.', '_', ':' or '-', starting with a letter or digit");
}

function withTarget(handle: (target: string, ...rest: Parameters<AgentHandler>) => ReturnType<AgentHandler>): AgentHandler {
  return (call, stub, id) => {
    const target = targetId(call.params.target);
    return typeof target === "string" ? handle(target, call, stub, id) : target;
  };
}

/** BATON_WEBHOOK_ALLOW_PRIVATE as webhook-routes.ts reads it: anything but "true" keeps private addresses out. */
export const allowsPrivate = (raw: string | undefined): boolean => raw === "true";

export const pushHandlers: { [K in PushRoute]: AgentHandler } = {
  "GET /agents/{agent}/messages/{id}/push": async (_, stub, id) => answered(await stub.pushTargets(id), (targets) => ({ task: id, targets } satisfies PushTargetList)),
  "PUT /agents/{agent}/messages/{id}/push/{target}": withTarget(async (target, { request, env, account, params }, stub, id) => {
    const body = await readJsonBody(request, BODY_BYTES);
    if (!body.ok) return body.response;
    const parsed = parseBody(pushTargetBodySchema, body.data);
    if (!parsed.ok) return errorResponse(400, "bad_request", `body must be {"url": "http(s)://...", "token": "...", "auth_scheme"?: "Bearer", "auth_credentials"?: "..."}: ${parsed.message}`);
    const refused = webhookTargetRefusal(parsed.value.url, allowsPrivate(env.BATON_WEBHOOK_ALLOW_PRIVATE));
    if (refused !== null) return errorResponse(400, "bad_request", refused);
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account)));
    const agent = params.agent!;
    return answered(await addHoldingPlace({
      reserve: () => directory.reservePushTarget(agent),
      release: (place) => directory.releasePushTarget(agent, place),
      add: (elsewhere) => stub.setPushTarget(id, target, parsed.value, elsewhere),
      grew: (a) => a.ok && a.grew,
    }));
  }),
  "GET /agents/{agent}/messages/{id}/push/{target}": withTarget(async (target, _, stub, id) => {
    const all = await stub.pushTargets(id);
    if (!all.ok) return answered(all);
    const one = all.value.find((t) => t.id === target);
    return one ? Response.json(one) : errorResponse(404, "not_found", `message ${id} has no push target ${target}`);
  }),
  "DELETE /agents/{agent}/messages/{id}/push/{target}": withTarget(async (target, _, stub, id) =>
    (await stub.deletePushTarget(id, target)) ? new Response(null, { status: 204 }) : errorResponse(404, "not_found", `message ${id} has no push target ${target}`)),
};
