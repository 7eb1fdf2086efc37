// The session-lease HTTP API, answered in the Worker: it matches the route, validates the body,
// calls one RPC method on the key's shard (lease-shard.ts) and renders the answer. The shard only
// decides and stores; everything stateless happens here, before any object is involved.
import type { Env } from "./env.ts";
import { readJsonBody } from "./objects/http.ts";
import { leaseDataRequest } from "./lease-data.ts";
import { leaseShardStub, type KeyView, type LeaseShard } from "./objects/lease-shard.ts";
import { DEFAULT_LEASE_TTL_SECONDS, fenceToken, type SessionLease } from "./rules/session-lease.ts";
import { acquireSchema, checkSchema, errorResponse, parseBody, releaseSchema, renewSchema } from "./wire/protocol.ts";

const MAX_BODY_BYTES = 4096;

type Op = "acquire" | "renew" | "release" | "check" | "state";

function routeOp(method: string, pathname: string): Op | null {
  const parts = pathname.split("/").filter(Boolean);
  if (parts.length === 2) {
    if (method === "GET") return "state";
    if (method === "DELETE") return "release";
    return null;
  }
  const op = parts[2];
  if (parts.length === 3 && method === "POST" && (op === "acquire" || op === "renew" || op === "release" || op === "check")) return op;
  return null;
}

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

/** Answers one request under /leases/{session}; `session` is already a valid name of `account`. */
export async function leaseRequest(request: Request, env: Env, account: string, session: string, pathname: string): Promise<Response> {
  const parts = pathname.split("/").filter(Boolean);
  const op = parts[2] === "data" ? "data" : routeOp(request.method, pathname);
  if (op === null) return errorResponse(404, "not_found", `no lease route for ${request.method} ${pathname}`);
  let shard: DurableObjectStub<LeaseShard>;
  try {
    shard = leaseShardStub(env, account, session);
  } catch (err) {
    return errorResponse(500, "internal", (err as Error).message);
  }
  if (op === "data") return leaseDataRequest(request, env, shard, account, session, parts.slice(3).join("/"), new URL(request.url));
  if (op === "state") return Response.json(stateBody(session, await shard.view(account, session)));
  const body = await readJsonBody(request, MAX_BODY_BYTES);
  if (!body.ok) return body.response;
  switch (op) {
    case "acquire": {
      const parsed = parseBody(acquireSchema, body.data);
      if (!parsed.ok) return errorResponse(400, "bad_request", parsed.message);
      const answer = await shard.acquire(account, session, parsed.value.run_id, parsed.value.ttl_seconds ?? DEFAULT_LEASE_TTL_SECONDS);
      if (answer.kind === "held") {
        return errorResponse(409, "lease_held", "another run holds this session's lease", { expires_at: answer.expiresAt });
      }
      return Response.json(grantBody(answer.lease), { status: answer.kind === "granted" ? 201 : 200 });
    }
    case "renew": {
      const parsed = parseBody(renewSchema, body.data);
      if (!parsed.ok) return errorResponse(400, "bad_request", parsed.message);
      const answer = await shard.renew(account, session, parsed.value.run_id, parsed.value.ttl_seconds);
      if (answer.kind === "lost") return errorResponse(409, "lease_lost", "this run does not hold a live lease on this session");
      return Response.json(grantBody(answer.lease));
    }
    case "release": {
      const parsed = parseBody(releaseSchema, body.data);
      if (!parsed.ok) return errorResponse(400, "bad_request", parsed.message);
      return Response.json(await shard.release(account, session, parsed.value.run_id));
    }
    case "check": {
      const parsed = parseBody(checkSchema, body.data);
      if (!parsed.ok) return errorResponse(400, "bad_request", parsed.message);
      const answer = await shard.check(account, session, parsed.value.fence, parsed.value.run_id);
      return Response.json({
        current: answer.current,
        latest_fence: answer.latestFence,
        latest_fence_token: fenceToken(answer.latestFence),
      });
    }
  }
}
