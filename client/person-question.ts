// A question for a person alone, asked from outside any run (an MCP host's ask, an agent SDK's
// approval): posted as a message parked with its question from the start, answered on the
// dashboard, with `baton answer|approve|reject` or over HTTP by a token with the answer scope, and
// kept with who answered. Nothing runs it; its reply is the answer.
import { messageViewSchema, type MessageView } from "../worker/wire/http-responses.ts";
import type { Question } from "../worker/wire/protocol.ts";
import { requestJson, type Connection } from "./http.ts";
import { systemClock } from "./core/clock.ts";
import { routePath } from "../worker/wire/routes.ts";

export interface PersonQuestion {
  text: string;
  /** The message's own text, when it says more than the question (default: the question's text). */
  messageText?: string;
  /** Short labels; absent: approve or reject. Reject is always offered. */
  choices?: string[];
  /** Seconds a person has before `onDeadline` happens (absent: no deadline). */
  deadlineSeconds?: number;
  /** What the deadline does: fail (default), approve, reject, or escalate (ask again). */
  onDeadline?: NonNullable<Question["on_deadline"]>;
  /** Several people: approvals from this many distinct tokens decide approve (default 1); only choices approve or reject then. */
  needs?: number;
  /** Only these tokens (by name) may answer (absent: any token with the answer scope). */
  approvers?: string[];
  /** Rejects from this many distinct tokens decide reject (default 1). */
  rejectNeeds?: number;
}

/**
 * Where a question stands: still waiting, answered by a person (choice, text, who), decided by its
 * deadline on nobody's word (`on_deadline` approve or reject), or ended without an answer.
 */
export type PersonAnswer =
  | { status: "waiting"; messageId: number; deadline: number | null }
  | { status: "answered" | "decided_by_deadline"; messageId: number; choice: string; text: string | null; by: { account: string; token: string; via: string }; at: number }
  | { status: "unanswered"; messageId: number; reason: string };

/**
 * The choices as a person plainly meant them: reject is always offered, so it is dropped from the
 * list (approve and reject is the plain approve-or-reject question; ship and reject offers ship and
 * reject); duplicates count once. Undefined when nothing but approve is left: approve or reject.
 */
export function plainChoices(choices: readonly string[]): string[] | undefined {
  const kept = [...new Set(choices)].filter((c) => c !== "reject");
  return kept.length === 0 || (kept.length === 1 && kept[0] === "approve") ? undefined : kept;
}

/** Posts the question; resolves with its message id at once (use `answerOf` or `waitForAnswer` for the answer). */
export async function askPerson(agent: string, question: PersonQuestion, conn: Connection, options: { idempotencyKey?: string } = {}): Promise<number> {
  const body = {
    text: question.messageText ?? question.text,
    question: {
      text: question.text,
      ...(question.choices === undefined ? {} : { choices: question.choices }),
      ...(question.onDeadline === undefined ? {} : { on_deadline: question.onDeadline }),
      ...(question.needs === undefined ? {} : { needs: question.needs }),
      ...(question.approvers === undefined ? {} : { approvers: question.approvers }),
      ...(question.rejectNeeds === undefined ? {} : { reject_needs: question.rejectNeeds }),
    },
    ...(question.deadlineSeconds === undefined ? {} : { deadline_seconds: question.deadlineSeconds }),
  };
  const headers: Record<string, string> = options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey };
  const posted = await requestJson(conn, "POST", routePath("/agents/{agent}/messages", { agent }), messageViewSchema, { body, headers });
  return posted.id;
}

/** What the message of a question says of its answer. */
export function answerFromView(m: MessageView): PersonAnswer {
  // Another message's answers (a run a person approved) are no answer to this question.
  if (m.for_person !== true) return { status: "unanswered", messageId: m.id, reason: `message ${m.id} is not a question for a person` };
  if (m.status === "parked") return { status: "waiting", messageId: m.id, deadline: m.expires_at };
  const last = m.answers.at(-1);
  if ((m.status === "acknowledged" || m.status === "rejected") && last) {
    const status = last.via === "deadline" ? "decided_by_deadline" : "answered";
    return { status, messageId: m.id, choice: last.choice, text: last.text, by: { account: last.account, token: last.token, via: last.via }, at: last.at };
  }
  return { status: "unanswered", messageId: m.id, reason: m.status === "failed" ? "its deadline passed with no answer" : `the message is ${m.status}` };
}

export async function answerOf(agent: string, messageId: number, conn: Connection): Promise<PersonAnswer> {
  return answerFromView(await requestJson(conn, "GET", routePath("/agents/{agent}/messages/{id}", { agent, id: messageId }), messageViewSchema));
}

export interface WaitOptions {
  /** Stop waiting (and resolve with `waiting`) after this long; the question stays open. */
  timeoutMs?: number;
  signal?: AbortSignal;
  pollMs?: number;
  /** Called on each poll while nobody has answered (to keep a caller's connection alive). */
  onWaiting?: (elapsedMs: number) => void | Promise<void>;
}

/** Polls until the question is answered or ended, the timeout passes, or the signal aborts. */
export async function waitForAnswer(agent: string, messageId: number, conn: Connection, options: WaitOptions = {}): Promise<PersonAnswer> {
  const started = systemClock.now();
  const pollMs = options.pollMs ?? 500;
  for (;;) {
    const now = await answerOf(agent, messageId, conn);
    const elapsed = systemClock.now() - started;
    if (now.status !== "waiting" || options.signal?.aborted || (options.timeoutMs !== undefined && elapsed >= options.timeoutMs)) return now;
    await options.onWaiting?.(elapsed);
    await new Promise<void>((resolve) => {
      const onAbort = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        options.signal?.removeEventListener("abort", onAbort);
        resolve();
      }, pollMs);
      options.signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
