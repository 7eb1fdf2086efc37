// OAuth grants on the wire, schema first: what GET /grants lists and DELETE /grants/{grant}
// answers. A grant is what a person approved on the sign-in page (worker/oauth/authorize.ts) for
// one OAuth client: baton scopes, optionally limited to named agents, signed in with one baton
// token, or with a one-time sign-in code that token asked for (`baton login --code`, POST
// /sign-in-codes). Worker, CLI (`baton grants`, `baton login`) and dashboard read these same schemas.
import * as z from "zod/mini";
import { SCOPES } from "./token-scopes.ts";

export const GRANT_LIMITS = {
  /** Agents one grant may be limited to. */
  agentsPerGrant: 32,
  /** Grants GET /grants lists in one answer (the newest first). */
  listed: 200,
} as const;

/** A grant id as the OAuth provider makes them (16 URL-safe characters); checked before any storage is read. */
export const GRANT_ID = /^[A-Za-z0-9_-]{1,64}$/;

export const grantViewSchema = z.object({
  id: z.string(),
  client_id: z.string(),
  /** The client's self-chosen name from its registration: not verified. */
  client_name: z.nullable(z.string()),
  /** Baton scopes the grant carries (never more than the signing token has). */
  scopes: z.array(z.enum(SCOPES)),
  /** The agents its tokens may act on; null: every agent of the account. */
  agents: z.nullable(z.array(z.string())),
  /** The name of the baton token that signed in to approve it. */
  signed_in_with: z.string(),
  created_at: z.number(),
  /** When its refresh token lapses (ms since epoch); null: never. */
  expires_at: z.nullable(z.number()),
});

export const grantListSchema = z.object({ grants: z.array(grantViewSchema), more: z.boolean() });
export const grantRevokedSchema = z.object({ revoked: z.string() });

/** Sign-in codes (worker/rules/sign-in-codes.ts): how long one lives, how many are kept, where, and how fast they are made and typed. */
export const SIGN_IN_CODE_LIMITS = {
  minutes: 10,
  /** Objects the codes are spread over, by the first hex digit of a code's SHA-256; a token's codes all go to one. */
  shards: 16,
  /** Live codes of one token (all in its shard); a new one drops its oldest. */
  perToken: 5,
  /** Live codes in one shard, of every token there; past it a new one is refused until some expire. */
  storedPerShard: 1000,
  /** Codes one client address (an IPv6 /48) may type on the sign-in page a minute (wrangler.toml's OAUTH_CODE_LIMIT). */
  triesPerMinute: 10,
  /** Codes one token may make a minute (the same binding, keyed by the token's hash). */
  mintsPerMinute: 10,
} as const;

/** What POST /sign-in-codes answers: the code as a person types it (XXXX-XXXX-XXXX), and when it lapses by the coordinator's clock. */
export const signInCodeSchema = z.object({ code: z.string().check(z.regex(/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/)), expires_at: z.number() });

export type SignInCode = z.infer<typeof signInCodeSchema>;
export type GrantView = z.infer<typeof grantViewSchema>;
export type GrantList = z.infer<typeof grantListSchema>;
