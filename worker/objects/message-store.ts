// SQLite seam for durable work: the agent's messages, the idempotent write log and the latest
// checkpoint. Ids come from AUTOINCREMENT, so they only grow and are never reused.

export type MessageStatus = "queued" | "delivered" | "acknowledged";

export interface StoredMessage {
  id: number;
  text: string;
  created_at: number;
  status: MessageStatus;
  attempts: number;
  delivered_fence: number | null;
  acked_at: number | null;
  acked_fence: number | null;
  reply: string | null;
}

export interface Checkpoint {
  value: unknown;
  fence: number;
  at: number;
}

const HISTORY_PAGE = 500;

export class MessageStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS messages (
      id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, created_at INTEGER NOT NULL,
      status TEXT NOT NULL DEFAULT 'queued', attempts INTEGER NOT NULL DEFAULT 0, delivered_fence INTEGER,
      acked_at INTEGER, acked_fence INTEGER, reply TEXT)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS writes (key TEXT PRIMARY KEY, result TEXT NOT NULL, at INTEGER NOT NULL)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS checkpoint (one INTEGER PRIMARY KEY CHECK (one = 1), value TEXT NOT NULL, fence INTEGER NOT NULL, at INTEGER NOT NULL)`);
  }

  add(text: string, now: number): StoredMessage {
    return this.sql.exec<Record<string, SqlStorageValue>>(
      `INSERT INTO messages (text, created_at) VALUES (?, ?) RETURNING *`, text, now).one() as unknown as StoredMessage;
  }

  get(id: number): StoredMessage | null {
    const rows = this.sql.exec(`SELECT * FROM messages WHERE id = ?`, id).toArray();
    return rows.length ? (rows[0] as unknown as StoredMessage) : null;
  }

  after(cursor: number, limit = HISTORY_PAGE): StoredMessage[] {
    return this.sql.exec(`SELECT * FROM messages WHERE id > ? ORDER BY id LIMIT ?`, cursor, Math.min(limit, HISTORY_PAGE))
      .toArray() as unknown as StoredMessage[];
  }

  lastId(): number {
    return this.sql.exec<{ id: number | null }>(`SELECT MAX(id) AS id FROM messages`).one().id ?? 0;
  }

  recent(limit: number): StoredMessage[] {
    return this.sql.exec(`SELECT * FROM messages ORDER BY id DESC LIMIT ?`, limit).toArray() as unknown as StoredMessage[];
  }

  /** Unacknowledged messages the holder of `fence` has not been handed yet, oldest first. */
  undeliveredFor(fence: number): StoredMessage[] {
    return this.sql.exec(
      `SELECT * FROM messages WHERE status != 'acknowledged' AND (delivered_fence IS NULL OR delivered_fence != ?) ORDER BY id`,
      fence,
    ).toArray() as unknown as StoredMessage[];
  }

  markDelivered(id: number, fence: number): StoredMessage {
    return this.sql.exec(
      `UPDATE messages SET status = 'delivered', attempts = attempts + 1, delivered_fence = ? WHERE id = ? RETURNING *`, fence, id,
    ).one() as unknown as StoredMessage;
  }

  acknowledge(id: number, fence: number, reply: string | null, now: number): void {
    this.sql.exec(
      `UPDATE messages SET status = 'acknowledged', acked_at = ?, acked_fence = ?, reply = COALESCE(?, reply) WHERE id = ?`,
      now, fence, reply, id,
    );
  }

  /** The first result stored under an idempotency key, or null when the key is new. */
  priorWrite(key: string): Record<string, unknown> | null {
    const rows = this.sql.exec<{ result: string }>(`SELECT result FROM writes WHERE key = ?`, key).toArray();
    return rows.length ? (JSON.parse(rows[0]!.result) as Record<string, unknown>) : null;
  }

  recordWrite(key: string, result: Record<string, unknown>, now: number): void {
    this.sql.exec(`INSERT INTO writes (key, result, at) VALUES (?, ?, ?)`, key, JSON.stringify(result), now);
  }

  checkpoint(): Checkpoint | null {
    const rows = this.sql.exec<{ value: string; fence: number; at: number }>(`SELECT value, fence, at FROM checkpoint`).toArray();
    return rows.length ? { value: JSON.parse(rows[0]!.value), fence: rows[0]!.fence, at: rows[0]!.at } : null;
  }

  saveCheckpoint(value: unknown, fence: number, now: number): void {
    this.sql.exec(
      `INSERT INTO checkpoint (one, value, fence, at) VALUES (1, ?, ?, ?)
       ON CONFLICT(one) DO UPDATE SET value = excluded.value, fence = excluded.fence, at = excluded.at`,
      JSON.stringify(value), fence, now,
    );
  }
}
