// Reads a store keeps in memory between its own writes. Every event's snapshot reads these
// values, and a read from memory costs nothing where a statement costs a few microseconds; the
// object is the only writer of its SQLite, so memory and SQLite agree after every write.
import { migrate } from "./migrations.ts";

/** A key/value table that one object alone writes: read once per instance, then answered from memory. */
export class KeyValueTable {
  private values: Map<string, string> | null = null;

  constructor(private readonly sql: SqlStorage, private readonly table: string) {
    migrate(sql, `kv:${table}`, [(db) => db.exec(`CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY, value TEXT NOT NULL)`)]);
  }

  get(key: string): string | null {
    return this.loaded().get(key) ?? null;
  }

  /** Writes only what changes; null deletes the key. */
  set(key: string, value: string | null): void {
    const values = this.loaded();
    if ((values.get(key) ?? null) === value) return;
    if (value === null) {
      this.sql.exec(`DELETE FROM ${this.table} WHERE key = ?`, key);
      values.delete(key);
    } else {
      this.sql.exec(`INSERT INTO ${this.table} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value);
      values.set(key, value);
    }
  }

  private loaded(): Map<string, string> {
    this.values ??= new Map(this.sql.exec<{ key: string; value: string }>(`SELECT key, value FROM ${this.table}`).toArray().map((r) => [r.key, r.value]));
    return this.values;
  }
}

/**
 * `sql` that tells `onWrite` before every statement other than a SELECT, so a store that keeps
 * a read in memory forgets it at its next write, whatever the write.
 */
export function watchWrites(sql: SqlStorage, onWrite: () => void): SqlStorage {
  return new Proxy(sql, {
    get(target, prop) {
      if (prop === "exec") {
        return (query: string, ...bindings: unknown[]) => {
          if (!/^\s*SELECT\b/i.test(query)) onWrite();
          return target.exec(query, ...bindings);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
