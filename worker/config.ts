// Coordinator settings read once from wrangler vars, with the defaults of the design.

export const DEFAULT = {
  heartbeatTtlSeconds: 60,
  presenceScanSeconds: 60,
} as const;

export interface CoordinatorConfig {
  heartbeatTtlMs: number;
  presenceScanMs: number;
}

export interface ConfigVars {
  BATON_HEARTBEAT_TTL_SECONDS?: string;
  BATON_PRESENCE_SCAN_SECONDS?: string;
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
