// A baton message seen as an A2A task, over plain data: one task per message (its id the message
// id), its context the message's on_busy group (a message without one is its own context,
// `task-ID`), its state from the message's status, a parked message's question as the
// input-required status message, the reply as the `reply` artifact and live output as appends to
// the `output` artifact. Deciding what a person's A2A answer means is here too. Pure: the Worker's
// A2A layer (worker/a2a-routes.ts) fetches and sends.
import type { MessageView } from "../wire/http-responses.ts";
import type { OutputEvent } from "../wire/output.ts";
import type { A2AArtifact, A2AMessage, A2APart, A2AStreamResponse, A2ATask, A2ATaskStatus, TaskState } from "../wire/a2a.ts";
import type { MessageStatus } from "../wire/enums.ts";

const STATE: Record<MessageStatus, TaskState> = {
  queued: "TASK_STATE_SUBMITTED",
  running: "TASK_STATE_WORKING",
  parked: "TASK_STATE_INPUT_REQUIRED",
  acknowledged: "TASK_STATE_COMPLETED",
  failed: "TASK_STATE_FAILED",
  rejected: "TASK_STATE_REJECTED",
  cancelled: "TASK_STATE_CANCELED",
  superseded: "TASK_STATE_CANCELED",
};

/**
 * The task state of a message: queued again after a hand-out since its latest retry (a failover, an
 * answer, a decline) is still working; retried by a person, it is submitted again until handed out.
 */
export function taskState(m: Pick<MessageView, "status" | "attempts" | "retried_after">): TaskState {
  return m.status === "queued" && m.attempts > (m.retried_after ?? 0) ? "TASK_STATE_WORKING" : STATE[m.status];
}

/** States after which the task changes no more; input-required also ends a stream (A2A's interrupted state). */
export function isTerminal(state: TaskState): boolean {
  return state === "TASK_STATE_COMPLETED" || state === "TASK_STATE_FAILED" || state === "TASK_STATE_CANCELED" || state === "TASK_STATE_REJECTED";
}

export const contextOf = (m: Pick<MessageView, "id" | "group">): string => m.group ?? `task-${m.id}`;

/** A task id names a message of this agent: its id in decimal, nothing else. */
export function messageIdOf(taskId: string): number | null {
  return /^[1-9]\d{0,14}$/.test(taskId) ? Number(taskId) : null;
}

/** The choices a parked message takes: its question's (reject is always offered), or approve and reject. */
export function choicesOf(m: Pick<MessageView, "question">): string[] {
  const offered = m.question?.choices ?? [];
  return offered.length === 0 ? ["approve", "reject"] : [...offered.filter((c) => c !== "reject"), "reject"];
}

const agentMessage = (m: MessageView, id: string, parts: A2APart[], metadata?: Record<string, unknown>): A2AMessage => ({
  messageId: id, contextId: contextOf(m), taskId: String(m.id), role: "ROLE_AGENT", parts, ...(metadata ? { metadata } : {}),
});

/** What the status says in words: the question while input is required, why it failed or was cancelled. */
function statusMessage(m: MessageView, state: TaskState): A2AMessage | undefined {
  if (state === "TASK_STATE_INPUT_REQUIRED") {
    const choices = choicesOf(m);
    const text = `${m.question?.text ?? m.waiting_on ?? "approve or reject?"}\nanswer with one of: ${choices.join(", ")}`;
    return agentMessage(m, `question-${m.id}-${m.attempts}`, [{ text }], { choices, deadline: m.question?.deadline ?? null });
  }
  if (state === "TASK_STATE_FAILED" && m.error) return agentMessage(m, `error-${m.id}-${m.attempts}`, [{ text: m.error }]);
  if (state === "TASK_STATE_CANCELED" && m.cancelled) {
    return agentMessage(m, `cancelled-${m.id}`, [{ text: `cancelled by ${m.cancelled.token}${m.cancelled.reason ? `: ${m.cancelled.reason}` : ""}` }]);
  }
  if (state === "TASK_STATE_REJECTED" && m.answers.length > 0) {
    const last = m.answers[m.answers.length - 1]!;
    return agentMessage(m, `rejected-${m.id}`, [{ text: `rejected by ${last.token}${last.text ? `: ${last.text}` : ""}` }]);
  }
  return undefined;
}

export function taskStatus(m: MessageView, now: number): A2ATaskStatus {
  const state = taskState(m);
  const message = statusMessage(m, state);
  return { state, ...(message ? { message } : {}), timestamp: new Date(now).toISOString() };
}

export function replyArtifact(m: MessageView): A2AArtifact | null {
  if (m.status !== "acknowledged") return null;
  // A reply kept in R2 is named, not inlined: its text is a GET of the blob away.
  const text = m.reply ?? (m.reply_blob ? `(reply of ${m.reply_blob.bytes} bytes: GET …/messages/${m.id}/blobs/${m.reply_blob.id})` : "");
  return { artifactId: "reply", name: "reply", parts: [{ text }] };
}

/** Hand-outs before a person's latest retry and those given back unstarted since, each said only when there were any. */
export const attemptCountsOf = (m: Pick<MessageView, "declined" | "retried_after">): { retried_after?: number; declined?: number } => ({
  ...(m.retried_after ? { retried_after: m.retried_after } : {}), ...(m.declined ? { declined: m.declined } : {}),
});

/** The task a message is. `historyLength` 0 leaves out the message that started it. */
export function taskOf(m: MessageView, agent: string, now: number, historyLength?: number): A2ATask {
  const reply = replyArtifact(m);
  const first: A2AMessage = { messageId: `message-${m.id}`, contextId: contextOf(m), taskId: String(m.id), role: "ROLE_USER", parts: [{ text: m.text }] };
  return {
    id: String(m.id),
    contextId: contextOf(m),
    status: taskStatus(m, now),
    ...(reply ? { artifacts: [reply] } : {}),
    ...(historyLength === 0 ? {} : { history: [first] }),
    metadata: { baton: { agent, message: m.id, status: m.status, attempts: m.attempts, ...attemptCountsOf(m), machine: m.machine } },
  };
}

/**
 * A person's A2A answer to a parked message: its text is one of the choices. Null when the text
 * is no choice (then nothing is answered, and the caller says which choices there are).
 */
export function answerChoice(m: Pick<MessageView, "question">, text: string): string | null {
  const t = text.trim();
  return choicesOf(m).includes(t) ? t : null;
}

/**
 * The stream events that output events stand for: each chunk an append to the `output` artifact
 * (its first one starts it), each new attempt a working status that says where it runs, so a
 * failover reads as output that goes on. `started`: whether the output artifact was started.
 */
export function outputUpdates(events: readonly OutputEvent[], m: Pick<MessageView, "id" | "group">, started: boolean, now: number): { updates: A2AStreamResponse[]; started: boolean } {
  const taskId = String(m.id);
  const contextId = contextOf(m);
  const updates: A2AStreamResponse[] = [];
  for (const e of events) {
    if (e.type === "chunk") {
      const part: A2APart = e.text !== undefined ? { text: e.text } : { text: e.base64 ?? "", mediaType: "application/base64" };
      updates.push({ artifactUpdate: { taskId, contextId, artifact: { artifactId: "output", name: "output", parts: [part] }, append: started, lastChunk: false } });
      started = true;
    } else if (e.type === "attempt") {
      const status: A2ATaskStatus = { state: "TASK_STATE_WORKING", timestamp: new Date(now).toISOString() };
      updates.push({ statusUpdate: { taskId, contextId, status, metadata: { baton: { attempt: e.attempt, machine: e.machine } } } });
    }
  }
  return { updates, started };
}
