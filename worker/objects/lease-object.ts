// One Durable Object per (account, session): the HTTP session-lease API. It parses a body, loads
// the record from SQLite, applies one pure rule from session-lease.ts and stores the result before
// answering. No await sits between the read and the write, so every decision is atomic, and the
// record (with the fence counter) survives eviction and restarts.
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { httpError, readJsonBody } from "./http.ts";
import {
  acquireSchema, checkSchema, parseBody, releaseSchema, renewSchema,
} from "../wire/protocol.ts";
import {
  acquire, DEFAULT_LEASE_TTL_SECONDS, EMPTY_SESSION_LEASE, fenceToken, isCurrent, isLive, release, renew,
  type SessionLease, type SessionLeaseState,
} from "../rules/session-lease.ts";

const MAX_BODY_BYTES = 4096;

type Op = "acquire" | "renew" | "release" | "check" | "state";

/** The SQLite seam: one row holds the fence counter and the lease, written in one statement. */
class LeaseStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS session_lease (
      id INTEGER PRIMARY KEY CHECK (id = 1), last_fence INTEGER NOT NULL, run_id TEXT,
      fence INTEGER, granted_at INTEGER, expires_at INTEGER, ttl_seconds INTEGER)`);
  }

  load(): SessionLeaseState {
    const row = this.sql
      .exec<{ last_fence: number; run_id: string | null; fence: number | null; granted_at: number | null; expires_at: number | null; ttl_seconds: number | null }>(
        `SELECT last_fence, run_id, fence, granted_at, expires_at, ttl_seconds FROM session_lease WHERE id = 1`)
      .toArray()[0];
    if (!row) return EMPTY_SESSION_LEASE;
    const lease: SessionLease | null = row.run_id === null
      ? null
      : { runId: row.run_id, fence: row.fence!, grantedAt: row.granted_at!, expiresAt: row.expires_at!, ttlSeconds: row.ttl_seconds! };
    return { lastFence: row.last_fence, lease };
  }

  save(state: SessionLeaseState): void {
    const l = state.lease;
    this.sql.exec(
      `INSERT INTO session_lease (id, last_fence, run_id, fence, granted_at, expires_at, ttl_seconds)
       VALUES (1, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET last_fence = excluded.last_fence, run_id = excluded.run_id, fence = excluded.fence,
         granted_at = excluded.granted_at, expires_at = excluded.expires_at, ttl_seconds = excluded.ttl_seconds`,
      state.lastFence, l?.runId ?? null, l?.fence ?? null, l?.grantedAt ?? null, l?.expiresAt ?? null, l?.ttlSeconds ?? null,
    );
  }
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

export class LeaseCoordinator extends DurableObject<Env> {
  private readonly store: LeaseStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new LeaseStore(ctx.storage.sql);
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const op = routeOp(request.method, url.pathname);
    if (op === null) return httpError(404, "not_found", `no lease route for ${request.method} ${url.pathname}`);
    if (op === "state") return Response.json(this.state(request.headers.get("x-baton-session") ?? ""));
    const body = await readJsonBody(request, MAX_BODY_BYTES);
    if (!body.ok) return body.response;
    // Everything below runs without awaiting, so no other request interleaves with the decision.
    const now = Date.now();
    switch (op) {
      case "acquire": {
        const parsed = parseBody(acquireSchema, body.data);
        if (!parsed.ok) return httpError(400, "bad_request", parsed.message);
        const result = acquire(this.store.load(), parsed.value.run_id, parsed.value.ttl_seconds ?? DEFAULT_LEASE_TTL_SECONDS, now);
        if (result.kind === "held") {
          return httpError(409, "lease_held", "another run holds this session's lease", { expires_at: result.expiresAt });
        }
        this.store.save(result.state);
        return Response.json(grantBody(result.lease), { status: result.kind === "granted" ? 201 : 200 });
      }
      case "renew": {
        const parsed = parseBody(renewSchema, body.data);
        if (!parsed.ok) return httpError(400, "bad_request", parsed.message);
        const result = renew(this.store.load(), parsed.value.run_id, parsed.value.ttl_seconds, now);
        if (result.kind === "lost") return httpError(409, "lease_lost", "this run does not hold a live lease on this session");
        this.store.save(result.state);
        return Response.json(grantBody(result.lease));
      }
      case "release": {
        const parsed = parseBody(releaseSchema, body.data);
        if (!parsed.ok) return httpError(400, "bad_request", parsed.message);
        const before = this.store.load();
        const result = release(before, parsed.value.run_id, now);
        if (result.state !== before) this.store.save(result.state);
        return Response.json({ released: result.released });
      }
      case "check": {
        const parsed = parseBody(checkSchema, body.data);
        if (!parsed.ok) return httpError(400, "bad_request", parsed.message);
        const state = this.store.load();
        return Response.json({
          current: isCurrent(state, parsed.value.fence, parsed.value.run_id, now),
          latest_fence: state.lastFence,
          latest_fence_token: fenceToken(state.lastFence),
        });
      }
    }
  }

  /** The key's state for its own account. The holder's run_id is not shown: it is the holder's capability. */
  private state(session: string) {
    const now = Date.now();
    const { lastFence, lease } = this.store.load();
    const live = isLive(lease, now);
    return {
      session,
      held: live,
      fence: lastFence,
      fence_token: fenceToken(lastFence),
      granted_at: live ? lease.grantedAt : null,
      expires_at: live ? lease.expiresAt : null,
      expires_in_ms: live ? lease.expiresAt - now : null,
      ttl_seconds: live ? lease.ttlSeconds : null,
    };
  }
}
