// SQLite seam for what the message leases need besides the messages: the agent's message policy
// (mode, max running, run timeout, max attempts) and the agent-wide lease token counter.
import { DEFAULT_POLICY, type MessagePolicy } from "../rules/message-lease.ts";
import { KeyValueTable } from "./kv-table.ts";

export class RunPolicyStore {
  private readonly values: KeyValueTable;
  /** The parsed policy, kept until the next save: every event's snapshot reads it. */
  private parsed: MessagePolicy | null = null;

  constructor(sql: SqlStorage) {
    this.values = new KeyValueTable(sql, "run_meta");
  }

  policy(): MessagePolicy {
    if (this.parsed === null) {
      const raw = this.values.get("policy");
      this.parsed = raw ? { ...DEFAULT_POLICY, ...(JSON.parse(raw) as Partial<MessagePolicy>) } : DEFAULT_POLICY;
    }
    return this.parsed;
  }

  savePolicy(policy: MessagePolicy): void {
    this.values.set("policy", JSON.stringify(policy));
    this.parsed = null;
  }

  /** The last message lease token handed out: tokens only grow, across every message of the agent and across restarts. */
  tokenCounter(): number {
    return Number(this.values.get("token_counter") ?? "0");
  }

  saveTokenCounter(last: number): void {
    this.values.set("token_counter", String(last));
  }
}
