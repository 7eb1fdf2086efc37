// The agent object's side of the directory: sends a presence report by RPC only when what the
// directory shows would change, and remembers what it last sent in SQLite, so an evicted and
// rebuilt agent object does not report the same presence again. While it has connections it also
// confirms the entry every two TTLs (rules/directory-lease.ts), so an entry nobody confirms any
// more turns unknown by itself.
import { addMissingColumns, migrate, type Migration } from "./migrations.ts";
import { listedInDirectory } from "../rules/presence.ts";
import type { Presence } from "../wire/server-frames.ts";
import type { PresenceReport } from "../wire/protocol.ts";
import { nextConfirmation } from "../rules/directory-lease.ts";
import type { AgentDirectory } from "./directory-object.ts";
import type { AgentMetrics } from "../rules/metrics.ts";
import { directoryObjectName } from "./names.ts";
import type { Clock } from "./clock.ts";

/** How soon a failed report or confirmation to the directory is tried again. */
export const REPORT_RETRY_MS = 5_000;

/** Presence without what changes on its own (heartbeat ages, the wake counter): equal means nothing to report. */
function presenceFingerprint(presence: Presence): string {
  const { wakes: _wakes, connections, ...rest } = presence;
  return JSON.stringify({ ...rest, connections: connections.map(({ heartbeat_age_seconds: _age, ...c }) => c) });
}

/**
 * Reports leave one at a time and in order; while one is in flight, newer ones replace each
 * other (presence and metrics each keep their latest), so the directory always ends with the
 * latest. A failed report forgets what was sent, so the next change (at the latest the next
 * presence scan) sends it again.
 */
/** What one RPC to the directory carries: the presence when it changed, the metrics snapshot when it did. */
export interface DirectoryUpdate {
  presence?: PresenceReport;
  metrics?: AgentMetrics;
}

/** The numbered migrations of the report table (migrations.ts); 1: as the releases before versions left it (confirmations came later). */
const REPORT_MIGRATIONS: readonly Migration[] = [(sql) => {
  sql.exec(`CREATE TABLE IF NOT EXISTS directory_report (id INTEGER PRIMARY KEY CHECK (id = 1), fingerprint TEXT NOT NULL)`);
  addMissingColumns(sql, "directory_report", { confirmed_at: "INTEGER", connected: "INTEGER NOT NULL DEFAULT 0" });
}];

type ReportRow = { fingerprint: string; confirmed_at: number | null; connected: number };

export class DirectoryReporter {
  private pending: DirectoryUpdate | null = null;
  /** The stored row as last read or written (undefined: not read yet); this class is its only writer, and every snapshot reads it. */
  private stored: ReportRow | null | undefined = undefined;
  /** Told when a metrics snapshot could not be sent, so it is sent again with the next change. */
  private metricsLost: () => void = () => {};
  /** After a failed confirmation, none is tried before this (in memory: an evicted object tries at its next wake). */
  private confirmRetryAt = 0;
  private flushing = false;
  /** `onFailure`: told when a report or confirmation failed, so the object wakes to try again instead of leaving it to chance. */
  constructor(private readonly sql: SqlStorage, private readonly heartbeatTtlMs: number, private readonly clock: Clock, readonly onFailure: () => void) {
    migrate(sql, "directory_report", REPORT_MIGRATIONS);
  }

  /**
   * When the entry must be confirmed next (null: the directory lists nothing of this agent that
   * needs it). After a failed confirmation, not before its retry time: a failing directory gets
   * one call per agent every REPORT_RETRY_MS at most, never a call per wake.
   */
  nextConfirmation(): number | null {
    const row = this.row();
    const due = row ? nextConfirmation(row.confirmed_at, row.connected === 1, this.heartbeatTtlMs) : null;
    return due === null ? null : Math.max(due, this.confirmRetryAt);
  }

  /**
   * Confirms the stored entry when it is due. A directory that has no entry to confirm (it lost it,
   * or never stored it) gets the whole report again by `resend`.
   */
  confirmIfDue(ctx: DurableObjectState, directories: DurableObjectNamespace<AgentDirectory>, account: string, agent: string, now: number, resend: () => void): void {
    const due = this.nextConfirmation();
    if (due === null || now < due) return;
    const stub = directories.get(directories.idFromName(directoryObjectName(account)));
    const before = this.row()?.confirmed_at ?? null;
    this.markConfirmed(now);
    ctx.waitUntil(stub.confirm(agent, now).then((found) => {
      this.confirmRetryAt = 0;
      if (found) return;
      this.forget();
      resend();
    }, () => {
      // Not confirmed: the entry keeps its old time (it will turn unknown, which is true), and the next try waits.
      this.markConfirmed(before);
      this.confirmRetryAt = this.clock.now() + REPORT_RETRY_MS;
      this.onFailure();
    }));
  }

  /**
   * Sends what changed: the presence when the directory would show something else, and `metrics`
   * (already known to be new) with it, in one RPC. `metricsLost` is told when that RPC fails.
   * True when it sent a new presence.
   */
  report(
    ctx: DurableObjectState, directories: DurableObjectNamespace<AgentDirectory>, account: string, presence: Presence,
    metrics: AgentMetrics | null, metricsLost: () => void,
  ): boolean {
    const update: DirectoryUpdate = { ...this.pending };
    if (metrics) {
      update.metrics = metrics;
      this.metricsLost = metricsLost;
    }
    const fingerprint = presenceFingerprint(presence);
    const last = this.lastFingerprint();
    // The directory lists only agents with connections or waiting work: one it never heard of needs no "gone".
    if (fingerprint !== last) {
      this.remember(fingerprint);
      if (last !== null || listedInDirectory(presence)) {
        const now = this.clock.now();
        update.presence = { ...presence, reported_at: now };
        const connected = presence.connection_count > 0 ? 1 : 0;
        this.sql.exec(`UPDATE directory_report SET confirmed_at = ?, connected = ? WHERE id = 1`, now, connected);
        this.stored = { fingerprint, confirmed_at: now, connected };
      }
    }
    if (!update.presence && !update.metrics) return false;
    this.pending = update;
    if (!this.flushing) ctx.waitUntil(this.flush(directories.get(directories.idFromName(directoryObjectName(account)))));
    return update.presence !== undefined;
  }

  private async flush(stub: DurableObjectStub<AgentDirectory>): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending) {
        const update = this.pending;
        this.pending = null;
        try {
          await stub.update(update);
        } catch {
          if (update.presence) this.forget();
          if (update.metrics) this.metricsLost();
          this.onFailure();
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private row(): ReportRow | null {
    if (this.stored === undefined) {
      this.stored = this.sql.exec<ReportRow>(`SELECT fingerprint, confirmed_at, connected FROM directory_report WHERE id = 1`).toArray()[0] ?? null;
    }
    return this.stored;
  }

  private lastFingerprint(): string | null {
    return this.row()?.fingerprint ?? null;
  }

  private markConfirmed(at: number | null): void {
    this.sql.exec(`UPDATE directory_report SET confirmed_at = ? WHERE id = 1`, at);
    const row = this.row();
    if (row) this.stored = { ...row, confirmed_at: at };
  }

  private remember(fingerprint: string): void {
    this.sql.exec(
      `INSERT INTO directory_report (id, fingerprint) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET fingerprint = excluded.fingerprint`,
      fingerprint,
    );
    const row = this.row();
    this.stored = { fingerprint, confirmed_at: row?.confirmed_at ?? null, connected: row?.connected ?? 0 };
  }

  private forget(): void {
    this.sql.exec(`DELETE FROM directory_report WHERE id = 1`);
    this.stored = null;
  }
}
