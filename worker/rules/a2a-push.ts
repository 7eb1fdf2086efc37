// A2A push notifications over plain data: which of a message's status changes its task's push
// targets hear (a change of the task's A2A state: working, input-required, and each end), the body
// one push carries (an A2A v1.0 StreamResponse with the status update), and whether one more target
// fits its budgets. The agent object's outbox (objects/agent-webhooks.ts) sends what this decides,
// signed as webhooks are.
import type { MessageStatus } from "../wire/enums.ts";
import type { MessageView } from "../wire/http-responses.ts";
import { PUSH_LIMITS, type A2APushConfig, type PushTargetView } from "../wire/push.ts";
import type { TaskState } from "../wire/a2a.ts";
import { attemptCountsOf, contextOf, isTerminal, taskState, taskStatus } from "./a2a-task.ts";

/**
 * The task state a push announces for this change, or null when the task's state stays (a
 * failover's requeue and new attempt are still working; an escalation is still input-required).
 * `before` is the status before; a hand-out counts the attempt it starts, so the state before a
 * queued message's hand-out is read at the attempts it had.
 */
export function pushedState(before: MessageStatus, after: { status: MessageStatus; attempts: number; retriedAfter?: number }): TaskState | null {
  if (before === after.status) return null;
  const attemptsBefore = before === "queued" && after.status === "running" ? after.attempts - 1 : after.attempts;
  const retried_after = after.retriedAfter ?? 0;
  const was = taskState({ status: before, attempts: attemptsBefore, retried_after });
  const now = taskState({ status: after.status, attempts: after.attempts, retried_after });
  return was === now ? null : now;
}

/** After this state nothing more is pushed: the task's targets end with it. */
export const endsTargets = (state: TaskState): boolean => isTerminal(state);

/** The bytes one push carries: `{"statusUpdate": …}`, an A2A StreamResponse, as a v1.0 agent pushes it. */
export function pushBody(m: MessageView, now: number): string {
  return JSON.stringify({
    statusUpdate: {
      taskId: String(m.id), contextId: contextOf(m), status: taskStatus(m, now),
      metadata: { baton: { message: m.id, status: m.status, attempts: m.attempts, ...attemptCountsOf(m) } },
    },
  });
}

/** What a target store knows when one more is set: the task's targets, the agent's, the account's elsewhere, and whether this id replaces one. */
export interface PushCounts {
  task: number;
  agent: number;
  elsewhere: number;
  replaces: boolean;
}

/** Why one more target may not be set (the budgets of wire/push.ts), or null when it fits. A replacement always fits. */
export function pushTargetRefusal(c: PushCounts): string | null {
  if (c.replaces) return null;
  if (c.task >= PUSH_LIMITS.perTask) return `a task has at most ${PUSH_LIMITS.perTask} push targets: delete one first`;
  if (c.agent >= PUSH_LIMITS.perAgent) return `an agent's open tasks have at most ${PUSH_LIMITS.perAgent} push targets in all`;
  if (c.agent + c.elsewhere >= PUSH_LIMITS.perAccount) return `an account's tasks have at most ${PUSH_LIMITS.perAccount} push targets in all`;
  return null;
}

/**
 * An A2A TaskPushNotificationConfig as baton's push-target route takes it: its id (the task id when
 * it has none, so a retried SendMessage names the same target) and the body, which the route checks.
 */
export function pushTargetOf(config: A2APushConfig, taskId: number): { id: string; body: Record<string, string> } {
  const auth = config.authentication;
  return {
    id: config.id === undefined || config.id === "" ? String(taskId) : config.id,
    body: {
      url: config.url, token: config.token ?? "",
      ...(auth?.scheme ? { auth_scheme: auth.scheme, auth_credentials: auth.credentials ?? "" } : {}),
    },
  };
}

/** A target as A2A shows a config: never its token or credentials. */
export function a2aConfigOf(t: PushTargetView): A2APushConfig {
  return { id: t.id, taskId: String(t.task), url: t.url, ...(t.auth_scheme === null ? {} : { authentication: { scheme: t.auth_scheme } }) };
}
