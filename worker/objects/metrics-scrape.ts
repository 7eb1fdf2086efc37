// GET /metrics for one account: the agents' figures from the account's directory (one call, no
// agent object woken) and the account's session leases from each lease shard (one call per shard,
// a fixed number however many agents or sessions there are), as Prometheus text.
import type { Env } from "../env.ts";
import { leaseShardCount } from "../config.ts";
import { agentFamilies, sessionLeaseFamilies, type SessionLeaseCounts } from "../rules/metrics-families.ts";
import { CONTENT_TYPE, formatFamilies } from "../rules/metrics-text.ts";
import { directoryObjectName } from "./names.ts";
import { leaseShardAt } from "./lease-shard.ts";

/** Session leases summed over the shards, or null (and no session-lease lines) if any shard failed to answer. */
async function sessionLeaseCounts(env: Env, account: string): Promise<SessionLeaseCounts | null> {
  try {
    // Inside the try: a bad BATON_LEASE_SHARDS throws, and /metrics still answers with the agents' figures.
    const shards = Array.from({ length: leaseShardCount(env) }, (_, i) => leaseShardAt(env, i));
    const counts = await Promise.all(shards.map((s) => s.leaseCounts(account)));
    return counts.reduce((sum, c) => ({ active: sum.active + c.active, expired: sum.expired + c.expired }), { active: 0, expired: 0 });
  } catch {
    return null;
  }
}

export async function metricsResponse(env: Env, account: string): Promise<Response> {
  const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account)));
  const [agents, sessions] = await Promise.all([directory.metricsSnapshots(), sessionLeaseCounts(env, account)]);
  const text = formatFamilies([...agentFamilies(agents), ...sessionLeaseFamilies(sessions)]);
  return new Response(text, { headers: { "content-type": CONTENT_TYPE, "cache-control": "no-store" } });
}
