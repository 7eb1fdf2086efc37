// What an OAuth grant may carry and what its tokens may reach, over plain data. A person signs in
// on the sign-in page (worker/oauth/authorize.ts) with a baton token and approves scopes for one
// OAuth client, optionally limited to named agents. The grant never carries a scope the signing
// token lacks, and it lives only as long as that token is configured: each request re-reads the
// token's scopes, so removing or narrowing the token narrows or ends its grants at once. A grant
// limited to agents reaches those agents' routes and nothing account-wide.
import type { Caller } from "../scopes.ts";
import { AGENT_NAME } from "../wire/protocol.ts";
import { GRANT_LIMITS } from "../wire/grants.ts";
import type { RouteKey } from "../wire/routes.ts";
import { SCOPES, type Scope } from "../wire/token-scopes.ts";

/** The scopes a client asks for by name; `agent:NAME` asks for a grant limited to that agent. */
const AGENT_SCOPE_PREFIX = "agent:";

/** What the sign-in page offers ticked: the baton scopes the client asked for, else read, send and answer (what an MCP host's tools use). */
export function offeredScopes(requested: readonly string[]): Scope[] {
  const named = SCOPES.filter((scope) => requested.includes(scope));
  return named.length > 0 ? named : ["read", "send", "answer"];
}

/** The agents a client asked to be limited to (`agent:NAME` scopes), as the page's agent field starts. */
export function requestedAgents(requested: readonly string[]): string[] {
  return requested.filter((s) => s.startsWith(AGENT_SCOPE_PREFIX)).map((s) => s.slice(AGENT_SCOPE_PREFIX.length));
}

export type Verdict<T> = { ok: true; value: T } | { ok: false; message: string };

/** The page's agent field: blank is every agent (null); else names separated by commas or spaces, each a valid agent name. */
export function parseAgentLimit(text: string): Verdict<string[] | null> {
  const names = [...new Set(text.split(/[\s,]+/).filter(Boolean))];
  if (names.length === 0) return { ok: true, value: null };
  const bad = names.find((name) => !AGENT_NAME.test(name));
  if (bad !== undefined) {
    return { ok: false, message: `${JSON.stringify(bad.slice(0, 80))} is not an agent name (1-63 chars of a-z, 0-9, '.', '_' or '-', starting with a letter or digit)` };
  }
  if (names.length > GRANT_LIMITS.agentsPerGrant) return { ok: false, message: `a grant may name at most ${GRANT_LIMITS.agentsPerGrant} agents, got ${names.length}` };
  return { ok: true, value: names.sort() };
}

/** The scopes ticked, as the form alone tells: each one of baton's, at least one. */
export function tickedScopes(ticked: readonly string[]): Verdict<Scope[]> {
  const unknown = ticked.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) return { ok: false, message: `unknown scope ${JSON.stringify(unknown[0]!.slice(0, 40))} (scopes are ${SCOPES.join(", ")})` };
  const wanted = SCOPES.filter((scope) => ticked.includes(scope));
  if (wanted.length === 0) return { ok: false, message: "tick at least one scope to approve, or deny" };
  return { ok: true, value: wanted };
}

/**
 * The scopes a person may grant: what they ticked, each a baton scope the signing token has.
 * Ticking one it lacks refuses the whole approval (nothing is granted) and names what is missing,
 * and the token by its name; null leaves the name out (a sign-in code's token, before its spend).
 */
export function grantableScopes(ticked: readonly string[], tokenScopes: readonly Scope[], tokenName: string | null): Verdict<Scope[]> {
  const wanted = tickedScopes(ticked);
  if (!wanted.ok) return wanted;
  const missing = wanted.value.filter((scope) => !tokenScopes.includes(scope));
  const who = tokenName === null ? "the token of this sign-in code" : `token ${tokenName}`;
  if (missing.length > 0) return { ok: false, message: `${who} lacks the ${missing.join(", ")} scope${missing.length > 1 ? "s" : ""}: a grant never has more than the token that approves it` };
  return wanted;
}

/** What a grant stores (encrypted, with its tokens) about the approval. */
export interface GrantProps {
  account: string;
  /** SHA-256 hex of the baton token that signed in: the grant lives only while that token is configured. */
  signer: string;
  /** The signing token's name, for who-did-what records. */
  signerName: string;
  agents: string[] | null;
}

const OAUTH_NAME_PREFIX = "oauth.";

/** How an OAuth caller is named in records (who answered, who cancelled): the signing token's name after `oauth.`, whole. */
export function oauthTokenName(signerName: string): string {
  return `${OAUTH_NAME_PREFIX}${signerName}`;
}

/**
 * The person a caller's name stands for when people are counted (rules/quorum.ts): an OAuth
 * caller is the token that signed its grant in, so one token is one person however it comes.
 */
export function personOf(tokenName: string): string {
  return tokenName.startsWith(OAUTH_NAME_PREFIX) ? tokenName.slice(OAUTH_NAME_PREFIX.length) : tokenName;
}

/**
 * The caller an OAuth access token stands for, in the shape every route's scope check reads, or
 * null when the token that signed the grant in is no longer configured (or no longer of that
 * account). Its scopes are the grant's that the signing token still has, read implied (all of them for admin);
 * `grant` (`user:grant id`) is its credential, the same across refreshes.
 */
export function grantCaller(props: GrantProps, grantScope: readonly string[], signer: Caller | null, grant: string): Caller | null {
  if (signer === null || signer.account !== props.account) return null;
  // As for a baton token (scopes.ts grantedScopes): admin grants every scope, and every scope grants read.
  const asked = grantScope.includes("admin") ? SCOPES : SCOPES.filter((scope) => scope === "read" || grantScope.includes(scope));
  const scopes = asked.filter((scope) => scope === "read" || signer.scopes.includes(scope));
  return { account: props.account, tokenName: oauthTokenName(props.signerName), credential: `grant.${grant}`, scopes, ...(props.agents === null ? {} : { agents: props.agents }) };
}

/**
 * Account-wide routes that a caller limited to agents may still call: each either says only who
 * the caller is, or (POST /mcp) makes each of its calls as a request of its own through the
 * pipeline, where the agent it names is checked.
 */
export const AGENT_LIMIT_CHECKED_BY_HANDLER: ReadonlySet<RouteKey> = new Set<RouteKey>([
  "GET /whoami",
  // Every MCP tool call is a request of its own through the pipeline, with the caller's credential: its agent is checked there.
  "POST /mcp", "GET /mcp", "DELETE /mcp",
]);

/**
 * Why a caller limited to agents may not call this route, or null when it may: an agent route of
 * one of its agents (the path's agent, decoded), or a route that checks the agent itself.
 */
export function agentLimitRefusal(caller: Caller, key: RouteKey, agent: string | null): string | null {
  if (caller.agents === undefined) return null;
  const limit = caller.agents.join(", ");
  if (agent === null) {
    if (AGENT_LIMIT_CHECKED_BY_HANDLER.has(key)) return null;
    return `token ${caller.tokenName} is limited to agents ${limit}: ${key} is account-wide`;
  }
  return caller.agents.includes(agent) ? null : `token ${caller.tokenName} is limited to agents ${limit}, not ${agent}`;
}
