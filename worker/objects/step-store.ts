// SQLite seam for the step journal (../rules/step-journal.ts): one row per recorded step or effect
// of a message, keyed by (message, name). Rows go with their message (MessageStore.prune).
import type { OnUnknown, StepKind, StepRecord, StepStatus } from "../rules/step-journal.ts";
import { ON_UNKNOWN, STEP_PHASES } from "../wire/enums.ts";
import { LIMITS } from "../wire/protocol.ts";
import { journalKind } from "../wire/server-frames.ts";
import { addMissingColumns, migrate, type Migration } from "./migrations.ts";
import { KeyValueTable } from "./kv-table.ts";
import { JournalCache, KeptJournal, type KeptRecord } from "./journal-cache.ts";
import { integer, maybeInteger, maybeOneOf, maybeText, oneOf, RowCodec, text, type RowOf } from "./sql-row.ts";

const KINDS: readonly StepKind[] = journalKind.options;

const STEP_ROW = {
  message_id: integer(),
  name: text(),
  kind: oneOf(KINDS),
  status: oneOf(STEP_PHASES),
  value: maybeText(),
  on_unknown: maybeOneOf(ON_UNKNOWN),
  attempt: integer(),
  token: integer(),
  at: integer(),
  blob: maybeText(),
  blob_bytes: maybeInteger(),
  /** The idempotency key the effect was first begun under (null: not an effect, or begun by a release that kept none). */
  effect_key: maybeText(),
};

type StepRow = RowOf<typeof STEP_ROW>;

export const stepRow = new RowCodec<StepRow>("message_steps", STEP_ROW);

/** 1: the table as the releases before schema versions left it: the blob and effect key columns came later. */
const catchUpUnversioned: Migration = (sql) => {
  sql.exec(`CREATE TABLE IF NOT EXISTS message_steps (
    message_id INTEGER NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL, value TEXT,
    on_unknown TEXT, attempt INTEGER NOT NULL, token INTEGER NOT NULL, at INTEGER NOT NULL,
    PRIMARY KEY (message_id, name)) WITHOUT ROWID`);
  addMissingColumns(sql, "message_steps", { blob: "TEXT", blob_bytes: "INTEGER", effect_key: "TEXT" });
};

/**
 * 2: answers recorded before they were a kind of their own were kept as steps. Each such record
 * whose value is an answer the answer path also kept in message_answers (same message, time and
 * choice) becomes an answer, so a message asked before the upgrade still gets its person's answer;
 * a run's record with no such answer stays a step. An object that did this before schema versions
 * says so in message_steps_meta. Needs MessageStore's tables (WorkDesk constructs that store first).
 */
const adoptLegacyAnswers: Migration = (sql) => {
  const meta = new KeyValueTable(sql, "message_steps_meta");
  if (meta.get("answers") !== null) return;
  sql.exec(`UPDATE message_steps SET kind = 'answer' WHERE kind = 'step' AND json_valid(value) AND EXISTS (
    SELECT 1 FROM message_answers a WHERE a.message_id = message_steps.message_id
      AND a.at = json_extract(message_steps.value, '$.at') AND a.choice = json_extract(message_steps.value, '$.choice'))`);
  meta.set("answers", "kind");
};

/** The numbered migrations of the step journal's table (migrations.ts). */
const STEP_MIGRATIONS: readonly Migration[] = [catchUpUnversioned, adoptLegacyAnswers];

/** A record's size: its inline value, or its blob. */
const BYTES = "COALESCE(length(CAST(value AS BLOB)), blob_bytes, 0)";

/** A step as shown to people: no value, only its size. */
export interface StepSummary {
  name: string;
  kind: StepKind;
  status: StepStatus;
  attempt: number;
  at: number;
  bytes: number;
  on_unknown: OnUnknown | null;
}

export class StepStore {
  /** Journals read whole or written lately, kept in memory (journal-cache.ts); this store is their only writer. */
  private readonly cache = new JournalCache();

  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "message_steps", STEP_MIGRATIONS);
  }

  /** A message's journal from memory, read whole first if it fits the cache; null when it does not. */
  private kept(messageId: number): KeptJournal | null {
    const kept = this.cache.get(messageId);
    if (kept !== null) return kept;
    if (this.usageInSql(messageId).bytes > this.cacheRoom) return null;
    const rows = this.sql.exec(`SELECT * FROM message_steps WHERE message_id = ?`, messageId).toArray();
    return this.cache.keep(messageId, new KeptJournal(rows.map((r) => keptOf(stepRow.decode(r)))));
  }

  /** The bytes of values a journal may hold to be kept (its records' overhead comes on top). */
  private readonly cacheRoom = LIMITS.journalBytes;

  get(messageId: number, name: string): StepRecord | null {
    const kept = this.kept(messageId);
    if (kept !== null) return recordOf(kept.get(name));
    const row = this.sql.exec(`SELECT * FROM message_steps WHERE message_id = ? AND name = ?`, messageId, name).toArray()[0];
    return row === undefined ? null : recordOf(keptOf(stepRow.decode(row)));
  }

  /** Every record of one message, in the order they were first written, with values as stored (for its runner's copy, run-copy.ts). */
  journal(messageId: number): readonly StepRecord[] {
    const kept = this.kept(messageId);
    if (kept !== null) return kept.inOrder();
    return this.sql.exec(`SELECT * FROM message_steps WHERE message_id = ? ORDER BY at, name`, messageId)
      .toArray().map((r) => keptOf(stepRow.decode(r)));
  }

  /** One message's steps without their values (for people, and for presence). */
  summaries(messageId: number): StepSummary[] {
    return this.sql.exec<StepSummary & Record<string, SqlStorageValue>>(
      `SELECT name, kind, status, attempt, at, ${BYTES} AS bytes, on_unknown
       FROM message_steps WHERE message_id = ? ORDER BY at, name`, messageId).toArray();
  }

  /** How many of one message's records were last written under `token` (by that attempt). */
  countUnder(messageId: number, token: number): number {
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM message_steps WHERE message_id = ? AND token = ?`, messageId, token).one().n;
  }

  /** How many records one message has and how many bytes their values take (the journal budget). */
  usage(messageId: number): { steps: number; bytes: number } {
    const kept = this.kept(messageId);
    return kept !== null ? { steps: kept.count, bytes: kept.valueBytes } : this.usageInSql(messageId);
  }

  private usageInSql(messageId: number): { steps: number; bytes: number } {
    return this.sql.exec<{ steps: number; bytes: number | null }>(
      `SELECT COUNT(*) AS steps, SUM(length(CAST(value AS BLOB))) AS bytes FROM message_steps WHERE message_id = ?`, messageId)
      .toArray().map((r) => ({ steps: r.steps, bytes: r.bytes ?? 0 }))[0]!;
  }

  /** `before`: the record this write replaces, if any (its `at` stays). */
  save(messageId: number, record: Omit<StepRecord, "at">, now: number, before: StepRecord | null): StepRecord {
    // `at` stays the first write's, so the journal keeps the order the steps began in.
    this.sql.exec(
      `INSERT INTO message_steps (message_id, name, kind, status, value, blob, blob_bytes, on_unknown, attempt, token, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(message_id, name) DO UPDATE SET status = excluded.status, value = excluded.value, blob = excluded.blob, blob_bytes = excluded.blob_bytes,
       on_unknown = excluded.on_unknown, attempt = excluded.attempt, token = excluded.token`,
      messageId, record.name, record.kind, record.status, record.value, record.blob?.id ?? null, record.blob?.bytes ?? null,
      record.onUnknown, record.attempt, record.token, now,
    );
    const at = before?.at ?? now;
    this.cache.update(messageId, (kept) => kept.put({ ...record, at, effectKey: kept.get(record.name)?.effectKey ?? null }));
    return { ...record, at };
  }

  /** The idempotency key an effect was first begun under, or null (not begun, or begun by a release that kept none). */
  effectKey(messageId: number, name: string): string | null {
    const kept = this.kept(messageId);
    if (kept !== null) return kept.get(name)?.effectKey ?? null;
    return this.sql.exec<{ effect_key: string | null }>(`SELECT effect_key FROM message_steps WHERE message_id = ? AND name = ?`, messageId, name)
      .toArray()[0]?.effect_key ?? null;
  }

  /** Keeps an effect's key with its record (a later write of the record leaves it), unless one is kept already. */
  keepEffectKey(messageId: number, name: string, key: string): void {
    this.sql.exec(`UPDATE message_steps SET effect_key = ? WHERE message_id = ? AND name = ? AND effect_key IS NULL`, key, messageId, name);
    this.cache.update(messageId, (kept) => {
      const record = kept.get(name);
      if (record !== null && record.effectKey === null) kept.put({ ...record, effectKey: key });
    });
  }

  /** The effects of one message whose intent has no outcome, in journal order (for pendingAsk). */
  openIntents(messageId: number): Pick<StepRecord, "name" | "kind" | "status" | "onUnknown" | "token">[] {
    const open = (r: Pick<StepRecord, "name" | "onUnknown" | "token">) => ({ name: r.name, kind: "effect" as const, status: "intent" as const, onUnknown: r.onUnknown, token: r.token });
    const kept = this.kept(messageId);
    if (kept !== null) return kept.inOrder().filter((r) => r.status === "intent").map(open);
    return this.sql.exec<{ name: string; on_unknown: OnUnknown | null; token: number }>(
      `SELECT name, on_unknown, token FROM message_steps WHERE message_id = ? AND status = 'intent' ORDER BY at, name`, messageId)
      .toArray().map((r) => open({ name: r.name, onUnknown: r.on_unknown, token: r.token }));
  }

  /** A person said an unknown effect must run again: its intent goes, so the next attempt runs it. */
  forget(messageId: number, name: string): void {
    this.sql.exec(`DELETE FROM message_steps WHERE message_id = ? AND name = ?`, messageId, name);
    this.cache.update(messageId, (kept) => kept.drop(name));
  }

  /** The journals of messages that left the history (MessageStore.prune): their records go. */
  dropMessages(ids: readonly number[]): void {
    if (ids.length === 0) return;
    this.sql.exec(`DELETE FROM message_steps WHERE message_id IN (SELECT value FROM json_each(?))`, JSON.stringify(ids));
    for (const id of ids) this.cache.forget(id);
  }

  /** The first `perMessage` steps of several messages (a page of history), in one query. */
  summariesFor(ids: readonly number[], perMessage = 50): Map<number, StepSummary[]> {
    const out = new Map<number, StepSummary[]>();
    if (ids.length === 0) return out;
    const rows = this.sql.exec<StepSummary & { message_id: number } & Record<string, SqlStorageValue>>(
      `SELECT message_id, name, kind, status, attempt, at, bytes, on_unknown FROM (
         SELECT *, ${BYTES} AS bytes, ROW_NUMBER() OVER (PARTITION BY message_id ORDER BY at, name) AS n
         FROM message_steps WHERE message_id BETWEEN ? AND ?) WHERE n <= ? ORDER BY message_id, at, name`,
      Math.min(...ids), Math.max(...ids), perMessage).toArray();
    for (const { message_id, ...step } of rows) {
      if (!out.has(message_id)) out.set(message_id, []);
      out.get(message_id)!.push(step);
    }
    return out;
  }
}

function keptOf(r: StepRow): KeptRecord {
  return {
    name: r.name, kind: r.kind, status: r.status, value: r.value, blob: r.blob === null ? null : { id: r.blob, bytes: r.blob_bytes ?? 0 },
    onUnknown: r.on_unknown, attempt: r.attempt, token: r.token, at: r.at, effectKey: r.effect_key,
  };
}

/** A kept record as the rules read it (without its key). */
function recordOf(r: KeptRecord | null): StepRecord | null {
  if (r === null) return null;
  const { effectKey: _key, ...record } = r;
  return record;
}
