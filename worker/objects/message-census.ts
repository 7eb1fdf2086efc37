// What presence shows of an agent's stored messages (work-report.ts, agent-inputs.ts): counts by
// status, the newest of one status and previews of the newest texts, each read bounded and
// without loading texts, replies or checkpoints.
import type { MessageStatus } from "../rules/message-lease.ts";
import { messageRow, type StoredMessage } from "./message-row.ts";

const REPORTED_FIELDS = ["id", "attempts", "token", "runner", "expires_at", "msg_group", "error", "heartbeat_at", "pending_ask", "question", "on_deadline", "cancel"] as const;
type ReportedField = (typeof REPORTED_FIELDS)[number];

export class MessageCensus {
  constructor(private readonly sql: SqlStorage) {}

  /** The newest messages for presence: their first `previewChars` characters only, so a report costs the same whatever the texts weigh. */
  recent(limit: number, previewChars: number): { id: number; status: MessageStatus; attempts: number; created_at: number; text: string }[] {
    return this.sql.exec<{ id: number; status: MessageStatus; attempts: number; created_at: number; text: string }>(
      `SELECT id, status, attempts, created_at, substr(text, 1, ?) AS text FROM messages ORDER BY id DESC LIMIT ?`, previewChars, limit).toArray();
  }

  countByStatus(): Record<MessageStatus, number> {
    const counts: Record<MessageStatus, number> = { queued: 0, running: 0, parked: 0, acknowledged: 0, failed: 0, rejected: 0, cancelled: 0, superseded: 0 };
    for (const r of this.sql.exec<{ status: MessageStatus; n: number }>(`SELECT status, COUNT(*) AS n FROM messages GROUP BY status`)) {
      counts[r.status] = r.n;
    }
    return counts;
  }

  /** The newest messages in one status, newest first, without their texts, replies or checkpoints. */
  inStatus(status: MessageStatus, limit: number): Pick<StoredMessage, ReportedField>[] {
    return this.sql.exec(
      `SELECT id, attempts, token, runner, expires_at, msg_group, substr(error, 1, 500) AS error, heartbeat_at, pending_ask,
       CASE WHEN status = 'parked' THEN question END AS question, on_deadline, CASE WHEN status = 'cancelled' THEN cancel END AS cancel
       FROM messages WHERE status = ? ORDER BY id DESC LIMIT ?`,
      status, limit).toArray().map((r) => messageRow.pick(r, REPORTED_FIELDS));
  }
}
