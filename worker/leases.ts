// The session-lease HTTP API, answered in the Worker: one handler per route under /leases/{session}
// in the route table (wire/routes.ts). Each validates the body, calls one RPC method on the key's
// shard (lease-shard.ts) and renders the answer; the data routes are lease-data.ts's. The shard only
// decides and stores; everything stateless happens here, before any object is involved.
import type * as z from "zod/mini";
import { readJsonBody } from "./objects/http.ts";
import { deleteValues, getValue, listValues, putValue } from "./lease-data.ts";
import { leaseShardStub, type KeyView, type LeaseShard } from "./objects/lease-shard.ts";
import { DEFAULT_LEASE_TTL_SECONDS, fenceToken, type SessionLease } from "./rules/session-lease.ts";
import { acquireSchema, checkSchema, errorResponse, parseBody, releaseSchema, renewSchema } from "./wire/protocol.ts";
import type { Handler, Handlers, RouteCall } from "./routes.ts";
import type { RouteKey } from "./wire/routes.ts";

const MAX_BODY_BYTES = 4096;

/** What the run that holds the lease is told; the run_id is echoed only to the run that sent it. */
function grantBody(lease: SessionLease) {
  return {
    run_id: lease.runId,
    fence: lease.fence,
    fence_token: fenceToken(lease.fence),
    expires_at: lease.expiresAt,
    ttl_seconds: lease.ttlSeconds,
  };
}

/** The key's state for its own account. The holder's run_id is not shown: it is the holder's capability. */
function stateBody(session: string, { lastFence, live, now }: KeyView) {
  return {
    session,
    held: live !== null,
    fence: lastFence,
    fence_token: fenceToken(lastFence),
    granted_at: live?.grantedAt ?? null,
    expires_at: live?.expiresAt ?? null,
    expires_in_ms: live ? live.expiresAt - now : null,
    ttl_seconds: live?.ttlSeconds ?? null,
  };
}

type Shard = DurableObjectStub<LeaseShard>;
type LeaseRoute = Extract<RouteKey, `${string} /leases/{session}${string}`>;
type LeaseHandler = (call: RouteCall, shard: Shard, session: string) => Promise<Response>;

/** The JSON body of a lease operation, parsed by `schema`, or the 400 that refuses it. */
async function leaseBody<T>(request: Request, schema: z.ZodMiniType<T>): Promise<{ ok: true; value: T } | { ok: false; response: Response }> {
  const body = await readJsonBody(request, MAX_BODY_BYTES);
  if (!body.ok) return body;
  const parsed = parseBody(schema, body.data);
  return parsed.ok ? parsed : { ok: false, response: errorResponse(400, "bad_request", parsed.message) };
}

async function release({ request, account }: RouteCall, shard: Shard, session: string): Promise<Response> {
  const parsed = await leaseBody(request, releaseSchema);
  if (!parsed.ok) return parsed.response;
  return Response.json(await shard.release(account, session, parsed.value.run_id));
}

const LEASE_HANDLERS: { [K in LeaseRoute]: LeaseHandler } = {
  "GET /leases/{session}": async ({ account }, shard, session) => Response.json(stateBody(session, await shard.view(account, session))),
  "DELETE /leases/{session}": release,
  "POST /leases/{session}/release": release,
  "POST /leases/{session}/acquire": async ({ request, account }, shard, session) => {
    const parsed = await leaseBody(request, acquireSchema);
    if (!parsed.ok) return parsed.response;
    const answer = await shard.acquire(account, session, parsed.value.run_id, parsed.value.ttl_seconds ?? DEFAULT_LEASE_TTL_SECONDS);
    if (answer.kind === "held") {
      return errorResponse(409, "lease_held", "another run holds this session's lease", { expires_at: answer.expiresAt });
    }
    return Response.json(grantBody(answer.lease), { status: answer.kind === "granted" ? 201 : 200 });
  },
  "POST /leases/{session}/renew": async ({ request, account }, shard, session) => {
    const parsed = await leaseBody(request, renewSchema);
    if (!parsed.ok) return parsed.response;
    const answer = await shard.renew(account, session, parsed.value.run_id, parsed.value.ttl_seconds);
    if (answer.kind === "lost") return errorResponse(409, "lease_lost", "this run does not hold a live lease on this session");
    return Response.json(grantBody(answer.lease));
  },
  "POST /leases/{session}/check": async ({ request, account }, shard, session) => {
    const parsed = await leaseBody(request, checkSchema);
    if (!parsed.ok) return parsed.response;
    const answer = await shard.check(account, session, parsed.value.fence, parsed.value.run_id);
    return Response.json({
      current: answer.current,
      latest_fence: answer.latestFence,
      latest_fence_token: fenceToken(answer.latestFence),
    });
  },
  "GET /leases/{session}/data": ({ env, account, url }, shard, session) => getValue(env, shard, account, session, url),
  "PUT /leases/{session}/data": ({ request, env, account, url }, shard, session) => putValue(request, env, shard, account, session, url),
  "GET /leases/{session}/data/list": ({ account, url }, shard, session) => listValues(shard, account, session, url),
  "POST /leases/{session}/data/delete": ({ request, env, account }, shard, session) => deleteValues(request, env, shard, account, session),
};

/** Each lease route with its key's shard in hand; a shard that cannot be named is a 500. */
export const leaseHandlers = Object.fromEntries(
  Object.entries(LEASE_HANDLERS).map(([key, handle]): [string, Handler] => [key, (call) => {
    const session = call.params.session!;
    let shard: Shard;
    try {
      shard = leaseShardStub(call.env, call.account, session);
    } catch (err) {
      return errorResponse(500, "internal", (err as Error).message);
    }
    return handle(call, shard, session);
  }]),
) as Handlers<LeaseRoute>;
