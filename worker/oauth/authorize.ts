// GET and POST /authorize: where an OAuth client sends a person. GET checks the request (client,
// redirect URI, PKCE) with the provider and shows the sign-in page; POST takes the pasted baton
// token or a sign-in code it made (code-sign-in.ts), the ticked scopes and the agent limit, and
// either shows the page again with what is wrong (nothing granted, nothing spent, the same page
// still usable) or completes the authorization: a grant for the token's account with only scopes
// the token has (rules/oauth-grants.ts), and the redirect back to the client with its code. Deny
// sends the client access_denied. The form is bound to the browser that opened the page (the
// provider's consent handle and cookie), and the token is never stored. A code is spent last,
// after the provider accepted that binding: the provider has no way to check it without using it
// up, so what the form alone tells is checked before a code is looked up, and the binding after
// the lookup and before the spend.
import { AuthorizationError, CimdFetchError, type AuthRequest, type OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { authenticate, hexDigest, type TokenEntry } from "../auth.ts";
import type { Env } from "../env.ts";
import { readBody } from "../objects/http.ts";
import { refuseRebindingDevToken } from "../origins.ts";
import { grantableScopes, offeredScopes, parseAgentLimit, requestedAgents, tickedScopes, type GrantProps } from "../rules/oauth-grants.ts";
import { SCOPES, type Scope } from "../wire/token-scopes.ts";
import { codeSigner, type Signer } from "./code-sign-in.ts";
import { problemResponse, signInResponse } from "./page.ts";
import { NOT_HERE, OAUTH_PATHS, oauthApi } from "./server.ts";

/** How many of the account's grants a sign-in reads to find the one it replaces. */
const GRANTS_SCANNED = 500;
/** A sign-in form is a token or a code, a few scopes, a few agent names and the original query: far below this. */
const FORM_BYTES = 16 * 1024;

/** What a grant records in the clear (listed by GET /grants): never the token, only its name. */
export interface GrantMetadata {
  signerName: string;
  agents: string[] | null;
  clientName: string | null;
}

function refusal(err: unknown): Response {
  if (err instanceof AuthorizationError) {
    if (err.redirectTo) return Response.redirect(err.redirectTo, 302);
    return problemResponse(err.description);
  }
  if (err instanceof CimdFetchError) return problemResponse("the client's metadata document could not be read");
  throw err;
}

/** The authorization request again, from the query the page carried, so a refused attempt keeps its page. */
async function reparse(api: OAuthHelpers, request: Request, query: string): Promise<AuthRequest> {
  const url = new URL(OAUTH_PATHS.authorize, request.url);
  url.search = query;
  return api.parseAuthRequest(new Request(url, { method: "GET" }));
}

async function showPage(api: OAuthHelpers, authRequest: AuthRequest, query: string, form: { handle?: string; ticked?: Scope[]; agents?: string; code?: string; error?: string }): Promise<Response> {
  const details = await api.describeConsent(authRequest);
  let handle = form.handle;
  let headers = new Headers({ "cache-control": "no-store" });
  if (handle === undefined) {
    const consent = await api.beginConsent(authRequest);
    handle = consent.handle;
    headers = consent.headers;
  }
  return signInResponse({
    details, handle, query,
    ticked: form.ticked ?? offeredScopes(authRequest.scope),
    agents: form.agents ?? requestedAgents(authRequest.scope).join(", "),
    code: form.code ?? "",
    error: form.error ?? null,
  }, headers, form.error === undefined ? 200 : 400);
}

/**
 * The grants of this client that the same token (by name) approved in the account: what a new
 * approval replaces. A grant another token approved stays: approving never ends someone else's.
 */
async function ownGrantsOf(api: OAuthHelpers, account: string, clientId: string, signerName: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let read = 0;
  do {
    const page = await api.listUserGrants(account, { limit: 100, ...(cursor === undefined ? {} : { cursor }) });
    ids.push(...page.items.filter((g) => g.clientId === clientId && (g.metadata as Partial<GrantMetadata> | undefined)?.signerName === signerName).map((g) => g.id));
    read += page.items.length;
    cursor = page.cursor;
    // Each grant listed is a KV read, and an invocation has 1000: past this, an older grant of the host stays listed and revocable.
  } while (cursor !== undefined && read < GRANTS_SCANNED);
  return ids;
}

/** The caller a pasted baton token stands for (never the public dev token off loopback, never an OAuth grant's), or why not. */
async function tokenSigner(request: Request, token: string, entries: TokenEntry[], allowedOrigins: ReadonlySet<string>): Promise<Signer> {
  if (refuseRebindingDevToken(request, token, allowedOrigins)) return { ok: false, message: "the public dev token signs in on a loopback address only; use a token of your own here" };
  const signer = await authenticate(token, entries);
  if (signer === null) return { ok: false, message: "that is not a baton token of this coordinator" };
  if (signer.agents !== undefined) return { ok: false, message: "sign in with a baton token, not with an OAuth grant's" };
  return { ok: true, signer, hex: await hexDigest(token), name: signer.tokenName, spend: async () => true };
}

/** Answers GET and POST /authorize; other methods are 405. */
export async function authorizeRoute(request: Request, env: Env, entries: TokenEntry[], allowedOrigins: ReadonlySet<string>): Promise<Response> {
  const api = oauthApi(request, env);
  if (api === null) return problemResponse(NOT_HERE, 404);
  try {
    if (request.method === "GET") {
      const authRequest = await api.parseAuthRequest(request);
      return await showPage(api, authRequest, new URL(request.url).search, {});
    }
    if (request.method !== "POST") return problemResponse(`${request.method} is not how a sign-in works: open this page with GET`, 405);
    const read = await readBody(request, FORM_BYTES);
    if (!read.ok) return read.response;
    const form = new URLSearchParams(new TextDecoder().decode(read.bytes));
    const handle = form.get("handle") ?? "";
    if (form.get("decision") !== "approve") {
      const denied = await api.denyConsent(request, handle, { description: "the person denied the request" });
      return new Response(null, { status: 302, headers: denied.headers });
    }
    const query = form.get("query") ?? "";
    const ticked = form.getAll("scope");
    const agentsText = form.get("agents") ?? "";
    const token = form.get("token") ?? "";
    const code = (form.get("code") ?? "").trim();
    // The code typed is shown again (escaped) to be corrected; a token never is.
    const again = async (error: string) => showPage(api, await reparse(api, request, query), query, {
      handle, error, agents: agentsText, ticked: SCOPES.filter((s) => ticked.includes(s)), code,
    });
    if ((token === "") === (code === "")) {
      return again(token === "" ? "paste a baton token, or type a sign-in code from `baton login --code`"
        : "give a baton token or a sign-in code, not both: to use the code, clear the token field (a password manager may have filled it)");
    }
    // What the form alone tells comes first: alike for a right code and a wrong one, and no code is looked up for it.
    const wanted = tickedScopes(ticked);
    if (!wanted.ok) return again(wanted.message);
    const agents = parseAgentLimit(agentsText);
    if (!agents.ok) return again(agents.message);
    const signed = token !== "" ? await tokenSigner(request, token, entries, allowedOrigins) : await codeSigner(request, env, code, entries, allowedOrigins);
    if (!signed.ok) return again(signed.message);
    const { signer } = signed;
    const scopes = grantableScopes(wanted.value, signer.scopes, signed.name);
    if (!scopes.ok) return again(scopes.message);
    // The browser's binding before the spend: a stale tab or a missing cookie throws here and spends no code.
    const approved = await api.approveConsent(request, handle, { scope: scopes.value });
    const details = await api.describeConsent(approved.request);
    const props: GrantProps = { account: signer.account, signer: signed.hex, signerName: signer.tokenName, agents: agents.value };
    const metadata: GrantMetadata = { signerName: signer.tokenName, agents: agents.value, clientName: details.clientName === details.clientId ? null : details.clientName };
    const replaced = await ownGrantsOf(api, signer.account, approved.request.clientId, signer.tokenName);
    if (!(await signed.spend())) {
      // The handle is used up: this page cannot be posted again.
      return problemResponse("that sign-in code was used by another approval a moment ago: start signing in again from your client, with a new code from `baton login --code`", 409);
    }
    // Not the provider's replacement, which ends every grant of the client in the account: another token's too.
    const { redirectTo } = await api.completeAuthorization({ request: approved.request, userId: signer.account, metadata, scope: scopes.value, props, revokeExistingGrants: false });
    await Promise.allSettled(replaced.map((id) => api.revokeGrant(id, signer.account)));
    approved.headers.set("location", redirectTo);
    return new Response(null, { status: 302, headers: approved.headers });
  } catch (err) {
    return refusal(err);
  }
}
