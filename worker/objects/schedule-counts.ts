// How many schedules each agent of an account has, kept by the account's directory so the Worker
// can hold LIMITS.schedulesPerAccount before an add reaches an agent. Each agent object sets its
// own count after every change (an add, a removal, a one-off done); the check is made before each
// add, so two adds at once in two agents may both pass it: the limit may be exceeded by the adds
// in flight, never by more.
import { migrate, type Migration } from "./migrations.ts";

const MIGRATIONS: readonly Migration[] = [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS schedule_counts (agent TEXT PRIMARY KEY, schedules INTEGER NOT NULL)`),
];

export class ScheduleCounts {
  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "schedule_counts", MIGRATIONS);
  }

  set(agent: string, schedules: number): void {
    if (schedules === 0) this.sql.exec(`DELETE FROM schedule_counts WHERE agent = ?`, agent);
    else this.sql.exec(`INSERT INTO schedule_counts (agent, schedules) VALUES (?, ?) ON CONFLICT(agent) DO UPDATE SET schedules = excluded.schedules`, agent, schedules);
  }

  /** The account's schedules, all agents but `except` (whose own count its object checks). */
  total(except: string): number {
    return this.sql.exec<{ n: number }>(`SELECT COALESCE(SUM(schedules), 0) AS n FROM schedule_counts WHERE agent != ?`, except).one().n;
  }
}
