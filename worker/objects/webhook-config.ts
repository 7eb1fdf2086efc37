// SQLite seam for one webhook's configuration: an agent object keeps its agent's, the directory
// object its account's. The secret is stored here and leaves only to sign deliveries (and, for the
// account's, by RPC to the account's own agent objects); views never carry it.
import { WEBHOOK_LIMITS, type WebhookConfigBody, type WebhookView } from "../wire/webhooks.ts";

export interface WebhookConfig {
  url: string;
  secret: string;
  noHolderAfterMs: number;
  /** The coordinator origin of the request that configured it: event links point there. */
  origin: string;
  updatedAt: number;
}

export class WebhookConfigStore {
  /** The configuration as last read or written (undefined: not read yet); this class is its only writer. */
  private known: WebhookConfig | null | undefined = undefined;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS webhook_config (
      one INTEGER PRIMARY KEY CHECK (one = 1), url TEXT NOT NULL, secret TEXT NOT NULL,
      no_holder_after_ms INTEGER NOT NULL, origin TEXT NOT NULL, updated_at INTEGER NOT NULL)`);
  }

  get(): WebhookConfig | null {
    if (this.known !== undefined) return this.known;
    const row = this.sql.exec<{ url: string; secret: string; no_holder_after_ms: number; origin: string; updated_at: number }>(
      `SELECT url, secret, no_holder_after_ms, origin, updated_at FROM webhook_config`).toArray()[0];
    this.known = row ? { url: row.url, secret: row.secret, noHolderAfterMs: row.no_holder_after_ms, origin: row.origin, updatedAt: row.updated_at } : null;
    return this.known;
  }

  set(c: WebhookConfig): void {
    this.sql.exec(
      `INSERT INTO webhook_config (one, url, secret, no_holder_after_ms, origin, updated_at) VALUES (1, ?, ?, ?, ?, ?)
       ON CONFLICT(one) DO UPDATE SET url = excluded.url, secret = excluded.secret, no_holder_after_ms = excluded.no_holder_after_ms,
         origin = excluded.origin, updated_at = excluded.updated_at`,
      c.url, c.secret, c.noHolderAfterMs, c.origin, c.updatedAt,
    );
    this.known = { ...c };
  }

  /** True when there was one to delete. */
  delete(): boolean {
    this.known = null;
    return this.sql.exec(`DELETE FROM webhook_config`).rowsWritten > 0;
  }
}

/** A configuration as GET shows it: everything but the secret. */
export function webhookView(c: WebhookConfig, agent: string | null): WebhookView {
  return {
    scope: agent === null ? "account" : "agent", agent, url: c.url, no_holder_after_seconds: c.noHolderAfterMs / 1000, link_origin: c.origin, updated_at: c.updatedAt,
  };
}

/** A validated PUT body as stored; `origin` is the coordinator origin the request came to. */
export function configFromBody(body: WebhookConfigBody, origin: string, now: number): WebhookConfig {
  return {
    url: body.url, secret: body.secret, origin, updatedAt: now,
    noHolderAfterMs: (body.no_holder_after_seconds ?? WEBHOOK_LIMITS.noHolderAfterSeconds.default) * 1000,
  };
}
