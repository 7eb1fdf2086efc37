// SQLite seam for runs' live output (../rules/plan/output.ts decides; this stores and pages): one
// row per chunk or attempt mark, numbered by `seq` (AUTOINCREMENT, so a resume cursor is never
// reused), and one head per message with its next byte offset and what it keeps and dropped, and
// why (its own budget, or the agent's: ../rules/output-budget.ts chooses whose output goes), and
// one row with the sum of the heads' kept bytes, changed by the same writes that change a head, so
// the agent's budget is checked without summing every head on each batch.
// Readers are served from here in bounded pages, never from memory. Rows go with their message
// (prune, after MessageStore.prune).
import type { OutputAppend, OutputHead, OutputMarks } from "../rules/plan/output.ts";
import { chunkBytes, OUTPUT_LIMITS, type AttemptEndReason, type OutputDropReason, type OutputEvent, type OutputStream } from "../wire/output.ts";
import { agentOutputDrops, type FinishedOutput } from "../rules/output-budget.ts";
import { addMissingColumns, migrate, type Migration } from "./migrations.ts";

interface OutputRow {
  seq: number;
  kind: "chunk" | "attempt" | "attempt_end";
  attempt: number;
  machine: string | null;
  stream: OutputStream | null;
  byte_offset: number | null;
  data: ArrayBuffer | null;
  is_text: number | null;
  reason: AttemptEndReason | null;
  at: number;
}

interface HeadRow {
  next_offset: number;
  kept_bytes: number;
  dropped_bytes: number;
  /** The newest seq a drop removed: a reader whose cursor is before it missed bytes. */
  dropped_through: number;
  /** Why the latest drop was (null: none yet, or stored before reasons were). */
  dropped_for: OutputDropReason | null;
}

/** 1: the output log and its heads. */
const createTables: Migration = (sql) => {
  sql.exec(`CREATE TABLE IF NOT EXISTS message_output (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id INTEGER NOT NULL, kind TEXT NOT NULL, attempt INTEGER NOT NULL,
    machine TEXT, stream TEXT, byte_offset INTEGER, data BLOB, is_text INTEGER, reason TEXT, at INTEGER NOT NULL)`);
  sql.exec(`CREATE INDEX IF NOT EXISTS message_output_by_message ON message_output (message_id, seq)`);
  sql.exec(`CREATE TABLE IF NOT EXISTS message_output_heads (
    message_id INTEGER PRIMARY KEY, next_offset INTEGER NOT NULL, kept_bytes INTEGER NOT NULL,
    dropped_bytes INTEGER NOT NULL, dropped_through INTEGER NOT NULL) WITHOUT ROWID`);
};

/** 2: why a head's output was dropped (the message's budget or the agent's). */
const addDropReason: Migration = (sql) => addMissingColumns(sql, "message_output_heads", { dropped_for: "TEXT" });

/**
 * 3: the agent's kept bytes as one stored total, from the heads it has. Safe to run again: the
 * heads are what it counts, and nothing writes them between a cut-short run and the next.
 */
const keptTotal: Migration = (sql) => {
  sql.exec(`CREATE TABLE IF NOT EXISTS message_output_total (one INTEGER PRIMARY KEY CHECK (one = 1), kept_bytes INTEGER NOT NULL)`);
  sql.exec(`INSERT OR REPLACE INTO message_output_total (one, kept_bytes) SELECT 1, COALESCE(SUM(kept_bytes), 0) FROM message_output_heads`);
};

const OUTPUT_MIGRATIONS: readonly Migration[] = [createTables, addDropReason, keptTotal];

const EMPTY_HEAD: HeadRow = { next_offset: 0, kept_bytes: 0, dropped_bytes: 0, dropped_through: 0, dropped_for: null };

/**
 * Statuses in which a message writes no output: its output may go for the agent's budget. A failed
 * one that is retried writes again after the drop, from the same offset on (readers are told `dropped`).
 */
const FINISHED = ["acknowledged", "failed", "rejected", "cancelled", "superseded"] as const;

/** Rows one drop reads at a time while it frees the oldest bytes. */
const DROP_BATCH = 64;

export interface StoredPage {
  events: OutputEvent[];
  /** The seq to ask after next. */
  cursor: number;
  /** More stored events follow at once. */
  more: boolean;
}

export class OutputStore {
  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "output", OUTPUT_MIGRATIONS);
  }

  private headRow(id: number): HeadRow {
    return this.sql.exec<HeadRow & Record<string, SqlStorageValue>>(
      `SELECT next_offset, kept_bytes, dropped_bytes, dropped_through, dropped_for FROM message_output_heads WHERE message_id = ?`, id,
    ).toArray()[0] ?? EMPTY_HEAD;
  }

  /** Why some of message `id`'s output was dropped (null: none was). */
  droppedFor(id: number): OutputDropReason | null {
    const h = this.headRow(id);
    return h.dropped_bytes > 0 ? (h.dropped_for ?? "message_budget") : null;
  }

  head(id: number): OutputHead {
    const h = this.headRow(id);
    return { nextOffset: h.next_offset, keptBytes: h.kept_bytes };
  }

  /** Whether attempt `attempt` of message `id` wrote output that is kept (a batch's own budget drops only older chunks). */
  wroteDuring(id: number, attempt: number): boolean {
    return this.sql.exec(`SELECT 1 FROM message_output WHERE message_id = ? AND kind = 'chunk' AND attempt = ? LIMIT 1`, id, attempt).toArray().length > 0;
  }

  /** Stores a batch as its plan decided it: the oldest bytes freed first (whole chunks), then each chunk at its offset. */
  append(id: number, a: OutputAppend, now: number): void {
    const h = this.headRow(id);
    let { kept_bytes: kept, dropped_bytes: dropped, dropped_through: through } = h;
    let toFree = a.free;
    while (toFree > 0) {
      const rows = this.sql.exec<{ seq: number; n: number }>(
        `SELECT seq, length(data) AS n FROM message_output WHERE message_id = ? AND kind = 'chunk' ORDER BY seq LIMIT ?`, id, DROP_BATCH,
      ).toArray();
      if (rows.length === 0) break;
      let last = 0;
      for (const r of rows) {
        last = r.seq;
        toFree -= r.n;
        kept -= r.n;
        dropped += r.n;
        if (toFree <= 0) break;
      }
      this.sql.exec(`DELETE FROM message_output WHERE message_id = ? AND kind = 'chunk' AND seq <= ?`, id, last);
      through = Math.max(through, last);
    }
    let offset = a.offset;
    for (const c of a.chunks) {
      const bytes = chunkBytes(c);
      this.sql.exec(
        `INSERT INTO message_output (message_id, kind, attempt, machine, stream, byte_offset, data, is_text, at) VALUES (?, 'chunk', ?, ?, ?, ?, ?, ?, ?)`,
        id, a.attempt, a.machine, c.stream, offset, bytes, c.text !== undefined ? 1 : 0, now,
      );
      offset += bytes.byteLength;
    }
    const droppedFor = dropped > h.dropped_bytes ? "message_budget" : h.dropped_for;
    this.saveHead(id, h, { next_offset: offset, kept_bytes: kept + a.bytes, dropped_bytes: dropped, dropped_through: through, dropped_for: droppedFor });
  }

  /**
   * Keeps the agent's stored output within `budget` (BATON_OUTPUT_BYTES_PER_AGENT): while the
   * heads keep more, the oldest finished messages' output goes whole (their marks stay), as
   * ../rules/output-budget.ts chooses. Open messages' output is never touched.
   */
  keepAgentBudget(budget: number): void {
    let total = this.keptTotal();
    for (let more = total > budget; more;) {
      const oldest = this.sql.exec<FinishedOutput & Record<string, number>>(
        `SELECT h.message_id AS id, h.kept_bytes AS keptBytes FROM message_output_heads h JOIN messages m ON m.id = h.message_id
         WHERE h.kept_bytes > 0 AND m.status IN (${FINISHED.map(() => "?").join(", ")}) ORDER BY h.message_id LIMIT ?`, ...FINISHED, DROP_BATCH,
      ).toArray();
      const verdict = agentOutputDrops(oldest, total, budget);
      for (const id of verdict.drop) total -= this.dropAll(id);
      more = verdict.more;
    }
  }

  /** Drops all of message `id`'s chunks for the agent's budget; returns the bytes freed. */
  private dropAll(id: number): number {
    const h = this.headRow(id);
    const through = this.sql.exec<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM message_output WHERE message_id = ? AND kind = 'chunk'`, id).one().seq ?? 0;
    this.sql.exec(`DELETE FROM message_output WHERE message_id = ? AND kind = 'chunk'`, id);
    this.saveHead(id, h, {
      next_offset: h.next_offset, kept_bytes: 0, dropped_bytes: h.dropped_bytes + h.kept_bytes, dropped_through: Math.max(h.dropped_through, through), dropped_for: "agent_budget",
    });
    return h.kept_bytes;
  }

  /** An attempt that ended and one that began, as one change marks them. */
  mark(id: number, marks: OutputMarks, now: number): void {
    if (marks.ended) {
      this.sql.exec(`INSERT INTO message_output (message_id, kind, attempt, reason, at) VALUES (?, 'attempt_end', ?, ?, ?)`, id, marks.ended.attempt, marks.ended.reason, now);
    }
    if (marks.began) {
      this.sql.exec(`INSERT INTO message_output (message_id, kind, attempt, machine, at) VALUES (?, 'attempt', ?, ?, ?)`, id, marks.began.attempt, marks.began.machine, now);
    }
  }

  /** Bytes of output the agent keeps, all heads together (read from SQLite, so never ahead of a rolled-back write). */
  keptTotal(): number {
    return this.sql.exec<{ n: number }>(`SELECT kept_bytes AS n FROM message_output_total`).one().n;
  }

  private addToTotal(bytes: number): void {
    if (bytes !== 0) this.sql.exec(`UPDATE message_output_total SET kept_bytes = kept_bytes + ?`, bytes);
  }

  /** Writes head `h` over `was` (what headRow read), and moves the total by what it keeps more or less. */
  private saveHead(id: number, was: HeadRow, h: HeadRow): void {
    this.sql.exec(
      `INSERT INTO message_output_heads (message_id, next_offset, kept_bytes, dropped_bytes, dropped_through, dropped_for) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(message_id) DO UPDATE SET next_offset = excluded.next_offset, kept_bytes = excluded.kept_bytes,
         dropped_bytes = excluded.dropped_bytes, dropped_through = excluded.dropped_through, dropped_for = excluded.dropped_for`,
      id, h.next_offset, h.kept_bytes, h.dropped_bytes, h.dropped_through, h.dropped_for,
    );
    this.addToTotal(h.kept_bytes - was.kept_bytes);
  }

  /**
   * The stored events of message `id` after seq `after`: at most outputPageEvents events and about
   * outputPageBytes of output (always at least one event); a `dropped` event comes before the
   * first event after a drop that removed output this reader had not seen.
   */
  page(id: number, after: number): StoredPage {
    const h = this.headRow(id);
    const events: OutputEvent[] = [];
    // Told once, just before the first event after the drop: marks older than it are still served.
    let untold = h.dropped_through > after;
    const rows = this.sql.exec<OutputRow & Record<string, SqlStorageValue>>(
      `SELECT seq, kind, attempt, machine, stream, byte_offset, data, is_text, reason, at FROM message_output
       WHERE message_id = ? AND seq > ? ORDER BY seq LIMIT ?`, id, after, OUTPUT_LIMITS.outputPageEvents + 1,
    ).toArray();
    let bytes = 0;
    let cursor = after;
    let more = false;
    for (const [i, r] of rows.entries()) {
      if (i === OUTPUT_LIMITS.outputPageEvents || (i > 0 && bytes >= OUTPUT_LIMITS.outputPageBytes)) {
        more = true;
        break;
      }
      if (untold && r.seq > h.dropped_through) {
        events.push({ type: "dropped", bytes: h.dropped_bytes, offset: h.next_offset - h.kept_bytes, reason: h.dropped_for ?? "message_budget" });
        untold = false;
      }
      events.push(eventOf(r));
      bytes += r.data?.byteLength ?? 0;
      cursor = r.seq;
    }
    // Nothing stored after the drop (all of a finished message's output went): told at the end.
    if (untold && !more) events.push({ type: "dropped", bytes: h.dropped_bytes, offset: h.next_offset - h.kept_bytes, reason: h.dropped_for ?? "message_budget" });
    return { events, cursor, more };
  }

  /** The newest seq stored for message `id` (0: none), so a reader can start at the live end. */
  last(id: number): number {
    return this.sql.exec<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM message_output WHERE message_id = ?`, id).toArray()[0]?.seq ?? 0;
  }

  /** Output of messages no longer stored goes with them (after MessageStore.prune). */
  prune(): void {
    this.sql.exec(`DELETE FROM message_output WHERE message_id NOT IN (SELECT id FROM messages)`);
    const gone = this.sql.exec<{ kept_bytes: number }>(`DELETE FROM message_output_heads WHERE message_id NOT IN (SELECT id FROM messages) RETURNING kept_bytes`).toArray();
    this.addToTotal(-gone.reduce((n, r) => n + r.kept_bytes, 0));
  }
}

function eventOf(r: OutputRow): OutputEvent {
  if (r.kind === "attempt") return { type: "attempt", seq: r.seq, attempt: r.attempt, machine: r.machine ?? "unknown", at: r.at };
  if (r.kind === "attempt_end") return { type: "attempt_end", seq: r.seq, attempt: r.attempt, reason: r.reason!, at: r.at };
  const data = new Uint8Array(r.data ?? new ArrayBuffer(0));
  const body = r.is_text === 1 ? { text: new TextDecoder().decode(data) } : { base64: toBase64(data) };
  return { type: "chunk", seq: r.seq, offset: r.byte_offset ?? 0, attempt: r.attempt, machine: r.machine ?? "unknown", stream: r.stream ?? "text", ...body, at: r.at };
}

function toBase64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}
