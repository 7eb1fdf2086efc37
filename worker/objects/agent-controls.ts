// Where an agent may run, as its object stores it: pause, drained machines, the runner the lease
// went to, and the runner a restarted object keeps the lease for. The rules that read these are in
// ../rules/preference.ts, called by ../rules/agent-plan.ts with this class's snapshot.
import type { PreferenceConfig } from "../config.ts";
import type { ControlsSnapshot } from "../rules/agent-plan.ts";
import type { LeaseRecord } from "../rules/election.ts";
import type { ControlChange, ControlOutcome, ControlRoute } from "../rules/plan/controls.ts";
import type { AgentControlsReport } from "../wire/server-frames.ts";
import * as z from "zod/mini";
import { KeyValueTable } from "./kv-table.ts";
import { migrate, type Migration } from "./migrations.ts";
import { StoredJson } from "../rules/stored-json.ts";
import { readOr } from "./stored-read.ts";

export type { ControlOutcome, ControlRoute };

interface Reservation {
  runner: string;
  until: number;
  /** The previous holder's machine: draining it ends the wait (absent in reservations stored before). */
  machine?: string | null;
}

const reservationJson = new StoredJson<Reservation>("controls.reserved", z.object({
  runner: z.string(), until: z.number(), machine: z.optional(z.nullable(z.string())),
}));

const DRAINED_MIGRATIONS: Migration[] = [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS drained_machines (machine TEXT PRIMARY KEY, since INTEGER NOT NULL)`),
];

/**
 * Both tables are read once, when the object starts, and kept in memory: every election and every
 * hand-out consults them, and only this class writes them.
 */
export class AgentControls {
  private readonly values: KeyValueTable;
  private readonly drainedSince: Map<string, number>;

  constructor(private readonly sql: SqlStorage, readonly config: PreferenceConfig) {
    this.values = new KeyValueTable(sql, "controls");
    migrate(sql, "drained_machines", DRAINED_MIGRATIONS);
    const drained = sql.exec<{ machine: string; since: number }>(`SELECT machine, since FROM drained_machines ORDER BY machine`).toArray();
    this.drainedSince = new Map(drained.map((r) => [r.machine, r.since]));
  }

  private get(key: string): string | null {
    return this.values.get(key);
  }

  /** Writes only what changes: noteHolder runs on every lease transition. */
  private set(key: string, value: string | null): void {
    this.values.set(key, value);
  }

  /** Paused: nothing is handed out, messages queue, the lease stays where it is. */
  pausedSince(): number | null {
    const raw = this.get("paused_since");
    return raw === null ? null : Number(raw);
  }

  paused(): boolean {
    return this.pausedSince() !== null;
  }

  /** Drained machines and since when, in machine order. */
  drained(): ReadonlyMap<string, number> {
    return this.drainedSince;
  }

  /** Stores what a control changed, as its plan decided it (rules/plan/controls.ts). */
  store(change: ControlChange): void {
    if (change.pausedSince !== undefined) this.set("paused_since", change.pausedSince === null ? null : String(change.pausedSince));
    const drained = this.drainedSince;
    if (change.undrain === null) {
      this.sql.exec(`DELETE FROM drained_machines`);
      drained.clear();
    } else if (change.undrain !== undefined) {
      this.sql.exec(`DELETE FROM drained_machines WHERE machine = ?`, change.undrain);
      drained.delete(change.undrain);
    }
    if (change.drain) {
      const { machine, since } = change.drain;
      this.sql.exec(`INSERT INTO drained_machines (machine, since) VALUES (?, ?)`, machine, since);
      // Kept in machine order, as the table is read, so reports list machines the same way.
      const ordered = [...drained, [machine, since] as const].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      drained.clear();
      for (const [m, at] of ordered) drained.set(m, at);
    }
    if (change.endReservation) this.set("reserved", null);
  }

  private reservation(): Reservation | null {
    const raw = this.get("reserved");
    if (raw === null) return null;
    // A corrupt reservation holds the lease for nobody, and is forgotten: any runner may take the lease at once.
    const reserved = readOr(reservationJson, raw, null, "no reservation; forgotten");
    if (reserved === null) this.set("reserved", null);
    return reserved;
  }

  /**
   * The reservation still in force: not over, and no longer than the grace configured now, so a
   * redeploy that shortens the grace or turns it off also ends a wait begun under the longer one.
   */
  private activeReservation(now: number): Reservation | null {
    const reserved = this.reservation();
    return reserved && now < reserved.until && reserved.until <= now + this.config.restartGraceMs ? reserved : null;
  }

  /**
   * The object starts with no socket while the stored lease names a holder: a deploy or crash
   * dropped every connection (after a hibernation eviction the sockets are still there). The lease
   * waits for that holder's runner for the restart grace, unless its machine was drained.
   */
  noteRestart(lease: LeaseRecord, now: number): void {
    const runner = this.get("holder_runner");
    if (lease.holderClaim === null || runner === null || this.config.restartGraceMs === 0) return;
    if (lease.holderMachine !== null && this.drained().has(lease.holderMachine)) return;
    this.set("reserved", reservationJson.write({ runner, until: now + this.config.restartGraceMs, machine: lease.holderMachine }));
  }

  /** Remembers whose runner holds the lease now (null: nobody, or an anonymous runner); a new holder ends any reservation. */
  noteHolder(runner: string | null, held: boolean): void {
    this.set("holder_runner", runner);
    if (held) this.set("reserved", null);
  }

  /** What an election needs to know of the controls, at `now`. */
  snapshot(now: number): ControlsSnapshot {
    return {
      paused: this.paused(), drained: new Set(this.drainedSince.keys()), hysteresisMs: this.config.hysteresisMs, reserved: this.activeReservation(now),
      reservedMachine: this.reservation()?.machine ?? null,
    };
  }

  report(now: number): AgentControlsReport {
    const reserved = this.activeReservation(now);
    return {
      paused: this.paused(),
      paused_since: this.pausedSince(),
      drained: [...this.drained()].map(([machine, since]) => ({ machine, since })),
      hysteresis_seconds: this.config.hysteresisMs / 1000,
      reserved_until: reserved?.until ?? null,
    };
  }
}
