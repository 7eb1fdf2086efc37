// The directory's side of /metrics: the latest snapshot each agent of the account reported, one
// SQLite row per agent, read whole at a scrape. A scrape calls no agent object, so its cost follows
// the number of rows (about 30 lines of text per agent), not the agents' own work.
import { addMissingColumns, migrate, type Migration } from "./migrations.ts";
import type { AgentMetrics } from "../rules/metrics.ts";
import { metricsJson } from "./metrics-json.ts";
import { readOr } from "./stored-read.ts";

/** An agent with no connection and no waiting message that has not reported for this long leaves /metrics. */
const IDLE_AGENT_RETENTION_MS = 24 * 60 * 60 * 1000;

/** Counters stay (they only grow), but nobody vouches for the gauges: no holder, no standby, no connection is claimed. */
function unconfirmedSnapshot(m: AgentMetrics): AgentMetrics {
  return { ...m, confirmed: false, holders: 0, standbys: 0, connections: 0 };
}

/** The numbered migrations of the metrics table (migrations.ts); 1: as the releases before versions left it (the entry lease and backlog came later). */
const METRICS_MIGRATIONS: readonly Migration[] = [(sql) => {
  sql.exec(`CREATE TABLE IF NOT EXISTS agent_metrics (
    agent TEXT PRIMARY KEY, snapshot TEXT NOT NULL, reported_at INTEGER NOT NULL, connections INTEGER NOT NULL)`);
  addMissingColumns(sql, "agent_metrics", { confirmed_until: "INTEGER", waiting: "INTEGER NOT NULL DEFAULT 0" });
}];

export class MetricsBoard {
  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "agent_metrics", METRICS_MIGRATIONS);
  }

  /** The agent's object still vouches for its snapshot until `until` (see rules/directory-lease.ts). */
  confirm(agent: string, until: number): void {
    this.sql.exec(`UPDATE agent_metrics SET confirmed_until = MAX(COALESCE(confirmed_until, 0), ?) WHERE agent = ?`, until, agent);
  }

  /** Keeps the snapshot unless a newer one of the same agent is already stored. */
  accept(m: AgentMetrics, until: number): void {
    this.sql.exec(
      `INSERT INTO agent_metrics (agent, snapshot, reported_at, connections, confirmed_until, waiting) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(agent) DO UPDATE SET snapshot = excluded.snapshot, reported_at = excluded.reported_at,
         connections = excluded.connections, confirmed_until = MAX(COALESCE(agent_metrics.confirmed_until, 0), excluded.confirmed_until),
         waiting = excluded.waiting
       WHERE excluded.reported_at >= agent_metrics.reported_at`,
      m.agent, metricsJson.write(m), m.reported_at, m.connections, until, (m.messages.byStatus.queued ?? 0) + (m.messages.byStatus.parked ?? 0),
    );
  }

  /**
   * Every agent's latest snapshot by name, after dropping agents idle past IDLE_AGENT_RETENTION_MS.
   * A snapshot with connections that its agent stopped confirming is marked unconfirmed: it then
   * vouches for no holder (see unconfirmedSnapshot).
   */
  snapshots(now: number): AgentMetrics[] {
    // An agent nobody serves stays while messages wait for it: that backlog is what an alert must see.
    this.sql.exec(`DELETE FROM agent_metrics WHERE connections = 0 AND waiting = 0 AND reported_at < ?`, now - IDLE_AGENT_RETENTION_MS);
    return this.sql.exec<{ agent: string; snapshot: string; connections: number; confirmed_until: number | null }>(
      `SELECT agent, snapshot, connections, confirmed_until FROM agent_metrics ORDER BY agent`).toArray()
      .flatMap((r) => {
        // A corrupt snapshot is left out of the scrape until its agent's next report replaces it.
        const snapshot = readOr(metricsJson, r.snapshot, null, `agent ${r.agent} left out of /metrics`);
        if (snapshot === null) return [];
        const known = r.connections === 0 || (r.confirmed_until !== null && now <= r.confirmed_until);
        return [known ? { ...snapshot, confirmed: true } : unconfirmedSnapshot(snapshot)];
      });
  }
}
