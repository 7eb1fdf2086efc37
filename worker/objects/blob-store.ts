// SQLite seam for large values (../rules/blob-ledger.ts): which R2 objects belong to which message,
// under which token, in which state. R2 keys are derived here and never taken from a client.
// Blobs of a pruned message, and uploads an ended message never committed, move to blob_garbage,
// which the agent object empties into R2 deletes.
import type { BlobRow, BlobState } from "../rules/blob-ledger.ts";
import { migrate, type Migration } from "./migrations.ts";

const BLOB_MIGRATIONS: Migration[] = [
  (sql) => {
    sql.exec(`CREATE TABLE IF NOT EXISTS message_blobs (
      message_id INTEGER NOT NULL, blob TEXT NOT NULL, token INTEGER NOT NULL, bytes INTEGER NOT NULL, state TEXT NOT NULL, at INTEGER NOT NULL,
      PRIMARY KEY (message_id, blob)) WITHOUT ROWID`);
    sql.exec(`CREATE TABLE IF NOT EXISTS blob_garbage (r2_key TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID`);
  },
];

export class BlobStore {
  constructor(private readonly sql: SqlStorage, private readonly prefix: string) {
    migrate(sql, "message_blobs", BLOB_MIGRATIONS);
  }

  /** The R2 key of one blob: the agent object's own prefix, so two agents never share a key. */
  keyOf(messageId: number, blob: string): string {
    return `${this.prefix}/${messageId}/${blob}`;
  }

  of(messageId: number): BlobRow[] {
    return this.sql.exec<BlobRow & Record<string, SqlStorageValue>>(
      `SELECT blob, token, bytes, state FROM message_blobs WHERE message_id = ?`, messageId).toArray();
  }

  get(messageId: number, blob: string): BlobRow | null {
    return this.sql.exec<BlobRow & Record<string, SqlStorageValue>>(
      `SELECT blob, token, bytes, state FROM message_blobs WHERE message_id = ? AND blob = ?`, messageId, blob).toArray()[0] ?? null;
  }

  add(messageId: number, row: BlobRow, now: number): void {
    this.sql.exec(`INSERT INTO message_blobs (message_id, blob, token, bytes, state, at) VALUES (?, ?, ?, ?, ?, ?)`,
      messageId, row.blob, row.token, row.bytes, row.state, now);
  }

  setState(messageId: number, blob: string, state: BlobState): void {
    this.sql.exec(`UPDATE message_blobs SET state = ? WHERE message_id = ? AND blob = ?`, state, messageId, blob);
  }

  /** Drops a blob's row and queues its R2 object for deletion (an upload refused after it was stored, or a failed one). */
  discard(messageId: number, blob: string, now: number): void {
    this.sql.exec(`INSERT OR IGNORE INTO blob_garbage (r2_key, at) VALUES (?, ?)`, this.keyOf(messageId, blob), now);
    this.sql.exec(`DELETE FROM message_blobs WHERE message_id = ? AND blob = ?`, messageId, blob);
  }

  /**
   * An upload R2 stored for a blob this object no longer knows (its message was pruned while it
   * streamed): its key goes to the garbage, so nothing in R2 outlives the message.
   */
  forgetStored(messageId: number, blob: string, now: number): void {
    this.sql.exec(`INSERT OR IGNORE INTO blob_garbage (r2_key, at) VALUES (?, ?)`, this.keyOf(messageId, blob), now);
  }

  /** Uploads of earlier attempts that nothing committed can never be committed (only their own token may): they go. */
  discardUncommitted(messageId: number, olderThan: number, now: number): void {
    const stale = this.sql.exec<{ blob: string }>(
      `SELECT blob FROM message_blobs WHERE message_id = ? AND token < ? AND state != 'committed'`, messageId, olderThan).toArray();
    for (const s of stale) this.discard(messageId, s.blob, now);
  }

  /**
   * A message that ended (acknowledged, failed, rejected...) can commit nothing more: every upload
   * it did not commit goes to the garbage now, not at history retention. Returns how many went.
   */
  discardUnkept(messageId: number, now: number): number {
    const unkept = this.sql.exec<{ blob: string }>(
      `SELECT blob FROM message_blobs WHERE message_id = ? AND state != 'committed'`, messageId).toArray();
    for (const u of unkept) this.discard(messageId, u.blob, now);
    return unkept.length;
  }

  /** Every blob of messages no longer kept (ids not in `messages`) goes to the garbage. */
  collectOrphans(now: number): void {
    const gone = this.sql.exec<{ message_id: number; blob: string }>(
      `SELECT message_id, blob FROM message_blobs WHERE message_id NOT IN (SELECT id FROM messages)`).toArray();
    for (const g of gone) this.discard(g.message_id, g.blob, now);
  }

  garbage(limit: number): string[] {
    return this.sql.exec<{ r2_key: string }>(`SELECT r2_key FROM blob_garbage ORDER BY at LIMIT ?`, limit).toArray().map((r) => r.r2_key);
  }

  forgetGarbage(keys: readonly string[]): void {
    for (const k of keys) this.sql.exec(`DELETE FROM blob_garbage WHERE r2_key = ?`, k);
  }
}
