import type { ConfigVars } from "./config.ts";

export interface Env extends ConfigVars {
  AGENTS: DurableObjectNamespace;
  /** Session leases: one LeaseCoordinator per (account, session). */
  LEASES: DurableObjectNamespace;
  /** Comma-separated `account:sha256hex` pairs: the hashes of the bearer tokens each account may use. */
  BATON_TOKENS?: string;
}
