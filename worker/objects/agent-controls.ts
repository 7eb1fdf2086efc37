// Where an agent may run, as its object stores it: pause, drained machines, the runner the lease
// went to, and the runner a restarted object keeps the lease for. The rules that read these are in
// ../rules/preference.ts, called by ../rules/agent-plan.ts with this class's snapshot.
import type { PreferenceConfig } from "../config.ts";
import type { ControlsSnapshot } from "../rules/agent-plan.ts";
import type { LeaseRecord } from "../rules/election.ts";
import { drainSchema, LIMITS, type ErrorCode } from "../wire/protocol.ts";
import type { AgentControlsReport } from "../wire/server-frames.ts";
import { KeyValueTable } from "./kv-table.ts";

export type ControlRoute = "pause" | "unpause" | "drain" | "undrain";

export type ControlOutcome = { ok: true; changed: boolean } | { ok: false; status: number; code: ErrorCode; message: string };

interface Reservation {
  runner: string;
  until: number;
  /** The previous holder's machine: draining it ends the wait (absent in reservations stored before). */
  machine?: string | null;
}

/**
 * Both tables are read once, when the object starts, and kept in memory: every election and every
 * hand-out consults them, and only this class writes them.
 */
export class AgentControls {
  private readonly values: KeyValueTable;
  private readonly drainedSince: Map<string, number>;

  constructor(private readonly sql: SqlStorage, readonly config: PreferenceConfig) {
    this.values = new KeyValueTable(sql, "controls");
    sql.exec(`CREATE TABLE IF NOT EXISTS drained_machines (machine TEXT PRIMARY KEY, since INTEGER NOT NULL)`);
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

  /**
   * Applies pause, unpause, drain or undrain. Drain without a machine drains the holder's; undrain
   * without one undrains every machine. Refusals change nothing.
   */
  apply(route: ControlRoute, body: unknown, holderMachine: string | null, now: number): ControlOutcome {
    if (route === "pause" || route === "unpause") {
      const on = route === "pause";
      if (on === this.paused()) return { ok: true, changed: false };
      this.set("paused_since", on ? String(now) : null);
      return { ok: true, changed: true };
    }
    const parsed = drainSchema.safeParse(body ?? {});
    if (!parsed.success) return { ok: false, status: 400, code: "bad_request", message: 'body must be {} or {"machine": "<label>"}' };
    const machine = parsed.data.machine;
    const drained = this.drainedSince;
    if (route === "undrain") {
      const changed = machine === undefined ? drained.size > 0 : drained.has(machine);
      if (machine === undefined) {
        this.sql.exec(`DELETE FROM drained_machines`);
        drained.clear();
      } else {
        this.sql.exec(`DELETE FROM drained_machines WHERE machine = ?`, machine);
        drained.delete(machine);
      }
      return { ok: true, changed };
    }
    const target = machine ?? holderMachine;
    if (target === null) return { ok: false, status: 409, code: "no_holder", message: "nobody holds the lease; name the machine to drain" };
    if (drained.has(target)) return { ok: true, changed: false };
    if (drained.size >= LIMITS.drainedMachines) {
      return { ok: false, status: 409, code: "bad_request", message: `at most ${LIMITS.drainedMachines} machines may be drained at once` };
    }
    this.sql.exec(`INSERT INTO drained_machines (machine, since) VALUES (?, ?)`, target, now);
    // Kept in machine order, as the table is read, so reports list machines the same way.
    const ordered = [...drained, [target, now] as const].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    drained.clear();
    for (const [m, since] of ordered) drained.set(m, since);
    // A drained machine takes no lease, so the lease no longer waits for its runner after a restart.
    if (this.reservation()?.machine === target) this.set("reserved", null);
    return { ok: true, changed: true };
  }

  private reservation(): Reservation | null {
    const raw = this.get("reserved");
    return raw === null ? null : (JSON.parse(raw) as Reservation);
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
    this.set("reserved", JSON.stringify({ runner, until: now + this.config.restartGraceMs, machine: lease.holderMachine } satisfies Reservation));
  }

  /** Remembers whose runner holds the lease now (null: nobody, or an anonymous runner); a new holder ends any reservation. */
  noteHolder(runner: string | null, held: boolean): void {
    this.set("holder_runner", runner);
    if (held) this.set("reserved", null);
  }

  /** What an election needs to know of the controls, at `now`. */
  snapshot(now: number): ControlsSnapshot {
    return { paused: this.paused(), drained: new Set(this.drainedSince.keys()), hysteresisMs: this.config.hysteresisMs, reserved: this.activeReservation(now) };
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
