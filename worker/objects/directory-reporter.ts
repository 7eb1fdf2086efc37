// The agent object's side of the directory: sends a presence report by RPC only when what the
// directory shows would change, and remembers what it last sent in SQLite, so an evicted and
// rebuilt agent object does not report the same presence again.
import type { Presence } from "../wire/presence.ts";
import type { DirectoryEntry } from "../wire/protocol.ts";
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
  private pending: DirectoryEntry | null = null;
  private flushing = false;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS directory_report (id INTEGER PRIMARY KEY CHECK (id = 1), fingerprint TEXT NOT NULL)`);
  }

  report(ctx: DurableObjectState, directories: DurableObjectNamespace<AgentDirectory>, account: string, presence: Presence): void {
    const fingerprint = presenceFingerprint(presence);
    const last = this.lastFingerprint();
    if (fingerprint === last) return;
    this.remember(fingerprint);
    // The directory lists only agents with connections: one it never heard of needs no "gone".
    if (last === null && presence.connection_count === 0) return;
    this.pending = { ...presence, reported_at: Date.now() };
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
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private lastFingerprint(): string | null {
    return this.sql.exec<{ fingerprint: string }>(`SELECT fingerprint FROM directory_report WHERE id = 1`).toArray()[0]?.fingerprint ?? null;
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
