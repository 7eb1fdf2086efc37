// SQLite seam for what the message leases need besides the messages: the agent's message policy
// (mode, max running, run timeout, max attempts) and the agent-wide lease token counter.
import { DEFAULT_POLICY, type MessagePolicy } from "../rules/message-lease.ts";

export class RunPolicyStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS run_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
  }

  private get(key: string): string | null {
    const rows = this.sql.exec<{ value: string }>(`SELECT value FROM run_meta WHERE key = ?`, key).toArray();
    return rows.length ? rows[0]!.value : null;
  }

  private set(key: string, value: string): void {
    this.sql.exec(`INSERT INTO run_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value);
  }

  policy(): MessagePolicy {
    const raw = this.get("policy");
    return raw ? { ...DEFAULT_POLICY, ...(JSON.parse(raw) as Partial<MessagePolicy>) } : DEFAULT_POLICY;
  }

  savePolicy(policy: MessagePolicy): void {
    this.set("policy", JSON.stringify(policy));
  }

  /** The last message lease token handed out: tokens only grow, across every message of the agent and across restarts. */
  tokenCounter(): number {
    return Number(this.get("token_counter") ?? "0");
  }

  saveTokenCounter(last: number): void {
    if (last !== this.tokenCounter()) this.set("token_counter", String(last));
  }
}
