// The directory's side of /metrics: the latest snapshot each agent of the account reported, one
// SQLite row per agent, read whole at a scrape. A scrape calls no agent object, so its cost follows
// the number of rows (about 30 lines of text per agent), not the agents' own work.
import type { AgentMetrics } from "../rules/metrics.ts";

/** An agent with no connection that has not reported for this long leaves /metrics. */
export const IDLE_AGENT_RETENTION_MS = 24 * 60 * 60 * 1000;

export class MetricsBoard {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS agent_metrics (
      agent TEXT PRIMARY KEY, snapshot TEXT NOT NULL, reported_at INTEGER NOT NULL, connections INTEGER NOT NULL)`);
  }

  /** Keeps the snapshot unless a newer one of the same agent is already stored. */
  accept(m: AgentMetrics): void {
    this.sql.exec(
      `INSERT INTO agent_metrics (agent, snapshot, reported_at, connections) VALUES (?, ?, ?, ?)
       ON CONFLICT(agent) DO UPDATE SET snapshot = excluded.snapshot, reported_at = excluded.reported_at,
         connections = excluded.connections
       WHERE excluded.reported_at >= agent_metrics.reported_at`,
      m.agent, JSON.stringify(m), m.reported_at, m.connections,
    );
  }

  /** Every agent's latest snapshot by name, after dropping agents idle past IDLE_AGENT_RETENTION_MS. */
  snapshots(now: number): AgentMetrics[] {
    this.sql.exec(`DELETE FROM agent_metrics WHERE connections = 0 AND reported_at < ?`, now - IDLE_AGENT_RETENTION_MS);
    return this.sql.exec<{ snapshot: string }>(`SELECT snapshot FROM agent_metrics ORDER BY agent`).toArray()
      .map((r) => JSON.parse(r.snapshot) as AgentMetrics);
  }
}
