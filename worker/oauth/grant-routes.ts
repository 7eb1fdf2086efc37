// GET /grants and DELETE /grants/{grant}: the account's OAuth grants, listed (newest first, never a
// token or secret) and revoked. Revoking a grant ends its access and refresh tokens at once: the
// next request with either is 401. Without the OAUTH_KV binding there are no grants (501).
import type { GrantSummary } from "@cloudflare/workers-oauth-provider";
import type { Handlers, RouteCall } from "../routes.ts";
import { errorResponse } from "../wire/protocol.ts";
import { GRANT_ID, GRANT_LIMITS, type GrantList, type GrantView } from "../wire/grants.ts";
import { SCOPES } from "../wire/token-scopes.ts";
import type { GrantMetadata } from "./authorize.ts";
import { NOT_HERE, oauthApi, oauthEnabled } from "./server.ts";

const notConfigured = () => errorResponse(501, "not_configured", "this coordinator has no KV namespace bound as OAUTH_KV: OAuth is off, so there are no grants");

function view(grant: GrantSummary): GrantView {
  const meta = (grant.metadata ?? {}) as Partial<GrantMetadata>;
  return {
    id: grant.id,
    client_id: grant.clientId,
    client_name: typeof meta.clientName === "string" ? meta.clientName : null,
    scopes: SCOPES.filter((s) => grant.scope.includes(s)),
    agents: Array.isArray(meta.agents) ? meta.agents.filter((a): a is string => typeof a === "string") : null,
    signed_in_with: typeof meta.signerName === "string" ? meta.signerName : "",
    created_at: grant.createdAt * 1000,
    expires_at: grant.expiresAt === undefined ? null : grant.expiresAt * 1000,
  };
}

/** Every grant of the account, read a page at a time up to GRANT_LIMITS.listed. */
async function listGrants({ request, env, account }: RouteCall): Promise<Response> {
  if (!oauthEnabled(env)) return notConfigured();
  const api = oauthApi(request, env);
  if (api === null) return errorResponse(404, "not_found", NOT_HERE);
  const grants: GrantView[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.listUserGrants(account, { limit: 100, ...(cursor === undefined ? {} : { cursor }) });
    grants.push(...page.items.map(view));
    cursor = page.cursor;
  } while (cursor !== undefined && grants.length < GRANT_LIMITS.listed);
  grants.sort((a, b) => b.created_at - a.created_at);
  return Response.json({ grants: grants.slice(0, GRANT_LIMITS.listed), more: cursor !== undefined || grants.length > GRANT_LIMITS.listed } satisfies GrantList);
}

async function revokeGrant({ request, env, account, params }: RouteCall): Promise<Response> {
  if (!oauthEnabled(env)) return notConfigured();
  const id = params.grant!;
  if (!GRANT_ID.test(id)) return errorResponse(400, "bad_name", "grant ids are 1-64 chars of A-Z, a-z, 0-9, '_' or '-' (as `baton grants` lists them)");
  const api = oauthApi(request, env);
  if (api === null) return errorResponse(404, "not_found", NOT_HERE);
  // The provider revokes quietly whatever the id; say so when the account had no such grant.
  let cursor: string | undefined;
  let found = false;
  do {
    const page = await api.listUserGrants(account, { limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
    found = page.items.some((g) => g.id === id);
    cursor = page.cursor;
  } while (!found && cursor !== undefined);
  if (!found) return errorResponse(404, "not_found", `the account has no grant ${id}`);
  await api.revokeGrant(id, account);
  return Response.json({ revoked: id });
}

export const grantHandlers: Handlers<"GET /grants" | "DELETE /grants/{grant}"> = {
  "GET /grants": listGrants,
  "DELETE /grants/{grant}": revokeGrant,
};
