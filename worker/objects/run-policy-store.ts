// SQLite seam for what the message leases need besides the messages: the agent's message policy
// (mode, max running, run timeout, max attempts) and the agent-wide lease token counter.
import { DEFAULT_POLICY, type MessagePolicy } from "../rules/message-lease.ts";
import * as z from "zod/mini";
import { ON_BUSY, POLICY_MODES } from "../wire/enums.ts";
import { KeyValueTable } from "./kv-table.ts";
import { StoredJson } from "../rules/stored-json.ts";
import { readOr } from "./stored-read.ts";

const maybeMs = z.optional(z.nullable(z.number()));
/** Every field optional: a policy saved before a field existed takes that field's default. */
const policyJson = new StoredJson<Partial<MessagePolicy>>("run_meta.policy", z.object({
  mode: z.optional(z.enum(POLICY_MODES)), maxRunning: z.optional(z.number()), runTimeoutMs: z.optional(z.number()), maxAttempts: z.optional(z.number()),
  heartbeatTimeoutMs: maybeMs, onBusy: z.optional(z.enum(ON_BUSY)), debounceMs: maybeMs, debounceMaxMs: maybeMs, a2a: z.optional(z.boolean()),
  description: z.optional(z.nullable(z.string())),
}));

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
      // A corrupt policy runs as the default until the next `baton policy` saves a new one.
      this.parsed = raw ? { ...DEFAULT_POLICY, ...readOr(policyJson, raw, {}, "the default policy applies") } : DEFAULT_POLICY;
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
