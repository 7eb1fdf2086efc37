// SQLite seam for an agent's schedules (rules/schedules.ts decides them): each schedule with the
// latest slot decided, and its latest fires (a slot posted with its message, or skipped with why),
// LIMITS.scheduleFiresKept each. All schedules are kept in memory (at most LIMITS.schedulesPerAgent)
// until the store's own next write, so the alarm's next wake is read without a query.
import type { CatchUp, OnBusy, SkipReason } from "../wire/enums.ts";
import { LIMITS } from "../wire/protocol.ts";
import type { ScheduleFireView } from "../wire/schedules.ts";
import type { Cadence, ScheduleState } from "../rules/schedules.ts";
import * as z from "zod/mini";
import { migrate, type Migration } from "./migrations.ts";
import { StoredJson } from "../rules/stored-json.ts";
import { readOr } from "./stored-read.ts";
import { capUtf8 } from "../rules/capped-text.ts";

/** A schedule as stored: its rule state and the message each slot posts. */
export interface StoredSchedule extends ScheduleState {
  tz: string;
  text: string;
  group: string | null;
  runTimeoutMs: number | null;
  onBusy: OnBusy | null;
}

export type NewSchedule = Omit<StoredSchedule, "id" | "lastSlot" | "missed">;

export interface FireRecord {
  slot: number;
  outcome: "posted" | "skipped";
  at: number;
  messageId: number | null;
  reason: SkipReason | null;
  /** With reason `failed`: what the rolled-back fire threw. */
  error?: string;
  count: number;
  /** More than `count` slots were skipped. */
  countAtLeast?: true;
  lastSlot: number;
}

const MIGRATIONS: readonly Migration[] = [
  (sql) => {
    sql.exec(`CREATE TABLE IF NOT EXISTS schedules (
      id INTEGER PRIMARY KEY AUTOINCREMENT, cadence TEXT NOT NULL, tz TEXT NOT NULL, text TEXT NOT NULL, grp TEXT, run_timeout_ms INTEGER,
      on_busy TEXT, catch_up TEXT NOT NULL, jitter_ms INTEGER NOT NULL, paused INTEGER NOT NULL, created_at INTEGER NOT NULL,
      last_slot INTEGER, missed INTEGER)`);
    sql.exec(`CREATE TABLE IF NOT EXISTS schedule_fires (
      schedule_id INTEGER NOT NULL, slot INTEGER NOT NULL, outcome TEXT NOT NULL, at INTEGER NOT NULL, message_id INTEGER, reason TEXT,
      count INTEGER NOT NULL, last_slot INTEGER NOT NULL, PRIMARY KEY (schedule_id, slot, outcome))`);
  },
  // What /metrics counts of the schedules (rules/metrics.ts scheduleTallyOf), kept across restarts.
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS schedule_tally (key TEXT PRIMARY KEY, value REAL NOT NULL)`),
  // A skip whose count stopped at the rule's cap (rules/schedules.ts CRON_COUNT_STEPS): at least that many.
  (sql) => sql.exec(`ALTER TABLE schedule_fires ADD COLUMN count_at_least INTEGER NOT NULL DEFAULT 0`),
  // What a fire that was rolled back threw (reason `failed`).
  (sql) => sql.exec(`ALTER TABLE schedule_fires ADD COLUMN error TEXT`),
];

type Row = {
  id: number; cadence: string; tz: string; text: string; grp: string | null; run_timeout_ms: number | null; on_busy: string | null;
  catch_up: string; jitter_ms: number; paused: number; created_at: number; last_slot: number | null; missed: number | null;
};

const cadenceJson = new StoredJson<Cadence>("schedules.cadence", z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("cron"), cron: z.string(), tz: z.string() }),
  z.object({ kind: z.literal("every"), everyMs: z.number(), from: z.number() }),
  z.object({ kind: z.literal("at"), at: z.number() }),
]));

/** A schedule whose cadence is corrupt is skipped: it neither fires nor is listed, and removing its id still deletes it. */
function fromRow(r: Row): StoredSchedule[] {
  const cadence = readOr(cadenceJson, r.cadence, null, `schedule ${r.id} skipped`);
  if (cadence === null) return [];
  return [{
    id: r.id, cadence, tz: r.tz, text: r.text, group: r.grp, runTimeoutMs: r.run_timeout_ms, onBusy: r.on_busy as OnBusy | null,
    catchUp: r.catch_up as CatchUp, jitterMs: r.jitter_ms, paused: r.paused === 1, createdAt: r.created_at, lastSlot: r.last_slot, missed: r.missed,
  }];
}

export class ScheduleStore {
  private cached: StoredSchedule[] | null = null;

  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "schedules", MIGRATIONS);
  }

  all(): readonly StoredSchedule[] {
    this.cached ??= this.sql.exec<Row>(`SELECT * FROM schedules ORDER BY id`).toArray().flatMap(fromRow);
    return this.cached;
  }

  get(id: number): StoredSchedule | null {
    return this.all().find((s) => s.id === id) ?? null;
  }

  add(s: NewSchedule): StoredSchedule {
    const row = this.sql.exec<{ id: number }>(
      `INSERT INTO schedules (cadence, tz, text, grp, run_timeout_ms, on_busy, catch_up, jitter_ms, paused, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      cadenceJson.write(s.cadence), s.tz, s.text, s.group, s.runTimeoutMs, s.onBusy, s.catchUp, s.jitterMs, s.paused ? 1 : 0, s.createdAt,
    ).one();
    this.cached = null;
    return this.get(row.id)!;
  }

  setPaused(id: number, paused: boolean): void {
    this.sql.exec(`UPDATE schedules SET paused = ? WHERE id = ?`, paused ? 1 : 0, id);
    this.cached = null;
  }

  /** The latest slot decided and the slot kept for catch-up, as a decision left them. */
  advance(id: number, lastSlot: number | null, missed: number | null): void {
    this.sql.exec(`UPDATE schedules SET last_slot = ?, missed = ? WHERE id = ?`, lastSlot, missed, id);
    this.cached = null;
  }

  remove(id: number): boolean {
    const removed = this.sql.exec(`DELETE FROM schedules WHERE id = ?`, id).rowsWritten > 0;
    this.sql.exec(`DELETE FROM schedule_fires WHERE schedule_id = ?`, id);
    this.cached = null;
    return removed;
  }

  /** Records a decided slot; only the latest LIMITS.scheduleFiresKept of the schedule stay. */
  recordFire(id: number, f: FireRecord): void {
    this.sql.exec(
      `INSERT OR REPLACE INTO schedule_fires (schedule_id, slot, outcome, at, message_id, reason, error, count, count_at_least, last_slot) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      id, f.slot, f.outcome, f.at, f.messageId, f.reason, f.error ?? null, f.count, f.countAtLeast ? 1 : 0, f.lastSlot,
    );
    this.sql.exec(
      `DELETE FROM schedule_fires WHERE schedule_id = ? AND rowid NOT IN (SELECT rowid FROM schedule_fires WHERE schedule_id = ? ORDER BY last_slot DESC, at DESC LIMIT ?)`,
      id, id, LIMITS.scheduleFiresKept,
    );
  }

  /** Adds to the tally /metrics reports (rules/metrics.ts). */
  tally(rows: readonly { key: string; value: number }[]): void {
    for (const { key, value } of rows) {
      this.sql.exec(`INSERT INTO schedule_tally (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = value + excluded.value`, key, value);
    }
  }

  /** The fire recorded for a slot posted, if any (a second decision of the same slot finds it). */
  postedFire(id: number, slot: number): number | null {
    return this.sql.exec<{ message_id: number | null }>(`SELECT message_id FROM schedule_fires WHERE schedule_id = ? AND slot = ? AND outcome = 'posted'`, id, slot)
      .toArray()[0]?.message_id ?? null;
  }

  fires(id: number): ScheduleFireView[] {
    return this.sql.exec<{ slot: number; outcome: "posted" | "skipped"; at: number; message_id: number | null; reason: SkipReason | null; error: string | null; count: number; count_at_least: number; last_slot: number }>(
      `SELECT slot, outcome, at, message_id, reason, error, count, count_at_least, last_slot FROM schedule_fires WHERE schedule_id = ? ORDER BY last_slot DESC, at DESC`, id,
    ).toArray().map((r) => ({
      slot: r.slot, outcome: r.outcome, at: r.at, message_id: r.message_id, reason: r.reason, ...(r.error === null ? {} : { error: capUtf8(r.error, LIMITS.scheduleErrorBytes) }), count: r.count,
      ...(r.count_at_least ? { count_at_least: true as const } : {}), last_slot: r.last_slot,
    }));
  }
}
