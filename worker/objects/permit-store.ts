// SQLite seam for approval permits (../rules/permits.ts): one row per (message, effect), the
// latest approval of that effect, spent or not. Made by the message store's migration 4
// (message-migrations.ts); rows go with their message (MessageStore.prune).
import type { Permit } from "../rules/permits.ts";
import { integer, maybeInteger, RowCodec, text, type RowOf } from "./sql-row.ts";

const PERMIT_ROW = {
  message_id: integer(),
  effect: text(),
  digest: text(),
  /** Canonical JSON of the approved arguments, as the person was shown them. */
  args: text(),
  asked_token: integer(),
  granted_at: integer(),
  account: text(),
  token_name: text(),
  via: text(),
  spent_token: maybeInteger(),
  spent_at: maybeInteger(),
};

export const permitRow = new RowCodec<RowOf<typeof PERMIT_ROW>>("message_permits", PERMIT_ROW);

export class PermitTable {
  constructor(private readonly sql: SqlStorage) {}

  /** The permit of one message's effect, or null. */
  get(messageId: number, effect: string): Permit | null {
    const row = this.sql.exec(`SELECT * FROM message_permits WHERE message_id = ? AND effect = ?`, messageId, effect).toArray()[0];
    return row === undefined ? null : permitOf(permitRow.decode(row));
  }

  /** One message's permits, oldest first (for people). */
  of(messageId: number): Permit[] {
    return this.sql.exec(`SELECT * FROM message_permits WHERE message_id = ? ORDER BY granted_at, effect`, messageId).toArray().map((r) => permitOf(permitRow.decode(r)));
  }

  /** A person's approval: the effect's permit, replacing an earlier one (spent or not). */
  grant(messageId: number, p: Permit): void {
    this.sql.exec(
      `INSERT INTO message_permits (message_id, effect, digest, args, asked_token, granted_at, account, token_name, via, spent_token, spent_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)
       ON CONFLICT(message_id, effect) DO UPDATE SET digest = excluded.digest, args = excluded.args, asked_token = excluded.asked_token,
       granted_at = excluded.granted_at, account = excluded.account, token_name = excluded.token_name, via = excluded.via, spent_token = NULL, spent_at = NULL`,
      messageId, p.effect, p.digest, p.args, p.askedToken, p.grantedAt, p.by.account, p.by.token, p.by.via,
    );
  }

  /** An intent spent the permit (the rule checked it was unspent; the condition keeps a second spend from counting). */
  spend(messageId: number, effect: string, token: number, at: number): void {
    this.sql.exec(`UPDATE message_permits SET spent_token = ?, spent_at = ? WHERE message_id = ? AND effect = ? AND spent_token IS NULL`, token, at, messageId, effect);
  }

  /** The permits of messages that left the history (MessageStore.prune). */
  drop(ids: readonly number[]): void {
    if (ids.length > 0) this.sql.exec(`DELETE FROM message_permits WHERE message_id IN (SELECT value FROM json_each(?))`, JSON.stringify(ids));
  }
}

function permitOf(r: RowOf<typeof PERMIT_ROW>): Permit {
  return {
    effect: r.effect, digest: r.digest, args: r.args, askedToken: r.asked_token, grantedAt: r.granted_at,
    by: { account: r.account, token: r.token_name, via: r.via }, spentToken: r.spent_token, spentAt: r.spent_at,
  };
}
