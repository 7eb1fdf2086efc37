// SQLite seam for the agent's own checkpoint (the `agent_checkpoint` frame of its holder): one
// row, its value as JSON with the serve fence it was written under. Made by the message store's
// migrations (message-migrations.ts); read through its row codec, its value through its JSON codec.
import * as z from "zod/mini";
import { integer, RowCodec, text, type RowOf } from "./sql-row.ts";
import { StoredJson } from "../rules/stored-json.ts";
import { reportCorrupt } from "./stored-read.ts";

export interface Checkpoint {
  value: unknown;
  fence: number;
  at: number;
}

const CHECKPOINT_ROW = { one: integer(), value: text(), fence: integer(), at: integer() };
const checkpointRow = new RowCodec<RowOf<typeof CHECKPOINT_ROW>>("checkpoint", CHECKPOINT_ROW);
const valueJson = new StoredJson<unknown>("checkpoint.value", z.unknown());

export class AgentCheckpointTable {
  constructor(private readonly sql: SqlStorage) {}

  get(): Checkpoint | null {
    const raw = this.sql.exec(`SELECT * FROM checkpoint`).toArray()[0];
    if (raw === undefined) return null;
    const row = checkpointRow.decode(raw);
    // A corrupt value reads as no checkpoint: the holder starts as if none was saved, and its next save replaces it.
    const value = valueJson.read(row.value);
    if (!value.ok) {
      reportCorrupt(value.problem, "read as no checkpoint");
      return null;
    }
    return { value: value.value, fence: row.fence, at: row.at };
  }

  save(value: unknown, fence: number, now: number): void {
    this.sql.exec(
      `INSERT INTO checkpoint (one, value, fence, at) VALUES (1, ?, ?, ?)
       ON CONFLICT(one) DO UPDATE SET value = excluded.value, fence = excluded.fence, at = excluded.at`,
      valueJson.write(value), fence, now,
    );
  }
}
