// Numbered schema migrations, and the version each store's tables are at, kept in the object's own
// SQLite (one row per store in `schema_versions`, as cloudflare/agents keeps a schema version key).
// A store lists its migrations in order: number n is the list's n-th. At construction, migrate()
// runs the ones past the stored version and records each as it finishes, so an object at the
// current version pays one read. Objects written before versions existed have none (version 0):
// their migration 1 takes whatever shape earlier releases left.
//
// A migration must be safe to run again: it is recorded only after it finished, so one cut short
// (the object evicted, an exception) runs again from its start at the next construction.

export type Migration = (sql: SqlStorage) => void;

/** Brings `store`'s tables to the newest of `migrations`; returns the version it found. */
export function migrate(sql: SqlStorage, store: string, migrations: readonly Migration[]): number {
  const found = schemaVersion(sql, store);
  // A version past the newest known was written by newer code (a rollback): its tables are left as they are.
  for (let version = found + 1; version <= migrations.length; version++) {
    migrations[version - 1]!(sql);
    sql.exec(`INSERT INTO schema_versions (store, version) VALUES (?, ?) ON CONFLICT(store) DO UPDATE SET version = excluded.version`, store, version);
  }
  return found;
}

/** The version `store`'s tables are at (0: never migrated). */
export function schemaVersion(sql: SqlStorage, store: string): number {
  sql.exec(`CREATE TABLE IF NOT EXISTS schema_versions (store TEXT PRIMARY KEY, version INTEGER NOT NULL)`);
  return sql.exec<{ version: number }>(`SELECT version FROM schema_versions WHERE store = ?`, store).toArray()[0]?.version ?? 0;
}

/** Brings a table made by an older release up to date: adds each column it lacks, with its definition. */
export function addMissingColumns(sql: SqlStorage, table: string, columns: Record<string, string>): void {
  const have = new Set(sql.exec<{ name: string }>(`PRAGMA table_info(${table})`).toArray().map((c) => c.name));
  for (const [name, definition] of Object.entries(columns)) {
    if (!have.has(name)) sql.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${definition}`);
  }
}
