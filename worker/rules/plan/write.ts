// A runner's write for a message (reply, ack, decline, fail, park, a message checkpoint), decided at its
// token by this object's clock over what the write touches (WriteTarget, read by the object): the
// answer frame, and the change the plan stores (a reply or ack by `complete`, a decline by `decline`,
// a fail by `failAttempt`, a park by `park`, a checkpoint). Pure: nothing here stores or sends.
import { checkMessageWrite, complete, decline, failAttempt, park, type MessageLease, type MessagePolicy } from "../message-lease.ts";
import { unknownOutcomeReason } from "../step-journal.ts";
import type { BlobRow } from "../blob-ledger.ts";
import { errorFrame, type ClientFrame, type ErrorCode } from "../../wire/protocol.ts";
import { keptQuestion, type KeptQuestion } from "./kept-question.ts";
import { committable, questionRefusal, type JournalRows } from "./run-write.ts";
import type { ServerFrame } from "../../wire/server-frames.ts";
import type { MessageChange } from "./types.ts";

export { keptQuestion, type KeptQuestion } from "./kept-question.ts";

export type RunnerWrite = Extract<ClientFrame, { type: "ack" | "reply" | "message_checkpoint" | "decline" | "fail" | "park" }>;

/** What a runner's write reads of its message. */
export interface WriteTarget {
  lease: MessageLease;
  /** The runner whose write finished it, and that write (a repeat from that runner gets it back). */
  acked: { runner: string | null; write: { id: number; fence: number; key: string } };
  /** The question this token's attempt stored before it parks (`baton ask`), or null. */
  asked: KeptQuestion | null;
  /** The blob row the write names (null: none such, or it names none). */
  blob: BlobRow | null;
  /** The journal a park's question is checked against: the open intents and the record under its answer's name. */
  journal: JournalRows;
  /** What this token's attempt left stored, read for a decline only (null for any other write). */
  traces: AttemptTraces | null;
}

/** What an attempt stored while it held its token: anything at all means it ran. */
export interface AttemptTraces {
  /** Journal records last written under this token. */
  steps: number;
  /** The message checkpoint was last stored under this token. */
  checkpoint: boolean;
  /** When its latest heartbeat arrived (null: none since the hand-out). */
  heartbeatAt: number | null;
  /** Output chunks of this attempt are kept. */
  output: boolean;
  /** Blobs uploaded or staged under this token. */
  blobs: number;
}

/** What shows the attempt ran (a decline of it would be a free retry), or null when it left nothing. */
export function ranUnder(t: Pick<WriteTarget, "asked" | "traces">): string | null {
  const r = t.traces;
  if (t.asked !== null) return "it asked a person a question";
  if (r === null) return null;
  if (r.steps > 0) return `it wrote ${r.steps} journal record(s)`;
  if (r.checkpoint) return "it stored a checkpoint";
  if (r.heartbeatAt !== null) return "it sent a heartbeat";
  if (r.output) return "it wrote output";
  if (r.blobs > 0) return `it uploaded ${r.blobs} blob(s)`;
  return null;
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
 * runner, is answered `duplicate: true` with the write that did. Only a writer that said it is
 * stopping (`stopping`) may decline, and only an attempt that left nothing stored (ranUnder).
 */
export function decideWrite(
  t: WriteTarget | null, frame: RunnerWrite, writer: string, fence: number, policy: MessagePolicy, now: number, stopping = false,
): WriteDecision {
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
  const named = "blob" in frame && frame.blob !== undefined ? committable(t.blob, frame.blob, frame.token) : null;
  if (named !== null && "refusal" in named) return answer(errorFrame("bad_request", named.refusal, frame.req));
  const blob = named;
  const base = { id: m.id, before: m.status };
  switch (frame.type) {
    case "message_checkpoint":
      return answer({ type: "result", op: "checkpoint", req: frame.req, id: m.id, token: frame.token }, { ...base, kind: "checkpoint", lease: null, checkpoint: { kept: blob ?? { value: frame.value }, token: frame.token } });
    case "park": {
      // The question is the frame's, or the one this attempt stored over HTTP (`baton ask`) before it parked.
      const asked = frame.question ? keptQuestion(frame.question, frame.token, now) : t.asked;
      const refused = asked === null ? null : questionRefusal(t.journal, frame.token, asked.step);
      if (refused !== null) return answer(errorFrame(refused.code, refused.message, frame.req));
      const onDeadline = frame.question?.on_deadline ?? asked?.on_deadline ?? null;
      const deadlineSeconds = frame.deadline_seconds ?? asked?.deadline_seconds ?? null;
      const parked = park(m, now, deadlineSeconds === null ? null : deadlineSeconds * 1000, onDeadline);
      return answer({ type: "result", op: "park", req: frame.req, id: m.id, token: frame.token, deadline: parked.expiresAt }, {
        ...base, kind: "park", lease: parked, question: asked,
        checkpoint: blob !== null || frame.value !== undefined ? { kept: blob ?? { value: frame.value }, token: frame.token } : null,
      });
    }
    case "decline": {
      if (!stopping) return answer(errorFrame("bad_request", `only a runner that said it is stopping (hello stopping) may decline message ${m.id}; fail the attempt instead`, frame.req));
      // An intent recorded with no outcome is a run that started: it cannot be declined.
      if (m.pendingAsk !== null) return answer(errorFrame("outcome_unknown", `${unknownOutcomeReason(m.pendingAsk)}: message ${m.id}'s attempt ran; fail it`, frame.req));
      // Anything stored under the token is a run that started: declining it would be a retry that costs no attempt.
      const ran = ranUnder(t);
      if (ran !== null) return answer(errorFrame("outcome_unknown", `message ${m.id}'s attempt under token ${m.token} ran (${ran}): it cannot be declined; fail it`, frame.req));
      return answer({ type: "result", op: "decline", req: frame.req, id: m.id, token: frame.token }, { ...base, kind: "declined", lease: decline(m) });
    }
    case "fail": {
      const next = failAttempt(m, now, policy);
      return answer(
        { type: "result", op: "fail", req: frame.req, id: m.id, token: frame.token, status: next.status, retry_at: next.retryAt },
        { ...base, kind: "fail", lease: next, failure: frame.reason || "the run failed" },
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
        { ...base, kind: "ack", lease: complete(m), ack: { fence, key, reply, token: frame.token, runner: writer }, commitBlob: blob === null ? null : blob.blob.id, dropUncommitted: true },
      );
    }
  }
}
