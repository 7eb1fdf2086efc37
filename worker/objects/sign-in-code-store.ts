// The SQLite seam of the sign-in codes (../rules/sign-in-codes.ts): one row per live code, keyed by
// the code's SHA-256, never the code itself. It reads one event's snapshot and applies one plan.
import type { CodeEvent, CodePlan, CodeSnapshot, StoredCode } from "../rules/sign-in-codes.ts";
import { migrate, type Migration } from "./migrations.ts";
import { integer, RowCodec, text, type RowOf } from "./sql-row.ts";

const CODE_ROW = { hash: text(), signer: text(), created_at: integer(), expires_at: integer() };
const codeRow = new RowCodec<RowOf<typeof CODE_ROW>>("sign_in_codes", CODE_ROW);

const CODE_MIGRATIONS: Migration[] = [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS sign_in_codes (
      hash TEXT PRIMARY KEY, signer TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS sign_in_codes_by_signer ON sign_in_codes (signer, created_at);
    CREATE INDEX IF NOT EXISTS sign_in_codes_by_expiry ON sign_in_codes (expires_at)`),
];

function codeOf(raw: Record<string, SqlStorageValue>): StoredCode {
  const r = codeRow.decode(raw);
  return { hash: r.hash, signer: r.signer, createdAt: r.created_at, expiresAt: r.expires_at };
}

export class SignInCodeStore {
  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "sign_in_codes", CODE_MIGRATIONS);
  }

  /** Live codes only: an expired row still stored until this event's prune reads as none. */
  snapshot(event: CodeEvent, now: number): CodeSnapshot {
    const code = this.sql.exec(`SELECT * FROM sign_in_codes WHERE hash = ? AND expires_at > ?`, event.hash, now).toArray()[0];
    const signerCodes = event.type !== "mint" ? [] : this.sql
      .exec(`SELECT * FROM sign_in_codes WHERE signer = ? AND expires_at > ? ORDER BY created_at, hash`, event.signer, now).toArray().map(codeOf);
    const live = event.type !== "mint" ? 0 : this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM sign_in_codes WHERE expires_at > ?`, now).one().n;
    return { now, code: code === undefined ? null : codeOf(code), signerCodes, live };
  }

  apply(plan: CodePlan): void {
    this.sql.exec(`DELETE FROM sign_in_codes WHERE expires_at <= ?`, plan.pruneUpTo);
    if (plan.remove.length > 0) this.sql.exec(`DELETE FROM sign_in_codes WHERE hash IN (SELECT value FROM json_each(?))`, JSON.stringify(plan.remove));
    const c = plan.insert;
    if (c !== null) this.sql.exec(`INSERT INTO sign_in_codes (hash, signer, created_at, expires_at) VALUES (?, ?, ?, ?)`, c.hash, c.signer, c.createdAt, c.expiresAt);
  }
}
