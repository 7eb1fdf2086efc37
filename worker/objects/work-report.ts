// What presence shows of an agent's work: its policy, counts by status, and the newest running,
// parked, failed and cancelled messages, each list bounded.
import type { MessagePolicy } from "../rules/message-lease.ts";
import { unknownOutcomeReason } from "../rules/step-journal.ts";
import type { WorkReport } from "../wire/server-frames.ts";
import { cancelOf, questionOf, type MessageStore } from "./message-store.ts";

const REPORTED_RUNNING = 50;
const REPORTED_PARKED = 20;
const REPORTED_FAILED = 10;
const REPORTED_CANCELLED = 10;

/** The work section of presence; `policyProblem`: what is wrong with the stored policy (the defaults are shown); `machines`: the machine of each connected runner (by runnerOf). */
export function workReport(messages: MessageStore, policy: MessagePolicy, policyProblem: string | null, machines: ReadonlyMap<string, string>): WorkReport {
  return {
    mode: policy.mode,
    max_running: policy.maxRunning,
    run_timeout_seconds: policy.runTimeoutMs / 1000,
    max_attempts: policy.maxAttempts,
    ...(policyProblem === null ? {} : { policy_problem: policyProblem }),
    counts: messages.census.countByStatus(),
    running: messages.census.inStatus("running", REPORTED_RUNNING).map((m) => ({
      id: m.id, attempt: m.attempts, token: m.token, claim_seq: m.runner === null ? null : Number(m.runner),
      machine: machines.get(m.runner ?? "") ?? null, expires_at: m.expires_at, group: m.msg_group,
      heartbeat_at: m.heartbeat_at,
    })),
    parked: messages.census.inStatus("parked", REPORTED_PARKED).map((m) => {
      const asked = questionOf(m);
      return {
        id: m.id, attempt: m.attempts, deadline: m.expires_at, group: m.msg_group, waiting_on: m.pending_ask,
        reason: m.pending_ask === null ? null : unknownOutcomeReason(m.pending_ask),
        ...(asked === null ? {} : { question: asked.text, choices: asked.choices }),
        ...(m.on_deadline === null ? {} : { on_deadline: m.on_deadline }),
        // A vote changes the entry, so every page watching fetches who has answered now.
        ...(asked?.votes?.length ? { answered: asked.votes.length } : {}),
      };
    }),
    failed: messages.census.inStatus("failed", REPORTED_FAILED).map((m) => ({ id: m.id, attempts: m.attempts, error: m.error })),
    cancelled: messages.census.inStatus("cancelled", REPORTED_CANCELLED).flatMap((m) => {
      const c = cancelOf(m);
      if (c === null) return [];
      return [{ id: m.id, at: c.at, account: c.account, token: c.token, via: c.via, reason: c.reason }];
    }),
  };
}
