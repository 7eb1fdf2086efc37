// Brings a table made by an older version up to date: adds each column it lacks, with its definition.
export function addMissingColumns(sql: SqlStorage, table: string, columns: Record<string, string>): void {
  const have = new Set(sql.exec<{ name: string }>(`PRAGMA table_info(${table})`).toArray().map((c) => c.name));
  for (const [name, definition] of Object.entries(columns)) {
    if (!have.has(name)) sql.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${definition}`);
  }
}
