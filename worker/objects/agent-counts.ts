// How many of something each agent of an account has (schedules, A2A push targets), kept by the
// account's directory so the Worker can hold an account-wide limit (LIMITS.schedulesPerAccount,
// LIMITS.pushTargetsPerAccount) before an add reaches an agent. Each agent object sets its own
// count after every change (an add, a removal, a one-off done). The check before each add reserves
// a place for it, counted for every other agent until that agent's larger count arrives (the add
// landed) or RESERVE_MS passes (it was refused, or its report is late), so two adds at once in two
// agents cannot both take the last place. Reservations live in memory: a directory restarted
// while adds are in flight forgets them, and then those adds alone may pass the limit.
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

/** How long a check's reservation holds a place for its add: far longer than an add takes. */
export const RESERVE_MS = 30_000;

export class AgentCounts {
  /** Per agent, when each place reserved for an add in flight lapses. */
  private readonly reserved = new Map<string, number[]>();

  constructor(private readonly sql: SqlStorage, private readonly thing: CountedThing) {
    migrate(sql, thing.table, migrations(thing));
  }

  set(agent: string, count: number): void {
    const { table, column } = this.thing;
    const before = this.sql.exec<{ n: number }>(`SELECT ${column} AS n FROM ${table} WHERE agent = ?`, agent).toArray()[0]?.n ?? 0;
    // The adds that landed take their reservations with them.
    const places = this.reserved.get(agent)?.slice(Math.max(0, count - before));
    if (places && places.length > 0) this.reserved.set(agent, places);
    else this.reserved.delete(agent);
    if (count === 0) this.sql.exec(`DELETE FROM ${table} WHERE agent = ?`, agent);
    else this.sql.exec(`INSERT INTO ${table} (agent, ${column}) VALUES (?, ?) ON CONFLICT(agent) DO UPDATE SET ${column} = excluded.${column}`, agent, count);
  }

  /** The account's count, all agents but `except` (whose own count its object checks). */
  total(except: string): number {
    const { table, column } = this.thing;
    return this.sql.exec<{ n: number }>(`SELECT COALESCE(SUM(${column}), 0) AS n FROM ${table} WHERE agent != ?`, except).one().n;
  }

  /** Before an add in `agent`: the account's count besides it, with the places other agents' adds in flight hold; reserves one for this add. */
  reserve(agent: string, now: number): number {
    let held = 0;
    for (const [other, places] of this.reserved) {
      const live = places.filter((until) => until > now);
      if (live.length === 0) this.reserved.delete(other);
      else this.reserved.set(other, live);
      if (other !== agent) held += live.length;
    }
    this.reserved.set(agent, [...(this.reserved.get(agent) ?? []), now + RESERVE_MS]);
    return this.total(agent) + held;
  }
}
