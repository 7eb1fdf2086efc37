// How many of something each agent of an account has (schedules, A2A push targets), kept by the
// account's directory so the Worker can hold an account-wide limit (LIMITS.schedulesPerAccount,
// LIMITS.pushTargetsPerAccount) before an add reaches an agent. Each agent object sets its own
// count after every change (an add, a removal, a one-off done). The check before each add reserves
// a place for it (none when the account is already full: that add is refused anyway), counted for
// every other agent until that agent's larger count arrives (the add landed), the Worker releases
// it (the agent refused the add, or it replaced something and the count did not grow), or
// RESERVE_MS passes (the Worker died mid-add, or the report is late), so two adds at once in two
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

/** What the check before an add answers: the account's count besides the agent, places in flight included, and the place this add holds (null: none, the account is full). */
export interface Reservation {
  elsewhere: number;
  place: number | null;
}

interface Place {
  id: number;
  until: number;
}

export class AgentCounts {
  /** Per agent, the places reserved for its adds in flight, oldest first, each with when it lapses. */
  private readonly reserved = new Map<string, Place[]>();
  private lastPlace = 0;

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

  /** Before an add in `agent`: the account's count besides it, with the places other agents' adds in flight hold; reserves one for this add unless that already reaches `limit`. */
  reserve(agent: string, now: number, limit: number): Reservation {
    let held = 0;
    for (const [other, places] of this.reserved) {
      const live = places.filter((p) => p.until > now);
      if (live.length === 0) this.reserved.delete(other);
      else this.reserved.set(other, live);
      if (other !== agent) held += live.length;
    }
    const elsewhere = this.total(agent) + held;
    if (elsewhere >= limit) return { elsewhere, place: null };
    const place = { id: ++this.lastPlace, until: now + RESERVE_MS };
    this.reserved.set(agent, [...(this.reserved.get(agent) ?? []), place]);
    return { elsewhere, place: place.id };
  }

  /** Gives back a place whose add did not grow the count (refused, or a replace); a place already taken or lapsed is nothing. */
  release(agent: string, place: number): void {
    const left = this.reserved.get(agent)?.filter((p) => p.id !== place) ?? [];
    if (left.length > 0) this.reserved.set(agent, left);
    else this.reserved.delete(agent);
  }
}
