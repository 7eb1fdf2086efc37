// The pages of an agent's stored messages (history, and a connection's sync after its cursor):
// what the messages after a cursor weigh, read without loading their texts, and then the messages
// themselves. A read-only seam of the message store (message-store.ts), as message-census.ts is
// for presence.
import { messageRow, type StoredMessage } from "./message-row.ts";

export class MessagePages {
  constructor(private readonly sql: SqlStorage) {}

  /**
   * The ids after `cursor` (at most `limit`, oldest first) with what their stored texts, reply,
   * checkpoint, resume input and error weigh in bytes: no more than their view's JSON weighs, read
   * without loading them.
   */
  weightsAfter(cursor: number, limit: number): { id: number; bytes: number }[] {
    const weight = ["text", "reply", "checkpoint", "resume_input", "error"].map((c) => `COALESCE(octet_length(${c}), 0)`).join(" + ");
    return this.sql.exec<{ id: number; bytes: number }>(`SELECT id, ${weight} AS bytes FROM messages WHERE id > ? ORDER BY id LIMIT ?`, cursor, limit).toArray();
  }

  /**
   * Plans the page after `cursor`: at most `count` messages and no more than `bytes` of text (but
   * at least one message). Reads sizes only, so a refused page never loads its texts.
   */
  planPage(cursor: number, count: number, bytes: number): { last: number; count: number; bytes: number; more: boolean } {
    const sizes = this.sql.exec<{ id: number; size: number }>(
      `SELECT id, length(CAST(text AS BLOB)) AS size FROM messages WHERE id > ? ORDER BY id LIMIT ?`, cursor, count + 1,
    ).toArray();
    let plan = { last: cursor, count: 0, bytes: 0, more: false };
    for (const s of sizes) {
      if (plan.count === count || (plan.count > 0 && plan.bytes + s.size > bytes)) return { ...plan, more: true };
      plan = { last: s.id, count: plan.count + 1, bytes: plan.bytes + s.size, more: false };
    }
    return plan;
  }

  /** Messages with cursor < id <= last, oldest first. */
  range(cursor: number, last: number): StoredMessage[] {
    return this.sql.exec(`SELECT * FROM messages WHERE id > ? AND id <= ? ORDER BY id`, cursor, last).toArray().map((r) => messageRow.decode(r));
  }

  lastId(): number {
    return this.sql.exec<{ id: number | null }>(`SELECT MAX(id) AS id FROM messages`).one().id ?? 0;
  }
}
