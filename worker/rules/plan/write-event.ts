// Every write of a runner, as the plan's event phase decides it: the raw write and the rows it
// touches in, a verdict out (its answer, the frame that answers it, the change the plan stores, a
// refusal of the token check for /metrics, the agent's own checkpoint). One door for all write
// kinds: a reply, ack, fail, park or message checkpoint (./write.ts), a step, heartbeat, ask or
// upload (./run-write.ts), a batch of output (./output.ts), the holder's checkpoint under the
// serve fence (rules/fencing.ts). Pure.
import { checkFencedWrite } from "../fencing.ts";
import type { LeaseRecord } from "../election.ts";
import type { JournalUsage } from "../step-journal.ts";
import type { MessagePolicy } from "../message-lease.ts";
import { errorFrame, type ErrorCode } from "../../wire/protocol.ts";
import type { ServerFrame } from "../../wire/server-frames.ts";
import { decideOutput, type OutputDecision, type OutputTarget, type OutputWriter } from "./output.ts";
import type { OutputChunk } from "../../wire/output.ts";
import {
  planAsk, planHeartbeat, planReserve, planStage, planStep, type AskAnswer, type BlobReserve, type HeartbeatAnswer, type Refusal, type RunWrite, type RunWriteDecision, type StageAnswer,
  type StepAnswer,
} from "./run-write.ts";
import { decideWrite, type RunnerWrite, type WriteTarget } from "./write.ts";
import type { MessageChange, ServeConn } from "./types.ts";

/** The refusals of the token check, which /metrics counts. */
const TOKEN_REFUSALS: ReadonlySet<ErrorCode> = new Set(["stale_token", "not_your_message", "message_not_running", "cancelled"]);

/** `code` when the token check refused the write, else null. */
export function refusedAtToken(code: ErrorCode): ErrorCode | null {
  return TOKEN_REFUSALS.has(code) ? code : null;
}

/** A write as its event carries it: the raw write and what it touches. `req`: the frame's request id (a frame write). */
export type WriteInput =
  | { kind: "runner"; frame: RunnerWrite; writer: string; target: WriteTarget | null; stopping?: boolean }
  | { kind: "agent_checkpoint"; fence: number; value: unknown; req?: string; sender: Pick<ServeConn, "claimSeq" | "released"> }
  | { kind: "output"; id: number; token: number; chunks: readonly OutputChunk[]; writer: OutputWriter; target: OutputTarget | null; budget: number; req?: string }
  | (RunWrite & { req?: string; frame?: boolean });

interface VerdictBase {
  /** The frame that answers a write made by frame (null: it came over HTTP). */
  frame: ServerFrame | null;
  change: MessageChange | null;
  /** The token check (or the serve fence) refused it, counted for /metrics. */
  refused: ErrorCode | null;
  /** The agent's own checkpoint to store. */
  agentCheckpoint: { value: unknown; fence: number } | null;
}

/** A write decided; over HTTP its answer is read by kind (answerOf). */
export type WriteVerdict = VerdictBase & (
  | { kind: "runner" | "agent_checkpoint" }
  | { kind: "output"; answer: OutputDecision }
  | { kind: "step"; answer: StepAnswer }
  | { kind: "heartbeat"; answer: HeartbeatAnswer }
  | { kind: "ask"; answer: AskAnswer }
  | { kind: "reserve"; answer: BlobReserve }
  | { kind: "stage"; answer: StageAnswer }
);

/** What of the snapshot a write reads: the serve lease (its fence), the message policy and the journal's budget. */
export interface WriteContext {
  lease: LeaseRecord;
  policy: MessagePolicy;
  journalBudget: JournalUsage;
}

/** A step's answer as its frame: the result without `ok`, or the refusal. */
function stepFrame(answer: StepAnswer, req: string | undefined): ServerFrame {
  if (!answer.ok) return errorFrame(answer.code, answer.message, req);
  const { ok: _ok, ...result } = answer;
  return { type: "result", op: "step", req, ...result };
}

/** A heartbeat's answer as its frame. */
function heartbeatFrame(answer: HeartbeatAnswer, req: string | undefined): ServerFrame {
  if (!answer.ok) return errorFrame(answer.code, answer.message, req);
  return { type: "result", op: "heartbeat", req, id: answer.id, token: answer.token, expires_at: answer.expires_at };
}

/** A run write's verdict beside its answer: its change, and a refusal of the token check. */
function runVerdict(d: RunWriteDecision<{ ok: true } | Refusal>, frame: ServerFrame | null): VerdictBase {
  return { frame, change: d.change, refused: d.answer.ok ? null : refusedAtToken(d.answer.code), agentCheckpoint: null };
}

/** One write decided at `now`. */
export function decideAnyWrite(w: WriteInput, ctx: WriteContext, now: number): WriteVerdict {
  const none = { change: null, refused: null, agentCheckpoint: null };
  switch (w.kind) {
    case "runner": {
      const d = decideWrite(w.target, w.frame, w.writer, ctx.lease.fence, ctx.policy, now, w.stopping ?? false);
      return { kind: "runner", frame: d.reply, change: d.change, refused: d.refused, agentCheckpoint: null };
    }
    case "agent_checkpoint": {
      const verdict = checkFencedWrite(ctx.lease, w.sender, w.fence);
      if (!verdict.ok) return { kind: "agent_checkpoint", ...none, frame: errorFrame(verdict.code, verdict.message, w.req), refused: verdict.code };
      return { kind: "agent_checkpoint", ...none, frame: { type: "result", op: "checkpoint", req: w.req, fence: w.fence }, agentCheckpoint: { value: w.value, fence: w.fence } };
    }
    case "output": {
      const d = decideOutput(w.target, w.id, w.token, w.chunks, w.writer, w.budget, now, w.req);
      return { kind: "output", answer: d, frame: d.reply, change: d.change, refused: d.refused, agentCheckpoint: null };
    }
    case "step": {
      const d = planStep(w, now, ctx.journalBudget);
      return { kind: "step", answer: d.answer, ...runVerdict(d, w.frame ? stepFrame(d.answer, w.req) : null) };
    }
    case "heartbeat": {
      const d = planHeartbeat(w, ctx.policy, now);
      return { kind: "heartbeat", answer: d.answer, ...runVerdict(d, w.frame ? heartbeatFrame(d.answer, w.req) : null) };
    }
    case "ask": {
      const d = planAsk(w, now);
      return { kind: "ask", answer: d.answer, ...runVerdict(d, null) };
    }
    case "reserve": {
      const d = planReserve(w, now);
      return { kind: "reserve", answer: d.answer, ...runVerdict(d, null) };
    }
    case "stage": {
      const d = planStage(w, now);
      return { kind: "stage", answer: d.answer, ...runVerdict(d, null) };
    }
  }
}

/** What each write kind that has an answer of its own answers with. */
export interface RunAnswers {
  step: StepAnswer;
  heartbeat: HeartbeatAnswer;
  ask: AskAnswer;
  reserve: BlobReserve;
  stage: StageAnswer;
  output: OutputDecision;
}

/** The answer of a write of kind `kind` from its plan (a plan of a write always holds its verdict). */
export function answerOf<K extends keyof RunAnswers>(verdict: WriteVerdict | null, kind: K): RunAnswers[K] {
  if (verdict === null || verdict.kind !== kind || !("answer" in verdict)) throw new Error(`a ${kind} write is always planned`);
  return verdict.answer as RunAnswers[K];
}
