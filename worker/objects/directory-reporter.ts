// The agent object's side of the directory: sends a presence report by RPC only when what the
// directory shows would change, and remembers what it last sent in SQLite, so an evicted and
// rebuilt agent object does not report the same presence again. While it has connections it also
// confirms the entry every two TTLs (rules/directory-lease.ts), so an entry nobody confirms any
// more turns unknown by itself.
import { listedInDirectory, type Presence } from "../wire/presence.ts";
import type { PresenceReport } from "../wire/protocol.ts";
import { nextConfirmation } from "../rules/directory-lease.ts";
import type { AgentDirectory } from "./directory-object.ts";
import { directoryObjectName } from "./names.ts";

/** Presence without what changes on its own (heartbeat ages, the wake counter): equal means nothing to report. */
export function presenceFingerprint(presence: Presence): string {
  const { wakes: _wakes, connections, ...rest } = presence;
  return JSON.stringify({ ...rest, connections: connections.map(({ heartbeat_age_seconds: _age, ...c }) => c) });
}

/**
 * Reports leave one at a time and in order; while one is in flight, newer ones replace each
 * other, so the directory always ends with the latest. A failed report forgets what was sent,
 * so the next reconcile (at the latest the next presence scan) sends it again.
 */
export class DirectoryReporter {
  private pending: PresenceReport | null = null;
  private flushing = false;
  /** Told when a report or confirmation failed, so the object wakes to try again instead of leaving it to chance. */
  onFailure: () => void = () => {};

  constructor(private readonly sql: SqlStorage, private readonly heartbeatTtlMs: number) {
    sql.exec(`CREATE TABLE IF NOT EXISTS directory_report (id INTEGER PRIMARY KEY CHECK (id = 1), fingerprint TEXT NOT NULL)`);
    const columns = sql.exec<{ name: string }>(`PRAGMA table_info(directory_report)`).toArray().map((c) => c.name);
    if (!columns.includes("confirmed_at")) sql.exec(`ALTER TABLE directory_report ADD COLUMN confirmed_at INTEGER`);
    if (!columns.includes("connected")) sql.exec(`ALTER TABLE directory_report ADD COLUMN connected INTEGER NOT NULL DEFAULT 0`);
  }

  /** When the entry must be confirmed next (null: the directory lists nothing of this agent that needs it). */
  nextConfirmation(): number | null {
    const row = this.row();
    return row ? nextConfirmation(row.confirmed_at, row.connected === 1, this.heartbeatTtlMs) : null;
  }

  /**
   * Confirms the stored entry when it is due. A directory that has no entry to confirm (it lost it,
   * or never stored it) gets the whole report again by `resend`.
   */
  confirmIfDue(ctx: DurableObjectState, directories: DurableObjectNamespace<AgentDirectory>, account: string, agent: string, now: number, resend: () => void): void {
    const due = this.nextConfirmation();
    if (due === null || now < due) return;
    this.markConfirmed(now);
    const stub = directories.get(directories.idFromName(directoryObjectName(account)));
    ctx.waitUntil(stub.confirm(agent, now).then((found) => {
      if (found) return;
      this.forget();
      resend();
    }, () => {
      this.markConfirmed(null);
      this.onFailure();
    }));
  }

  report(ctx: DurableObjectState, directories: DurableObjectNamespace<AgentDirectory>, account: string, presence: Presence): void {
    const fingerprint = presenceFingerprint(presence);
    const last = this.lastFingerprint();
    if (fingerprint === last) return;
    this.remember(fingerprint);
    // The directory lists only agents with connections or waiting work: one it never heard of needs no "gone".
    if (last === null && !listedInDirectory(presence)) return;
    const now = Date.now();
    this.pending = { ...presence, reported_at: now };
    this.sql.exec(`UPDATE directory_report SET confirmed_at = ?, connected = ? WHERE id = 1`, now, presence.connection_count > 0 ? 1 : 0);
    if (!this.flushing) ctx.waitUntil(this.flush(directories.get(directories.idFromName(directoryObjectName(account)))));
  }

  private async flush(stub: DurableObjectStub<AgentDirectory>): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending) {
        const entry = this.pending;
        this.pending = null;
        try {
          await stub.report(entry);
        } catch {
          this.forget();
          this.onFailure();
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private row(): { fingerprint: string; confirmed_at: number | null; connected: number } | null {
    return this.sql.exec<{ fingerprint: string; confirmed_at: number | null; connected: number }>(
      `SELECT fingerprint, confirmed_at, connected FROM directory_report WHERE id = 1`).toArray()[0] ?? null;
  }

  private lastFingerprint(): string | null {
    return this.row()?.fingerprint ?? null;
  }

  private markConfirmed(at: number | null): void {
    this.sql.exec(`UPDATE directory_report SET confirmed_at = ? WHERE id = 1`, at);
  }

  private remember(fingerprint: string): void {
    this.sql.exec(
      `INSERT INTO directory_report (id, fingerprint) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET fingerprint = excluded.fingerprint`,
      fingerprint,
    );
  }

  private forget(): void {
    this.sql.exec(`DELETE FROM directory_report WHERE id = 1`);
  }
}
