// The SQLite seam of data kept under session leases, in the shard that holds the leases: one row
// per (account, session, key) with the fence it was written under. A value is either inline (its
// bytes in the row) or in R2 (the row names the R2 object; the Worker streams it). Rows outlive
// their lease: a thread's data stays when its lease ends and is only removed by a fenced delete.
// Each session's keys and bytes are counted in lease_data_usage, so its budget is checked in one read.
import { LIMITS } from "../wire/protocol.ts";
import { checkDataBudget, prefixRange, type BudgetVerdict, type DataUsage, type ListedRow } from "../rules/lease-data.ts";
import { migrate, type Migration } from "./migrations.ts";

const DATA_BUDGET: DataUsage = { keys: LIMITS.leaseDataKeysPerSession, bytes: LIMITS.leaseDataBytesPerSession };

export interface DataRow extends ListedRow {
  fence: number;
  updatedAt: number;
  value: Uint8Array | null;
  r2Key: string | null;
}

export type StoredValue = { inline: Uint8Array } | { r2Key: string; bytes: number };

type Row = { key: string; fence: number; bytes: number; updated_at: number; value: ArrayBuffer | null; r2_key: string | null };

function dataRow(r: Row): DataRow {
  return {
    key: r.key, fence: r.fence, bytes: r.bytes, updatedAt: r.updated_at, inline: r.r2_key === null,
    value: r.value === null ? null : new Uint8Array(r.value), r2Key: r.r2_key,
  };
}

const LEASE_DATA_MIGRATIONS: Migration[] = [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS lease_data (
      account TEXT NOT NULL, session TEXT NOT NULL, key TEXT NOT NULL, fence INTEGER NOT NULL,
      bytes INTEGER NOT NULL, updated_at INTEGER NOT NULL, value BLOB, r2_key TEXT,
      PRIMARY KEY (account, session, key));
    CREATE TABLE IF NOT EXISTS lease_data_usage (
      account TEXT NOT NULL, session TEXT NOT NULL, keys INTEGER NOT NULL, bytes INTEGER NOT NULL,
      PRIMARY KEY (account, session)) WITHOUT ROWID`),
];

export class LeaseDataStore {
  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "lease_data", LEASE_DATA_MIGRATIONS);
  }

  /**
   * Stores the value under `key` (with `ifAbsent`, only when the key has none: then `kept`), if
   * the session stays within its budget (checkDataBudget). `garbage` is the R2 object of the
   * value replaced, or of this one when it was not stored.
   */
  put(
    account: string, session: string, key: string, fence: number, value: StoredValue, now: number, ifAbsent: boolean,
  ): { ok: true; kept: boolean; garbage: string | null } | Exclude<BudgetVerdict, { ok: true }> {
    const old = this.sql.exec<{ r2_key: string | null; bytes: number }>(
      "SELECT r2_key, bytes FROM lease_data WHERE account = ? AND session = ? AND key = ?", account, session, key).toArray()[0];
    const ownR2 = "r2Key" in value ? value.r2Key : null;
    if (old && ifAbsent) return { ok: true, kept: true, garbage: ownR2 };
    const inline = "inline" in value ? value.inline : null;
    const bytes = inline ? inline.byteLength : (value as { bytes: number }).bytes;
    const budget = checkDataBudget(this.usage(account, session), old ? old.bytes : null, bytes, DATA_BUDGET);
    if (!budget.ok) return budget;
    this.sql.exec(
      `INSERT INTO lease_data (account, session, key, fence, bytes, updated_at, value, r2_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account, session, key) DO UPDATE SET fence = excluded.fence, bytes = excluded.bytes,
         updated_at = excluded.updated_at, value = excluded.value, r2_key = excluded.r2_key`,
      account, session, key, fence, bytes, now, inline, ownR2);
    this.setUsage(account, session, budget.usage);
    return { ok: true, kept: false, garbage: old?.r2_key ?? null };
  }

  /** How many keys and bytes the session's data holds now. */
  usage(account: string, session: string): DataUsage {
    return this.sql.exec<{ keys: number; bytes: number }>("SELECT keys, bytes FROM lease_data_usage WHERE account = ? AND session = ?", account, session)
      .toArray()[0] ?? { keys: 0, bytes: 0 };
  }

  private setUsage(account: string, session: string, usage: DataUsage): void {
    if (usage.keys === 0) {
      this.sql.exec("DELETE FROM lease_data_usage WHERE account = ? AND session = ?", account, session);
      return;
    }
    this.sql.exec(
      `INSERT INTO lease_data_usage (account, session, keys, bytes) VALUES (?, ?, ?, ?)
       ON CONFLICT (account, session) DO UPDATE SET keys = excluded.keys, bytes = excluded.bytes`,
      account, session, usage.keys, usage.bytes);
  }

  get(account: string, session: string, key: string): DataRow | null {
    const row = this.sql.exec<Row>(
      "SELECT key, fence, bytes, updated_at, value, r2_key FROM lease_data WHERE account = ? AND session = ? AND key = ?",
      account, session, key).toArray()[0];
    return row ? dataRow(row) : null;
  }

  /**
   * Up to `limit` rows whose key starts with `prefix`, after the key `after` in list order
   * (ascending, or descending with `desc`). Inline values are read along; callers trim the page.
   */
  list(account: string, session: string, prefix: string, after: string | null, desc: boolean, limit: number): DataRow[] {
    const { from, to } = prefixRange(prefix);
    const cursor = after === null ? "" : desc ? "AND key < ?" : "AND key > ?";
    const args = after === null ? [] : [after];
    return this.sql.exec<Row>(
      `SELECT key, fence, bytes, updated_at, value, r2_key FROM lease_data
       WHERE account = ? AND session = ? AND key >= ? AND key < ? ${cursor}
       ORDER BY key ${desc ? "DESC" : "ASC"} LIMIT ?`,
      account, session, from, to, ...args, limit).toArray().map(dataRow);
  }

  /** Deletes up to LIMITS.leaseDataDeleteRows rows under `prefix`; returns their R2 objects, now garbage. */
  deletePrefix(account: string, session: string, prefix: string): { deleted: number; more: boolean; r2Keys: string[] } {
    const { from, to } = prefixRange(prefix);
    const rows = this.sql.exec<{ key: string; r2_key: string | null; bytes: number }>(
      `SELECT key, r2_key, bytes FROM lease_data WHERE account = ? AND session = ? AND key >= ? AND key < ? ORDER BY key LIMIT ?`,
      account, session, from, to, LIMITS.leaseDataDeleteRows + 1).toArray();
    const batch = rows.slice(0, LIMITS.leaseDataDeleteRows);
    for (const r of batch) this.sql.exec("DELETE FROM lease_data WHERE account = ? AND session = ? AND key = ?", account, session, r.key);
    const usage = this.usage(account, session);
    this.setUsage(account, session, { keys: usage.keys - batch.length, bytes: usage.bytes - batch.reduce((sum, r) => sum + r.bytes, 0) });
    return { deleted: batch.length, more: rows.length > batch.length, r2Keys: batch.flatMap((r) => (r.r2_key ? [r.r2_key] : [])) };
  }
}
