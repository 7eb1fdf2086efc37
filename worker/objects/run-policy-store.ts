// SQLite seam for what the message leases need besides the messages: the agent's message policy
// (mode, max running, run timeout, max attempts) and the agent-wide lease token counter.
import { DEFAULT_POLICY, type MessagePolicy } from "../rules/message-lease.ts";
import * as z from "zod/mini";
import { ON_BUSY, POLICY_MODES } from "../wire/enums.ts";
import { KeyValueTable } from "./kv-table.ts";
import { StoredJson } from "../rules/stored-json.ts";
import { reportCorrupt } from "./stored-read.ts";

const maybeMs = z.optional(z.nullable(z.number()));
/** Every field optional: a policy saved before a field existed takes that field's default. */
const policyJson = new StoredJson<Partial<MessagePolicy>>("run_meta.policy", z.object({
  mode: z.optional(z.enum(POLICY_MODES)), maxRunning: z.optional(z.number()), runTimeoutMs: z.optional(z.number()), maxAttempts: z.optional(z.number()),
  heartbeatTimeoutMs: maybeMs, onBusy: z.optional(z.enum(ON_BUSY)), debounceMs: maybeMs, debounceMaxMs: maybeMs, a2a: z.optional(z.boolean()),
  description: z.optional(z.nullable(z.string())),
}));

export class RunPolicyStore {
  private readonly values: KeyValueTable;
  /** The parsed policy and what was wrong with the stored one (null: nothing), kept until the next save: every event's snapshot reads it. */
  private parsed: { policy: MessagePolicy; problem: string | null } | null = null;

  constructor(sql: SqlStorage) {
    this.values = new KeyValueTable(sql, "run_meta");
  }

  /** The policy in force: a corrupt stored one runs as the default until the next `baton agent set` saves a new one. */
  policy(): MessagePolicy {
    return this.read().policy;
  }

  /** What is wrong with the stored policy (null: it read fine, or none was saved), so what shows the policy can say it is the default in force. */
  problem(): string | null {
    return this.read().problem;
  }

  private read(): { policy: MessagePolicy; problem: string | null } {
    if (this.parsed === null) {
      const raw = this.values.get("policy");
      const stored = raw ? policyJson.read(raw) : null;
      if (stored !== null && !stored.ok) reportCorrupt(stored.problem, "the default policy applies");
      this.parsed = stored === null ? { policy: DEFAULT_POLICY, problem: null }
        : stored.ok ? { policy: { ...DEFAULT_POLICY, ...stored.value }, problem: null } : { policy: DEFAULT_POLICY, problem: stored.problem };
    }
    return this.parsed;
  }

  savePolicy(policy: MessagePolicy): void {
    this.values.set("policy", policyJson.write(policy));
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
