// SQLite seam for who answered a parked message, when, from where and what: the newest
// ANSWERS_KEPT rows per message, made by the message store's migrations (message-migrations.ts);
// rows go with their message (MessageStore.prune).
import type { AnswerRecord } from "./message-row.ts";

/** Answers kept per message (a message parked and answered again and again keeps its newest ones). */
const ANSWERS_KEPT = 20;

export class AnswerTable {
  constructor(private readonly sql: SqlStorage) {}

  /** Keeps one answer of message `id`, dropping its answers past the newest ANSWERS_KEPT. */
  record(id: number, record: AnswerRecord): void {
    this.sql.exec(`INSERT INTO message_answers (message_id, at, choice, text, question, account, token, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      id, record.at, record.choice, record.text, record.question, record.account, record.token, record.via);
    this.sql.exec(`DELETE FROM message_answers WHERE message_id = ? AND rowid NOT IN (
      SELECT rowid FROM message_answers WHERE message_id = ? ORDER BY at DESC, rowid DESC LIMIT ?)`, id, id, ANSWERS_KEPT);
  }

  /** The answers of a page of messages, in one query. */
  of(ids: readonly number[]): Map<number, AnswerRecord[]> {
    const out = new Map<number, AnswerRecord[]>();
    if (ids.length === 0) return out;
    const rows = this.sql.exec<AnswerRecord & { message_id: number } & Record<string, SqlStorageValue>>(
      `SELECT message_id, at, choice, text, question, account, token, via FROM message_answers WHERE message_id BETWEEN ? AND ? ORDER BY message_id, at, rowid`,
      Math.min(...ids), Math.max(...ids)).toArray();
    for (const { message_id, ...record } of rows) {
      if (!out.has(message_id)) out.set(message_id, []);
      out.get(message_id)!.push(record);
    }
    return out;
  }
}
