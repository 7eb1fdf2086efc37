// Coordinator settings read once from wrangler vars, with the defaults of the design.

export const DEFAULT = {
  heartbeatTtlSeconds: 60,
  presenceScanSeconds: 60,
  /** Acknowledged messages kept per agent (with the write that acknowledged each). */
  historyMessages: 1000,
  /** How long the Idempotency-Key of a POST /agents/{agent}/messages is remembered. */
  postKeyHours: 24,
  /** Session-lease shard objects; fixed for a deployment (see leaseShardCount). */
  leaseShards: 64,
  /** How long a higher-priority runner must stay connected before the lease moves to it. */
  preferenceHysteresisSeconds: 10,
  /** How long a restarted agent object keeps the lease for its previous holder's runner. */
  restartGraceSeconds: 10,
} as const;

export interface CoordinatorConfig {
  heartbeatTtlMs: number;
  presenceScanMs: number;
}

export interface ConfigVars {
  BATON_HEARTBEAT_TTL_SECONDS?: string;
  BATON_PRESENCE_SCAN_SECONDS?: string;
  BATON_HISTORY_MESSAGES?: string;
  BATON_POST_KEY_HOURS?: string;
  BATON_LEASE_SHARDS?: string;
  BATON_PREFERENCE_HYSTERESIS_SECONDS?: string;
  BATON_RESTART_GRACE_SECONDS?: string;
}

function seconds(raw: string | undefined, fallback: number, name: string): number {
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > 86_400) {
    throw new Error(`${name} must be a number of seconds between 0 and 86400, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** Throws with an exact message when a var is malformed; the Worker answers 500 with it. */
export function readConfig(vars: ConfigVars): CoordinatorConfig {
  const ttl = seconds(vars.BATON_HEARTBEAT_TTL_SECONDS, DEFAULT.heartbeatTtlSeconds, "BATON_HEARTBEAT_TTL_SECONDS");
  const scan = seconds(vars.BATON_PRESENCE_SCAN_SECONDS, DEFAULT.presenceScanSeconds, "BATON_PRESENCE_SCAN_SECONDS");
  return { heartbeatTtlMs: Math.round(ttl * 1000), presenceScanMs: Math.round(scan * 1000) };
}

export interface PreferenceConfig {
  hysteresisMs: number;
  restartGraceMs: number;
}

/** Preference timings; throws with an exact message when a var is malformed. */
export function readPreferenceConfig(vars: ConfigVars): PreferenceConfig {
  const hysteresis = seconds(vars.BATON_PREFERENCE_HYSTERESIS_SECONDS, DEFAULT.preferenceHysteresisSeconds, "BATON_PREFERENCE_HYSTERESIS_SECONDS");
  const grace = seconds(vars.BATON_RESTART_GRACE_SECONDS, DEFAULT.restartGraceSeconds, "BATON_RESTART_GRACE_SECONDS");
  return { hysteresisMs: Math.round(hysteresis * 1000), restartGraceMs: Math.round(grace * 1000) };
}

/** How much history an agent keeps; throws with an exact message when a var is malformed. */
export function readRetention(vars: ConfigVars): { messages: number; postKeyMs: number } {
  const raw = vars.BATON_HISTORY_MESSAGES;
  const messages = raw === undefined || raw === "" ? DEFAULT.historyMessages : Number(raw);
  if (!Number.isInteger(messages) || messages < 1 || messages > 1_000_000) {
    throw new Error(`BATON_HISTORY_MESSAGES must be a whole number between 1 and 1000000, got ${JSON.stringify(raw)}`);
  }
  const hoursRaw = vars.BATON_POST_KEY_HOURS;
  const hours = hoursRaw === undefined || hoursRaw === "" ? DEFAULT.postKeyHours : Number(hoursRaw);
  if (!Number.isFinite(hours) || hours <= 0 || hours > 24 * 30) {
    throw new Error(`BATON_POST_KEY_HOURS must be a number of hours between 0 and 720, got ${JSON.stringify(hoursRaw)}`);
  }
  return { messages, postKeyMs: Math.round(hours * 3_600_000) };
}

export const MAX_LEASE_SHARDS = 4096;

/**
 * How many shard objects hold the session leases. Keys are placed by a hash modulo this count,
 * so changing it on a deployment moves most keys to a shard that never saw them, where their
 * fences start again from that shard's floor: set it once, before the first lease.
 */
export function leaseShardCount(vars: ConfigVars): number {
  const raw = vars.BATON_LEASE_SHARDS;
  if (raw === undefined || raw === "") return DEFAULT.leaseShards;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > MAX_LEASE_SHARDS) {
    throw new Error(`BATON_LEASE_SHARDS must be a whole number between 1 and ${MAX_LEASE_SHARDS}, got ${JSON.stringify(raw)}`);
  }
  return value;
}
