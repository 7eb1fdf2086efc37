// One agent's metrics: lease counters kept in memory and written only with a lease transition (or
// at most every REFUSALS_PERSIST_MS when only refusals changed), a message tally kept by SQLite
// triggers on the messages table (so it costs nothing per frame and follows any status the message
// lifecycle uses), and the snapshot handed to the directory reporter whenever it changed (it rides
// with the presence in one RPC). The directory answers GET /metrics from these snapshots without calling any agent.
import type { Presence } from "../wire/server-frames.ts";
import type { Transition } from "../rules/election.ts";
import {
  countRefusal, countTransition, EMPTY_COUNTERS, metricsFingerprint, scheduleTallyOf, type AgentMetrics, type LeaseCounters, type MessageTally, type ScheduleTally,
} from "../rules/metrics.ts";
import { migrate, type Migration } from "./migrations.ts";
import { countersJson } from "./metrics-json.ts";
import { readOr } from "./stored-read.ts";

/** Refusals alone are written at most this often; up to this much of them is lost if the object is evicted. */
const REFUSALS_PERSIST_MS = 30_000;

const TALLY_TRIGGERS = [
  `CREATE TRIGGER IF NOT EXISTS tally_insert AFTER INSERT ON messages BEGIN
     INSERT OR IGNORE INTO message_tally (key, value) VALUES ('status:' || NEW.status, 0);
     UPDATE message_tally SET value = value + 1 WHERE key IN ('status:' || NEW.status, 'posted');
   END`,
  `CREATE TRIGGER IF NOT EXISTS tally_status AFTER UPDATE OF status ON messages WHEN OLD.status != NEW.status BEGIN
     INSERT OR IGNORE INTO message_tally (key, value) VALUES ('status:' || NEW.status, 0);
     UPDATE message_tally SET value = value + 1 WHERE key = 'status:' || NEW.status;
     UPDATE message_tally SET value = value - 1 WHERE key = 'status:' || OLD.status;
   END`,
  // Cancelled messages leave with history; the count of cancels never goes down.
  `CREATE TRIGGER IF NOT EXISTS tally_cancelled AFTER UPDATE OF status ON messages WHEN OLD.status != 'cancelled' AND NEW.status = 'cancelled' BEGIN
     INSERT OR IGNORE INTO message_tally (key, value) VALUES ('cancelled', 0);
     UPDATE message_tally SET value = value + 1 WHERE key = 'cancelled';
   END`,
  `CREATE TRIGGER IF NOT EXISTS tally_delete AFTER DELETE ON messages BEGIN
     UPDATE message_tally SET value = value - 1 WHERE key = 'status:' || OLD.status;
   END`,
  `CREATE TRIGGER IF NOT EXISTS tally_attempts AFTER UPDATE OF attempts ON messages WHEN NEW.attempts > OLD.attempts BEGIN
     UPDATE message_tally SET value = value + NEW.attempts - OLD.attempts WHERE key = 'deliveries';
     UPDATE message_tally SET value = value + MAX(0, NEW.attempts - MAX(OLD.attempts, 1)) WHERE key = 'redeliveries';
   END`,
];

/** An agent created before metrics existed starts its tally from the messages it still stores. */
function backfillTally(sql: SqlStorage): void {
  sql.exec(`INSERT INTO message_tally (key, value)
    SELECT 'status:' || status, COUNT(*) FROM messages GROUP BY status`);
  sql.exec(`INSERT INTO message_tally (key, value) VALUES
    ('posted', (SELECT COALESCE(MAX(id), 0) FROM messages)),
    ('deliveries', (SELECT COALESCE(SUM(attempts), 0) FROM messages)),
    ('redeliveries', (SELECT COALESCE(SUM(MAX(attempts - declined - 1, 0)), 0) FROM messages))`);
}

/**
 * A hand-out after declined ones is no redelivery: only hand-outs not declined (attempts less
 * declined) past the first are. Every hand-out is still a delivery. A person's retry keeps the
 * attempts and starts declined again at 0 (message-row.ts retried_after) without a hand-out, so the
 * hand-out after it is a redelivery of a message that ran, and nothing before it counts twice.
 */
const TALLY_HAND_OUTS = `CREATE TRIGGER tally_attempts AFTER UPDATE OF attempts ON messages WHEN NEW.attempts > OLD.attempts BEGIN
     UPDATE message_tally SET value = value + NEW.attempts - OLD.attempts WHERE key = 'deliveries';
     UPDATE message_tally SET value = value + MAX(0, (NEW.attempts - NEW.declined) - MAX(OLD.attempts - OLD.declined, 1)) WHERE key = 'redeliveries';
   END`;

const TALLY_MIGRATIONS: Migration[] = [
  (sql) => {
    sql.exec(`CREATE TABLE IF NOT EXISTS metrics_counters (one INTEGER PRIMARY KEY CHECK (one = 1), counters TEXT NOT NULL)`);
    const fresh = sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'message_tally'`).toArray().length === 0;
    sql.exec(`CREATE TABLE IF NOT EXISTS message_tally (key TEXT PRIMARY KEY, value INTEGER NOT NULL)`);
    if (fresh) backfillTally(sql);
    for (const trigger of TALLY_TRIGGERS) sql.exec(trigger);
  },
  // Messages count their declined hand-outs (message-migrations.ts 5), which are no redeliveries.
  (sql) => {
    sql.exec(`DROP TRIGGER IF EXISTS tally_attempts`);
    sql.exec(TALLY_HAND_OUTS);
  },
];

export class AgentMetricsKeeper {
  private counters: LeaseCounters;
  private persistedAt = 0;
  private lastFingerprint: string | null = null;

  /** Call after the messages table exists: the tally's triggers are attached to it. */
  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "message_tally", TALLY_MIGRATIONS);
    const row = sql.exec<{ counters: string }>(`SELECT counters FROM metrics_counters`).toArray()[0];
    // Corrupt counters start again from empty: a counter that resets is what Prometheus's rate() expects of a restart.
    this.counters = row ? { ...EMPTY_COUNTERS, ...readOr(countersJson, row.counters, {}, "lease counters start from empty") } : EMPTY_COUNTERS;
  }

  /** Counts a lease transition and writes the counters in the same turn as the lease itself. */
  transition(t: Transition, lostAt: number): void {
    this.counters = countTransition(this.counters, t, lostAt);
    this.persist(t.at);
  }

  /** Counts a refused write in memory; written with the next transition or after REFUSALS_PERSIST_MS. */
  refused(code: string, now: number): void {
    this.counters = countRefusal(this.counters, code);
    if (now - this.persistedAt >= REFUSALS_PERSIST_MS) this.persist(now);
  }

  private persist(now: number): void {
    this.sql.exec(
      `INSERT INTO metrics_counters (one, counters) VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET counters = excluded.counters`,
      countersJson.write(this.counters),
    );
    this.persistedAt = now;
  }

  private tally(): MessageTally {
    const rows = this.sql.exec<{ key: string; value: number }>(`SELECT key, value FROM message_tally`).toArray();
    const tally: MessageTally = { byStatus: {}, posted: 0, deliveries: 0, redeliveries: 0 };
    for (const { key, value } of rows) {
      if (key.startsWith("status:")) {
        if (value > 0) tally.byStatus[key.slice("status:".length)] = value;
      } else if (key === "posted" || key === "deliveries" || key === "redeliveries" || key === "cancelled") {
        tally[key] = value;
      }
    }
    return tally;
  }

  /** The schedules' tally (objects/schedule-store.ts), once the store made its table and something was counted. */
  private schedules(): { schedules?: ScheduleTally } {
    const exists = this.sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schedule_tally'`).toArray().length > 0;
    const tally = exists ? scheduleTallyOf(this.sql.exec<{ key: string; value: number }>(`SELECT key, value FROM schedule_tally`).toArray()) : null;
    return tally === null ? {} : { schedules: tally };
  }

  snapshot(presence: Presence, now: number): AgentMetrics {
    const { leaderlessSince: _since, ...counters } = this.counters;
    return {
      agent: presence.agent,
      reported_at: now,
      connections: presence.connection_count,
      holders: presence.connections.filter((c) => c.held).length,
      standbys: presence.serve_standbys,
      fence: presence.fence,
      counters,
      messages: this.tally(),
      ...this.schedules(),
      ...(presence.webhook ? {
        webhooks: { delivered: presence.webhook.delivered, failed: presence.webhook.failed_attempts, dropped: presence.webhook.dropped, pending: presence.webhook.pending },
      } : {}),
    };
  }

  /**
   * The snapshot when it differs from the last one handed out, else null. The directory reporter
   * sends it with the presence in one RPC; a failed send calls `forget`, so the next change sends it again.
   */
  changed(presence: Presence, now: number): AgentMetrics | null {
    const snapshot = this.snapshot(presence, now);
    const fingerprint = metricsFingerprint(snapshot);
    if (fingerprint === this.lastFingerprint) return null;
    this.lastFingerprint = fingerprint;
    return snapshot;
  }

  forget(): void {
    this.lastFingerprint = null;
  }
}
