// SQLite seam for the agent's own checkpoint (the `agent_checkpoint` frame of its holder): one
// row, its value as JSON with the serve fence it was written under. Made by the message store's
// migrations (message-migrations.ts); read through its row codec.
import { integer, RowCodec, text, type RowOf } from "./sql-row.ts";

export interface Checkpoint {
  value: unknown;
  fence: number;
  at: number;
}

const CHECKPOINT_ROW = { one: integer(), value: text(), fence: integer(), at: integer() };
const checkpointRow = new RowCodec<RowOf<typeof CHECKPOINT_ROW>>("checkpoint", CHECKPOINT_ROW);

export class AgentCheckpointTable {
  constructor(private readonly sql: SqlStorage) {}

  get(): Checkpoint | null {
    const raw = this.sql.exec(`SELECT * FROM checkpoint`).toArray()[0];
    if (raw === undefined) return null;
    const row = checkpointRow.decode(raw);
    return { value: JSON.parse(row.value) as unknown, fence: row.fence, at: row.at };
  }

  save(value: unknown, fence: number, now: number): void {
    this.sql.exec(
      `INSERT INTO checkpoint (one, value, fence, at) VALUES (1, ?, ?, ?)
       ON CONFLICT(one) DO UPDATE SET value = excluded.value, fence = excluded.fence, at = excluded.at`,
      JSON.stringify(value), fence, now,
    );
  }
}
