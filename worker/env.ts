import type { AgentCoordinator } from "./objects/agent-object.ts";
import type { ConfigVars } from "./config.ts";
import type { AgentDirectory } from "./objects/directory-object.ts";
import type { LeaseCoordinator } from "./objects/lease-object.ts";

export interface Env extends ConfigVars {
  AGENTS: DurableObjectNamespace<AgentCoordinator>;
  /** Session leases: one LeaseCoordinator per (account, session). */
  LEASES: DurableObjectNamespace<LeaseCoordinator>;
  /** The agent directory: one AgentDirectory per account, fed by agent objects, watched by dashboards. */
  DIRECTORY: DurableObjectNamespace<AgentDirectory>;
  /** Comma-separated `account:sha256hex` pairs: the hashes of the bearer tokens each account may use. */
  BATON_TOKENS?: string;
}
