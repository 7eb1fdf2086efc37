// Sign-in codes, the Worker's side. POST /sign-in-codes makes one for the calling baton token
// (never for an OAuth grant's), at most so many a minute per token: drawn here from
// crypto.getRandomValues until its SHA-256 falls in the token's shard, shown once, and only that
// hash goes to the shard's object (objects/sign-in-codes-object.ts). On the sign-in page
// (authorize.ts) a typed code is charged to its client address first (OAUTH_CODE_LIMIT, an IPv6
// /48 as one), then looked up in the shard its hash names, and stands for the token that asked for
// it, as that token is configured now; the approval spends it. A code is never logged.
import { callerByHash, hexDigest, type TokenEntry } from "../auth.ts";
import type { Env } from "../env.ts";
import { signInCodesShard } from "../objects/sign-in-codes-object.ts";
import { PUBLIC_DEV_TOKEN, refuseRebindingDevToken } from "../origins.ts";
import { codeTryKey } from "../rules/registration-limit.ts";
import { CODE_LENGTH, codeShard, formatSignInCode, parseSignInCode } from "../rules/sign-in-codes.ts";
import type { Handlers, RouteCall } from "../routes.ts";
import { callerOf, type Caller } from "../scopes.ts";
import { SIGN_IN_CODE_LIMITS, type SignInCode } from "../wire/grants.ts";
import { errorResponse } from "../wire/protocol.ts";
import { oauthEnabled } from "./server.ts";

/** A baton token's credential (scopes.ts Caller); an OAuth grant's is `grant.`. */
const TOKEN_CREDENTIAL = "token.";
/** One draw in 16 lands in a given shard: past this many, (15/16)^1024 < 10^-28, something is broken. */
const DRAWS_PER_CODE = 1024;

/**
 * Who a sign-in speaks for: the token's caller as configured now, its SHA-256, the name a refusal
 * may call it by (null for a code: not before its spend), and what approving spends (a code; nothing for a token).
 */
export type Signer =
  | { ok: true; signer: Caller; hex: string; name: string | null; spend: () => Promise<boolean> }
  | { ok: false; message: string };

/** A fresh code whose hash falls in `shard`, with that hash. */
async function drawCode(shard: string): Promise<{ code: string; hash: string }> {
  for (let draw = 0; draw < DRAWS_PER_CODE; draw++) {
    const code = formatSignInCode(crypto.getRandomValues(new Uint8Array(CODE_LENGTH)));
    const hash = await hexDigest(parseSignInCode(code)!);
    if (codeShard(hash) === shard) return { code, hash };
  }
  throw new Error(`${DRAWS_PER_CODE} sign-in codes drawn, none in shard ${shard}`);
}

async function mintCode({ request, env }: RouteCall): Promise<Response> {
  if (!oauthEnabled(env)) return errorResponse(501, "not_configured", "this coordinator has no KV namespace bound as OAUTH_KV: OAuth is off, so there is no sign-in page for a code");
  if (env.OAUTH_CODE_LIMIT === undefined) {
    return errorResponse(501, "not_configured", "this coordinator has no OAUTH_CODE_LIMIT binding to count the codes typed, so it makes none: sign in on the page with a token");
  }
  const caller = callerOf(request);
  if (!caller.credential.startsWith(TOKEN_CREDENTIAL)) return errorResponse(403, "forbidden", "sign-in codes are made with a baton token, not with an OAuth grant's access token");
  const signer = caller.credential.slice(TOKEN_CREDENTIAL.length);
  if (!(await env.OAUTH_CODE_LIMIT.limit({ key: `mint:${signer}` })).success) {
    const refused = errorResponse(429, "rate_limited", `at most ${SIGN_IN_CODE_LIMITS.mintsPerMinute} sign-in codes a minute from one token: wait a minute, then ask again`);
    refused.headers.set("retry-after", "60");
    return refused;
  }
  const shard = codeShard(signer);
  for (let tries = 0; tries < 3; tries++) {
    const { code, hash } = await drawCode(shard);
    const answer = await signInCodesShard(env, shard).mint(hash, signer);
    if (answer.kind === "minted") return Response.json({ code, expires_at: answer.expiresAt } satisfies SignInCode, { status: 201 });
    if (answer.kind === "full") {
      return errorResponse(429, "rate_limited", `${SIGN_IN_CODE_LIMITS.storedPerShard} sign-in codes are waiting to be used where this token's are kept: try again when some have expired (within ${SIGN_IN_CODE_LIMITS.minutes} minutes), or sign in with the token`);
    }
  }
  return errorResponse(500, "internal", "three sign-in codes drawn in a row were all in use");
}

export const codeHandlers: Handlers<"POST /sign-in-codes"> = { "POST /sign-in-codes": mintCode };

const refused = (message: string): Signer => ({ ok: false, message });

/**
 * The token a code typed on the sign-in page stands for, or why not; nothing is spent until
 * `spend`. Refusals before the spend never name the token; a code of the public dev token signs
 * in on a loopback address only, as the token itself does.
 */
export async function codeSigner(request: Request, env: Env, typed: string, entries: TokenEntry[], allowedOrigins: ReadonlySet<string>): Promise<Signer> {
  if (env.OAUTH_CODE_LIMIT === undefined) return refused("this coordinator takes no sign-in codes (it has no OAUTH_CODE_LIMIT binding): paste a baton token");
  const plain = parseSignInCode(typed);
  if (plain === null) return refused(`that is not a sign-in code: ${CODE_LENGTH} letters and digits, as \`baton login --code\` prints them (XXXX-XXXX-XXXX)`);
  const { success } = await env.OAUTH_CODE_LIMIT.limit({ key: codeTryKey(request.headers.get("cf-connecting-ip")) });
  if (!success) return refused(`at most ${SIGN_IN_CODE_LIMITS.triesPerMinute} sign-in codes a minute from one address: wait a minute, then type it again`);
  const hash = await hexDigest(plain);
  const codes = signInCodesShard(env, codeShard(hash));
  const found = await codes.find(hash);
  if (found.kind !== "found") return refused("that sign-in code is wrong, used or expired: run `baton login --code` for a new one");
  const signer = callerByHash(found.signer, entries);
  if (signer === null) return refused("the token that made this sign-in code is no longer configured on this coordinator");
  if (found.signer === (await hexDigest(PUBLIC_DEV_TOKEN)) && refuseRebindingDevToken(request, PUBLIC_DEV_TOKEN, allowedOrigins) !== null) {
    return refused("this sign-in code was made with the public dev token, which signs in on a loopback address only: make one with a token of your own");
  }
  return { ok: true, signer, hex: found.signer, name: null, spend: async () => (await codes.spend(hash)).kind === "spent" };
}
