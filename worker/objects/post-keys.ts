// SQLite seam for the idempotency keys of posts: which message a key created and when, forgotten
// after the retention's postKeyMs (MessageStore.prune). Made by the message store's migrations.

export class PostKeyTable {
  constructor(private readonly sql: SqlStorage) {}

  /** The message an earlier post with this key created, or null when the key is new or older than `keepMs`. */
  postedWith(key: string, now: number, keepMs: number): number | null {
    const row = this.sql.exec<{ message_id: number; at: number }>(`SELECT message_id, at FROM post_keys WHERE key = ?`, key).toArray()[0];
    return row && now - row.at <= keepMs ? row.message_id : null;
  }

  remember(key: string, messageId: number, now: number): void {
    this.sql.exec(
      `INSERT INTO post_keys (key, message_id, at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET message_id = excluded.message_id, at = excluded.at`,
      key, messageId, now,
    );
  }

  /** Forgets the keys posted before `before`. */
  forgetBefore(before: number): void {
    this.sql.exec(`DELETE FROM post_keys WHERE at < ?`, before);
  }
}
