// How many A2A push targets each agent of an account has, kept by the account's directory so the
// Worker can hold LIMITS.pushTargetsPerAccount before a target reaches an agent, as
// schedule-counts.ts does for schedules (the same rule: each agent object sets its own count after
// a change, the check is made before each set, so sets in flight in two agents may both pass it).
import { migrate, type Migration } from "./migrations.ts";

const MIGRATIONS: readonly Migration[] = [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS push_target_counts (agent TEXT PRIMARY KEY, targets INTEGER NOT NULL)`),
];

export class PushTargetCounts {
  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "push_target_counts", MIGRATIONS);
  }

  set(agent: string, targets: number): void {
    if (targets === 0) this.sql.exec(`DELETE FROM push_target_counts WHERE agent = ?`, agent);
    else this.sql.exec(`INSERT INTO push_target_counts (agent, targets) VALUES (?, ?) ON CONFLICT(agent) DO UPDATE SET targets = excluded.targets`, agent, targets);
  }

  /** The account's targets, all agents but `except` (whose own count its object checks). */
  total(except: string): number {
    return this.sql.exec<{ n: number }>(`SELECT COALESCE(SUM(targets), 0) AS n FROM push_target_counts WHERE agent != ?`, except).one().n;
  }
}
