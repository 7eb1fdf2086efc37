// Coordinator settings read once from wrangler vars, with the defaults of the design. A bad var
// never throws inside a Durable Object: the Worker and each object hold the verdict and answer a
// 500 `internal` with its exact message.
import { LIMITS } from "./wire/protocol.ts";

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
  /** How long a restarted agent object keeps the lease for its previous holder's runner; 0 turns it off. */
  restartGraceSeconds: 10,
  /** Bytes of live output one message keeps (at most LIMITS.outputBytesPerMessage); past it the oldest go. */
  outputBytesPerMessage: 4 * 1024 * 1024,
  /**
   * Bytes of output one agent stores in all (at most LIMITS.outputBytesPerAgent); past it the oldest
   * finished messages' output goes, never a running or parked one's.
   */
  outputBytesPerAgent: 256 * 1024 * 1024,
} as const;

/** The smallest per-message output budget an operator may set. */
export const MIN_OUTPUT_BYTES = 64 * 1024;

export interface CoordinatorConfig {
  heartbeatTtlMs: number;
  presenceScanMs: number;
  /** How much history an agent keeps. */
  retention: { messages: number; postKeyMs: number };
  preference: PreferenceConfig;
  /** Bytes of live output one message keeps. */
  outputBytes: number;
  /** Bytes of output one agent stores in all, past which the oldest finished messages' output goes. */
  agentOutputBytes: number;
}

export interface PreferenceConfig {
  hysteresisMs: number;
  restartGraceMs: number;
}

export interface ConfigVars {
  BATON_HEARTBEAT_TTL_SECONDS?: string;
  BATON_PRESENCE_SCAN_SECONDS?: string;
  BATON_HISTORY_MESSAGES?: string;
  BATON_POST_KEY_HOURS?: string;
  BATON_LEASE_SHARDS?: string;
  BATON_PREFERENCE_HYSTERESIS_SECONDS?: string;
  BATON_RESTART_GRACE_SECONDS?: string;
  BATON_OUTPUT_BYTES_PER_MESSAGE?: string;
  BATON_OUTPUT_BYTES_PER_AGENT?: string;
}

export type ConfigVerdict = { ok: true; config: CoordinatorConfig } | { ok: false; message: string };

/** `zeroOff`: 0 is allowed and switches the feature off (the restart grace); otherwise 0 is refused. */
function seconds(raw: string | undefined, fallback: number, name: string, zeroOff = false): number | string {
  if (raw === undefined || raw === "") return fallback;
  // Number(" ") is 0: a blank value must be refused, not read as "off".
  const value = raw.trim() === "" ? NaN : Number(raw);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zeroOff) || value > 86_400) {
    const range = zeroOff ? "from 0 (off) to 86400" : "between 0 and 86400";
    return `${name} must be a number of seconds ${range}, got ${JSON.stringify(raw)}`;
  }
  return value;
}

/** Validates the vars; the first bad one is named with an exact message. Never throws. */
export function checkConfig(vars: ConfigVars): ConfigVerdict {
  const ttl = seconds(vars.BATON_HEARTBEAT_TTL_SECONDS, DEFAULT.heartbeatTtlSeconds, "BATON_HEARTBEAT_TTL_SECONDS");
  if (typeof ttl === "string") return { ok: false, message: ttl };
  const scan = seconds(vars.BATON_PRESENCE_SCAN_SECONDS, DEFAULT.presenceScanSeconds, "BATON_PRESENCE_SCAN_SECONDS");
  if (typeof scan === "string") return { ok: false, message: scan };
  const hysteresis = seconds(vars.BATON_PREFERENCE_HYSTERESIS_SECONDS, DEFAULT.preferenceHysteresisSeconds, "BATON_PREFERENCE_HYSTERESIS_SECONDS");
  if (typeof hysteresis === "string") return { ok: false, message: hysteresis };
  const grace = seconds(vars.BATON_RESTART_GRACE_SECONDS, DEFAULT.restartGraceSeconds, "BATON_RESTART_GRACE_SECONDS", true);
  if (typeof grace === "string") return { ok: false, message: grace };
  const raw = vars.BATON_HISTORY_MESSAGES;
  const messages = raw === undefined || raw === "" ? DEFAULT.historyMessages : Number(raw);
  if (!Number.isInteger(messages) || messages < 1 || messages > 1_000_000) {
    return { ok: false, message: `BATON_HISTORY_MESSAGES must be a whole number between 1 and 1000000, got ${JSON.stringify(raw)}` };
  }
  const hoursRaw = vars.BATON_POST_KEY_HOURS;
  const hours = hoursRaw === undefined || hoursRaw === "" ? DEFAULT.postKeyHours : Number(hoursRaw);
  if (!Number.isFinite(hours) || hours <= 0 || hours > 24 * 30) {
    return { ok: false, message: `BATON_POST_KEY_HOURS must be a number of hours between 0 and 720, got ${JSON.stringify(hoursRaw)}` };
  }
  const outputRaw = vars.BATON_OUTPUT_BYTES_PER_MESSAGE;
  const outputBytes = outputRaw === undefined || outputRaw === "" ? DEFAULT.outputBytesPerMessage : Number(outputRaw);
  if (!Number.isInteger(outputBytes) || outputBytes < MIN_OUTPUT_BYTES || outputBytes > LIMITS.outputBytesPerMessage) {
    return { ok: false, message: `BATON_OUTPUT_BYTES_PER_MESSAGE must be a whole number of bytes between ${MIN_OUTPUT_BYTES} and ${LIMITS.outputBytesPerMessage}, got ${JSON.stringify(outputRaw)}` };
  }
  const agentRaw = vars.BATON_OUTPUT_BYTES_PER_AGENT;
  const agentOutputBytes = agentRaw === undefined || agentRaw === "" ? Math.max(DEFAULT.outputBytesPerAgent, outputBytes) : Number(agentRaw);
  if (!Number.isInteger(agentOutputBytes) || agentOutputBytes < outputBytes || agentOutputBytes > LIMITS.outputBytesPerAgent) {
    return { ok: false, message: `BATON_OUTPUT_BYTES_PER_AGENT must be a whole number of bytes between BATON_OUTPUT_BYTES_PER_MESSAGE (${outputBytes}) and ${LIMITS.outputBytesPerAgent}, got ${JSON.stringify(agentRaw)}` };
  }
  return {
    ok: true,
    config: {
      outputBytes,
      agentOutputBytes,
      heartbeatTtlMs: Math.round(ttl * 1000),
      presenceScanMs: Math.round(scan * 1000),
      retention: { messages, postKeyMs: Math.round(hours * 3_600_000) },
      preference: { hysteresisMs: Math.round(hysteresis * 1000), restartGraceMs: Math.round(grace * 1000) },
    },
  };
}

/** Like checkConfig, for callers that stop at a bad var (tools and tests): throws the exact message. */
export function readConfig(vars: ConfigVars): CoordinatorConfig {
  const verdict = checkConfig(vars);
  if (!verdict.ok) throw new Error(verdict.message);
  return verdict.config;
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
