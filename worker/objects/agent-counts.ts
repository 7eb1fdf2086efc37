// How many of something each agent of an account has (schedules, A2A push targets), kept by the
// account's directory so the Worker can hold an account-wide limit (LIMITS.schedulesPerAccount,
// LIMITS.pushTargetsPerAccount) before an add reaches an agent. Each agent object sets its own
// count after every change (an add, a removal, a one-off done); the check is made before each add,
// so two adds at once in two agents may both pass it: the limit may be exceeded by the adds in
// flight, never by more.
import { migrate, type Migration } from "./migrations.ts";

/** One count per agent: its table (also its migrations' store name) and its count column. */
export interface CountedThing {
  table: string;
  column: string;
}

export const SCHEDULE_COUNTS: CountedThing = { table: "schedule_counts", column: "schedules" };
export const PUSH_TARGET_COUNTS: CountedThing = { table: "push_target_counts", column: "targets" };

const migrations = ({ table, column }: CountedThing): readonly Migration[] => [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS ${table} (agent TEXT PRIMARY KEY, ${column} INTEGER NOT NULL)`),
];

export class AgentCounts {
  constructor(private readonly sql: SqlStorage, private readonly thing: CountedThing) {
    migrate(sql, thing.table, migrations(thing));
  }

  set(agent: string, count: number): void {
    const { table, column } = this.thing;
    if (count === 0) this.sql.exec(`DELETE FROM ${table} WHERE agent = ?`, agent);
    else this.sql.exec(`INSERT INTO ${table} (agent, ${column}) VALUES (?, ?) ON CONFLICT(agent) DO UPDATE SET ${column} = excluded.${column}`, agent, count);
  }

  /** The account's count, all agents but `except` (whose own count its object checks). */
  total(except: string): number {
    const { table, column } = this.thing;
    return this.sql.exec<{ n: number }>(`SELECT COALESCE(SUM(${column}), 0) AS n FROM ${table} WHERE agent != ?`, except).one().n;
  }
}
