// A runner's write for a message (reply, ack, fail, park, a message checkpoint), decided at its
// token by this object's clock over what the write touches (WriteTarget, read by the object): the
// answer frame, and the change the plan stores (a reply or ack by `complete`, a fail by
// `failAttempt`, a park by `park`, a checkpoint). Pure: nothing here stores or sends.
import type { Vote } from "../quorum.ts";
import { checkMessageWrite, complete, failAttempt, park, type MessageLease, type MessagePolicy, type OnDeadline } from "../message-lease.ts";
import { unknownOutcomeReason, type BlobRef } from "../step-journal.ts";
import { errorFrame, type ClientFrame, type ErrorCode, type Question } from "../../wire/protocol.ts";
import type { ServerFrame } from "../../wire/server-frames.ts";
import type { MessageChange } from "./types.ts";
import type { ApprovalAsked } from "../permits.ts";

/** A question as a message keeps it: what a runner asked, and the journal step its answer replays as. */
export interface KeptQuestion {
  text: string;
  choices: string[] | null;
  step: string | null;
  on_deadline: OnDeadline | null;
  /** The deadline a served command asked with (`baton ask --deadline`), used when its park names none. */
  deadline_seconds?: number | null;
  /** The token of the attempt that asked. */
  token: number;
  asked_at: number;
  /** Asked by the coordinator for an effect that needs approval: what approving it permits (../permits.ts). */
  approve?: ApprovalAsked | null;
  /** Several people (rules/quorum.ts): absent on questions kept before them, and on questions one answer decides. */
  needs?: number;
  reject_needs?: number;
  approvers?: string[];
  /** The answers so far of a question several people decide, one per token. */
  votes?: Vote[];
}

/** A question as the attempt of `token` asks it now. */
export function keptQuestion(q: Question, token: number, now: number): KeptQuestion {
  return {
    text: q.text, choices: q.choices ?? null, step: q.step ?? null, on_deadline: q.on_deadline ?? null, token, asked_at: now,
    ...(q.needs === undefined ? {} : { needs: q.needs }), ...(q.reject_needs === undefined ? {} : { reject_needs: q.reject_needs }),
    ...(q.approvers === undefined ? {} : { approvers: q.approvers }),
  };
}

export type RunnerWrite = Extract<ClientFrame, { type: "ack" | "reply" | "message_checkpoint" | "fail" | "park" }>;

/** What a runner's write reads of its message. */
export interface WriteTarget {
  lease: MessageLease;
  /** The runner whose write finished it, and that write (a repeat from that runner gets it back). */
  acked: { runner: string | null; write: { id: number; fence: number; key: string } };
  /** The question this token's attempt stored before it parks (`baton ask`), or null. */
  asked: KeptQuestion | null;
  /** The staged blob the write names: committable with its size, or why not (null: it names none). */
  blob: { blob: BlobRef } | { refusal: string } | null;
  /** Why the question a park carries may not be asked now (inside an effect, its answer's name taken); null: it may. */
  questionRefusal: { code: "effect_in_progress" | "bad_request"; message: string } | null;
}

export interface WriteDecision {
  reply: ServerFrame;
  change: MessageChange | null;
  /** The token check refused it (for /metrics). */
  refused: ErrorCode | null;
  /** Refused because its run deadline had passed: the plan takes the message back now. */
  expired: boolean;
}

const answer = (reply: ServerFrame, change: MessageChange | null = null): WriteDecision => ({ reply, change, refused: null, expired: false });

/**
 * A token other than the message's current one is refused as stale_token (also once it finished),
 * a write from any runner but the one it was handed to as not_your_message, a write after the run
 * deadline as message_not_running. A reply or ack under the token that finished it, from its
 * runner, is answered `duplicate: true` with the write that did.
 */
export function decideWrite(t: WriteTarget | null, frame: RunnerWrite, writer: string, fence: number, policy: MessagePolicy, now: number): WriteDecision {
  if (t === null) return answer(errorFrame("unknown_message", `no message ${frame.id}`, frame.req));
  const m = t.lease;
  const key = frame.type === "reply" ? frame.key : "ack";
  if (frame.token === m.token && m.status === "acknowledged" && (frame.type === "reply" || frame.type === "ack") && t.acked.runner === writer) {
    return answer({ type: "result", ...t.acked.write, token: m.token, op: frame.type, req: frame.req, duplicate: true });
  }
  const verdict = checkMessageWrite(m, frame.token, writer, now);
  if (!verdict.ok) {
    // A deadline that passed before its alarm ran is applied now: the message goes back at once.
    const expired = m.status === "running" && m.expiresAt !== null && now >= m.expiresAt;
    return { reply: errorFrame(verdict.code, verdict.message, frame.req), change: null, refused: verdict.code, expired };
  }
  if (t.blob !== null && "refusal" in t.blob) return answer(errorFrame("bad_request", t.blob.refusal, frame.req));
  const blob = t.blob;
  const base = { id: m.id, before: m.status, lease: null };
  switch (frame.type) {
    case "message_checkpoint":
      return answer({ type: "result", op: "checkpoint", req: frame.req, id: m.id, token: frame.token }, { ...base, checkpoint: { kept: blob ?? { value: frame.value }, token: frame.token } });
    case "park": {
      // The question is the frame's, or the one this attempt stored over HTTP (`baton ask`) before it parked.
      const asked = frame.question ? keptQuestion(frame.question, frame.token, now) : t.asked;
      if (asked !== null && t.questionRefusal !== null) return answer(errorFrame(t.questionRefusal.code, t.questionRefusal.message, frame.req));
      const onDeadline = frame.question?.on_deadline ?? asked?.on_deadline ?? null;
      const deadlineSeconds = frame.deadline_seconds ?? asked?.deadline_seconds ?? null;
      const parked = park(m, now, deadlineSeconds === null ? null : deadlineSeconds * 1000, onDeadline);
      return answer({ type: "result", op: "park", req: frame.req, id: m.id, token: frame.token, deadline: parked.expiresAt }, {
        ...base, lease: parked, question: asked,
        ...(blob !== null || frame.value !== undefined ? { checkpoint: { kept: blob ?? { value: frame.value }, token: frame.token } } : {}),
      });
    }
    case "fail": {
      const next = failAttempt(m, now, policy);
      return answer(
        { type: "result", op: "fail", req: frame.req, id: m.id, token: frame.token, status: next.status, retry_at: next.retryAt },
        { ...base, lease: next, failure: frame.reason || "the run failed" },
      );
    }
    default: {
      if (m.pendingAsk !== null) {
        // Finishing now would close the question nobody answered: the attempt must fail, and the message waits for a person.
        return answer(errorFrame("outcome_unknown", `${unknownOutcomeReason(m.pendingAsk)}: message ${m.id} cannot finish before a person answers; fail the attempt`, frame.req));
      }
      if (t.asked !== null) {
        // This run asked a person (`baton ask`) and went on without the answer: it parks instead of finishing.
        return answer(errorFrame("question_open", `message ${m.id} asked "${t.asked.text.slice(0, 200)}" and nobody has answered: it cannot finish; park it`, frame.req));
      }
      const reply = frame.type !== "reply" ? null : blob !== null ? blob.blob : frame.text;
      return answer(
        { type: "result", id: m.id, fence, key, token: frame.token, op: frame.type, req: frame.req, duplicate: false },
        { ...base, lease: complete(m), ack: { fence, key, reply, token: frame.token, runner: writer }, ...(blob === null ? {} : { commitBlob: blob.blob.id }), dropUncommitted: true },
      );
    }
  }
}
