// The SQLite seam of a session-lease shard: one row per (account, session) key the shard
// remembers, and the shard's fence floor. A key idle for longer than the retention may be pruned;
// pruning raises the floor to the pruned fences first, so a forgotten key's next fence is still
// above every fence it had (see forgottenKey in session-lease.ts). StagedLeases groups the
// decisions of many requests into one SQLite commit.
import { forgottenKey, type SessionLease, type SessionLeaseState } from "../rules/session-lease.ts";
import { migrate, type Migration } from "./migrations.ts";

/** How long a key is remembered after its lease ended (released or expired) before it may be pruned. */
export const IDLE_KEY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Rows pruned at most per new key, so the table stays bounded without an alarm or a sweep. */
const PRUNE_PER_NEW_KEY = 2;

type LeaseRow = {
  last_fence: number;
  run_id: string | null;
  fence: number | null;
  granted_at: number | null;
  expires_at: number | null;
  ttl_seconds: number | null;
};

const LEASE_MIGRATIONS: Migration[] = [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS leases (
      account TEXT NOT NULL, session TEXT NOT NULL, last_fence INTEGER NOT NULL,
      run_id TEXT, fence INTEGER, granted_at INTEGER, expires_at INTEGER, ttl_seconds INTEGER,
      idle_since INTEGER NOT NULL,
      PRIMARY KEY (account, session)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS leases_by_idle_since ON leases (idle_since);
    CREATE TABLE IF NOT EXISTS shard (id INTEGER PRIMARY KEY CHECK (id = 1), fence_floor INTEGER NOT NULL);
    INSERT OR IGNORE INTO shard (id, fence_floor) VALUES (1, 0)`),
];

export class LeaseShardStore {
  private fenceFloor: number;
  /** No row is idle since before this (a lower bound; undefined: not known), so most batches prune without a query. */
  private oldestIdle: number | undefined = undefined;

  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "leases", LEASE_MIGRATIONS);
    this.fenceFloor = sql.exec<{ fence_floor: number }>("SELECT fence_floor FROM shard WHERE id = 1").one().fence_floor;
  }

  /** The key's record; a key without a row starts from the shard's fence floor. */
  load(account: string, session: string): { state: SessionLeaseState; remembered: boolean } {
    const row = this.sql
      .exec<LeaseRow>(
        "SELECT last_fence, run_id, fence, granted_at, expires_at, ttl_seconds FROM leases WHERE account = ? AND session = ?",
        account, session)
      .toArray()[0];
    if (!row) return { state: forgottenKey(this.fenceFloor), remembered: false };
    const lease: SessionLease | null = row.run_id === null
      ? null
      : { runId: row.run_id, fence: row.fence!, grantedAt: row.granted_at!, expiresAt: row.expires_at!, ttlSeconds: row.ttl_seconds! };
    return { state: { lastFence: row.last_fence, lease }, remembered: true };
  }

  /** Stores the key's record in one statement; the key counts as idle from its lease's expiry, or from now without one. */
  save(account: string, session: string, state: SessionLeaseState, now: number): void {
    const l = state.lease;
    this.sql.exec(
      `INSERT INTO leases (account, session, last_fence, run_id, fence, granted_at, expires_at, ttl_seconds, idle_since)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account, session) DO UPDATE SET last_fence = excluded.last_fence, run_id = excluded.run_id,
         fence = excluded.fence, granted_at = excluded.granted_at, expires_at = excluded.expires_at,
         ttl_seconds = excluded.ttl_seconds, idle_since = excluded.idle_since`,
      account, session, state.lastFence, l?.runId ?? null, l?.fence ?? null, l?.grantedAt ?? null,
      l?.expiresAt ?? null, l?.ttlSeconds ?? null, l?.expiresAt ?? now,
    );
    if (this.oldestIdle !== undefined) this.oldestIdle = Math.min(this.oldestIdle, l?.expiresAt ?? now);
  }

  /** Deletes up to `limit` keys idle since before `now - retentionMs`, raising the fence floor to their fences first. */
  prune(now: number, retentionMs = IDLE_KEY_RETENTION_MS, limit = PRUNE_PER_NEW_KEY): number {
    const cutoff = now - retentionMs;
    this.oldestIdle ??= this.sql.exec<{ at: number | null }>(`SELECT MIN(idle_since) AS at FROM leases`).one().at ?? Infinity;
    if (this.oldestIdle >= cutoff) return 0;
    this.oldestIdle = undefined;
    // Found by the idle_since index, deleted by primary key: a DELETE ... WHERE (account, session) IN
    // (subquery) scans the whole table, which every new key paid for.
    const pruned = this.sql
      .exec<{ account: string; session: string; last_fence: number }>(
        `SELECT account, session, last_fence FROM leases WHERE idle_since < ? ORDER BY idle_since LIMIT ?`, cutoff, limit)
      .toArray();
    for (const r of pruned) this.sql.exec(`DELETE FROM leases WHERE account = ? AND session = ?`, r.account, r.session);
    if (pruned.length > 0) {
      // Written with every prune, in the same transaction as the deletes: a rolled-back batch leaves
      // both as they were, and memory (which may then be ahead of SQLite) is only ever higher.
      const top = Math.max(this.fenceFloor, ...pruned.map((r) => r.last_fence));
      this.sql.exec("UPDATE shard SET fence_floor = MAX(fence_floor, ?) WHERE id = 1", top);
      this.fenceFloor = top;
    }
    return pruned.length;
  }

  /** Keys the shard remembers (for tests and the benchmark's sanity checks). */
  keyCount(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM leases").one().n;
  }

  /** One account's leases here: live at `now`, and expired without a release (until pruned). For /metrics. */
  accountCounts(account: string, now: number): { active: number; expired: number } {
    return this.sql.exec<{ active: number; expired: number }>(
      `SELECT COALESCE(SUM(expires_at > ?), 0) AS active, COALESCE(SUM(expires_at <= ?), 0) AS expired
       FROM leases WHERE account = ? AND run_id IS NOT NULL`, now, now, account).one();
  }
}

interface Staged {
  account: string;
  session: string;
  state: SessionLeaseState;
  remembered: boolean;
  now: number;
}

/**
 * Decisions staged in memory and written together, so many requests share one SQLite commit
 * (under `wrangler dev` a commit is two fsyncs on the runtime's only thread). Reads see staged
 * records first, so decisions stay serial. Nobody may be answered from a staged record until
 * `flush()` wrote it: the output gate then holds every answer until the commit is durable.
 */
export class StagedLeases {
  private readonly staged = new Map<string, Staged>();

  constructor(private readonly store: LeaseShardStore, private readonly storage: DurableObjectStorage) {}

  get pending(): boolean {
    return this.staged.size > 0;
  }

  load(account: string, session: string): { state: SessionLeaseState; remembered: boolean } {
    return this.staged.get(`${account}/${session}`) ?? this.store.load(account, session);
  }

  stage(account: string, session: string, state: SessionLeaseState, now: number, remembered: boolean): void {
    this.staged.set(`${account}/${session}`, { account, session, state, remembered, now });
  }

  /** Writes every staged record in one transaction; a batch with a new key first prunes as many idle ones. */
  flush(): void {
    if (this.staged.size === 0) return;
    const batch = [...this.staged.values()];
    this.staged.clear();
    const newKeys = batch.filter((s) => !s.remembered).length;
    this.storage.transactionSync(() => {
      if (newKeys > 0) this.store.prune(Math.max(...batch.map((s) => s.now)), IDLE_KEY_RETENTION_MS, newKeys * PRUNE_PER_NEW_KEY);
      for (const s of batch) this.store.save(s.account, s.session, s.state, s.now);
    });
  }
}
