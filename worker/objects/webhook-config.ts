// SQLite seam for one webhook's configuration: an agent object keeps its agent's, the directory
// object its account's. The secrets are stored here and leave only to sign deliveries (and, for the
// account's, by RPC to the account's own agent objects); views never carry them, except the answer
// to the PUT for which baton made the secret.
import { secretsAfterPut, type WebhookSecrets } from "../rules/webhooks.ts";
import { WEBHOOK_LIMITS, type WebhookConfigBody, type WebhookView } from "../wire/webhooks.ts";
import { addMissingColumns, migrate, type Migration } from "./migrations.ts";
import { newWebhookSecret } from "./webhook-signature.ts";

export interface WebhookConfig extends WebhookSecrets {
  url: string;
  noHolderAfterMs: number;
  /** The coordinator origin of the request that configured it: event links point there. */
  origin: string;
  updatedAt: number;
}

/** The numbered migrations of the configuration table (migrations.ts). */
const WEBHOOK_CONFIG_MIGRATIONS: readonly Migration[] = [(sql) => {
  // 1: as the releases before versions left it. Rotation (a replaced secret signs beside the new one until it expires) came later: rows from before have none.
  sql.exec(`CREATE TABLE IF NOT EXISTS webhook_config (
    one INTEGER PRIMARY KEY CHECK (one = 1), url TEXT NOT NULL, secret TEXT NOT NULL,
    no_holder_after_ms INTEGER NOT NULL, origin TEXT NOT NULL, updated_at INTEGER NOT NULL)`);
  addMissingColumns(sql, "webhook_config", { old_secret: "TEXT", old_secret_expires_at: "INTEGER" });
}];

type Row = { url: string; secret: string; old_secret: string | null; old_secret_expires_at: number | null; no_holder_after_ms: number; origin: string; updated_at: number };

export class WebhookConfigStore {
  /** The configuration as last read or written (undefined: not read yet); this class is its only writer. */
  private known: WebhookConfig | null | undefined = undefined;

  constructor(private readonly sql: SqlStorage) {
    migrate(sql, "webhook_config", WEBHOOK_CONFIG_MIGRATIONS);
  }

  get(): WebhookConfig | null {
    if (this.known !== undefined) return this.known;
    const row = this.sql.exec<Row>(`SELECT url, secret, old_secret, old_secret_expires_at, no_holder_after_ms, origin, updated_at FROM webhook_config`).toArray()[0];
    this.known = row
      ? {
          url: row.url, secret: row.secret, oldSecret: row.old_secret, oldSecretExpiresAt: row.old_secret_expires_at,
          noHolderAfterMs: row.no_holder_after_ms, origin: row.origin, updatedAt: row.updated_at,
        }
      : null;
    return this.known;
  }

  set(c: WebhookConfig): void {
    this.sql.exec(
      `INSERT INTO webhook_config (one, url, secret, old_secret, old_secret_expires_at, no_holder_after_ms, origin, updated_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(one) DO UPDATE SET url = excluded.url, secret = excluded.secret, old_secret = excluded.old_secret,
         old_secret_expires_at = excluded.old_secret_expires_at, no_holder_after_ms = excluded.no_holder_after_ms,
         origin = excluded.origin, updated_at = excluded.updated_at`,
      c.url, c.secret, c.oldSecret, c.oldSecretExpiresAt, c.noHolderAfterMs, c.origin, c.updatedAt,
    );
    this.known = { ...c };
  }

  /**
   * Stores a validated PUT body over what is stored (`origin`: the coordinator origin it came to)
   * and answers its view, with the secret when baton made it (shown this once).
   */
  put(body: WebhookConfigBody, origin: string, agent: string | null, now: number): WebhookView {
    const keepMs = (body.keep_old_secret_seconds ?? WEBHOOK_LIMITS.keepOldSecretSeconds.default) * 1000;
    const { made, ...secrets } = secretsAfterPut(this.get(), { secret: body.secret, rotate: body.rotate_secret, keepMs }, now, newWebhookSecret);
    const config: WebhookConfig = {
      url: body.url, ...secrets, origin, updatedAt: now,
      noHolderAfterMs: (body.no_holder_after_seconds ?? WEBHOOK_LIMITS.noHolderAfterSeconds.default) * 1000,
    };
    this.set(config);
    return { ...webhookView(config, agent, now), ...(made === null ? {} : { secret: made }) };
  }

  /** True when there was one to delete. */
  delete(): boolean {
    this.known = null;
    return this.sql.exec(`DELETE FROM webhook_config`).rowsWritten > 0;
  }
}

/** A configuration as GET shows it: everything but the secrets. */
export function webhookView(c: WebhookConfig, agent: string | null, now: number): WebhookView {
  const oldLive = c.oldSecret !== null && c.oldSecretExpiresAt !== null && now < c.oldSecretExpiresAt;
  return {
    scope: agent === null ? "account" : "agent", agent, url: c.url, no_holder_after_seconds: c.noHolderAfterMs / 1000, link_origin: c.origin, updated_at: c.updatedAt,
    old_secret_expires_at: oldLive ? c.oldSecretExpiresAt : null,
  };
}
