import type { AgentCoordinator } from "./objects/agent-object.ts";
import type { ConfigVars } from "./config.ts";
import type { AgentDirectory } from "./objects/directory-object.ts";
import type { LeaseShard } from "./objects/lease-shard.ts";
import type { SignInCodes } from "./objects/sign-in-codes-object.ts";

export interface Env extends ConfigVars {
  AGENTS: DurableObjectNamespace<AgentCoordinator>;
  /** Session leases: BATON_LEASE_SHARDS LeaseShard objects, each holding the keys that hash to it. */
  LEASES: DurableObjectNamespace<LeaseShard>;
  /** The agent directory: one AgentDirectory per account, fed by agent objects, watched by dashboards. */
  DIRECTORY: DurableObjectNamespace<AgentDirectory>;
  /** The one-time sign-in codes of `baton login --code`, for the OAuth sign-in page (one object). */
  SIGN_IN_CODES: DurableObjectNamespace<SignInCodes>;
  /** Large values (step results over the inline limit); without it, large values are refused (501). */
  BLOBS?: R2Bucket;
  /** OAuth clients, grants and tokens (hashed; worker/oauth); without it only baton tokens work. */
  OAUTH_KV?: KVNamespace;
  /** Registrations per client address (wrangler.toml's ratelimits); absent: none counted. */
  OAUTH_REGISTER_LIMIT?: RateLimit;
  /** Sign-in codes typed per client address (wrangler.toml's ratelimits); absent: codes are off. */
  OAUTH_CODE_LIMIT?: RateLimit;
  /** Comma-separated `account:sha256hex` pairs: the hashes of the bearer tokens each account may use. */
  BATON_TOKENS?: string;
  /** Comma-separated origins whose web pages may call this coordinator besides its own (origins.ts). */
  BATON_ALLOWED_ORIGINS?: string;
  /** "true": webhook URLs may point at loopback, private and link-local addresses (`wrangler dev`; rules/webhook-targets.ts). */
  BATON_WEBHOOK_ALLOW_PRIVATE?: string;
  /** "true" only in tests (vitest's workerd bindings, the e2e wrangler dev): objects' clocks can be advanced (objects/clock.ts). */
  BATON_TEST_CLOCK?: string;
}
