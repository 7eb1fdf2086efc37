// Durable work of one agent: stores messages, replays history to serve connections, pushes message
// frames (only the runner's copy says run), and accepts idempotent replies, acks, failures and
// checkpoints under a message's token (message-leases.ts; the agent's own checkpoint under the
// serve fence). Who runs what is decided by ../rules/agent-plan.ts; the agent object applies it.
import type { LeaseRecord } from "../rules/election.ts";
import { checkFencedWrite } from "../rules/fencing.ts";
import { send, writeConn, type ConnState } from "./connections.ts";
import { MessageStore, questionOf, type AnswerRecord, type CancelRecord, type StoredMessage } from "./message-store.ts";
import { StepStore, type StepSummary } from "./step-store.ts";
import { BlobStore } from "./blob-store.ts";
import type { MessageView } from "../wire/http-responses.ts";
import { messageFrame, MessageLeases, type DeskSocket, type TokenWrite, type WriteOutcome } from "./message-leases.ts";
import { runnerOf } from "../rules/agent-plan.ts";
import { errorFrame, LIMITS, type ClientFrame } from "../wire/protocol.ts";
import { BucketPerSocket, ByteBucket } from "../rules/frame-rate-limit.ts";

export type { DeskSocket };

type WriteFrame = Extract<ClientFrame, { type: "ack" | "reply" | "checkpoint" | "fail" | "park" | "step" | "heartbeat" }>;

/** What a message frame costs beyond its text, for the replay budget. */
const FRAME_OVERHEAD_BYTES = 128;

export class WorkDesk {
  readonly messages: MessageStore;
  readonly leases: MessageLeases;
  readonly steps: StepStore;
  readonly blobs: BlobStore;
  private readonly replayPerSocket = new BucketPerSocket(LIMITS.replayBytesPerSecond, LIMITS.replayBytesPerSecond);
  private readonly replayPerAgent = new ByteBucket(LIMITS.replayBytesPerSecondPerAgent, LIMITS.replayBytesPerSecondPerAgent);

  /** `blobPrefix`: this object's own R2 key prefix. */
  constructor(sql: SqlStorage, blobPrefix: string) {
    this.messages = new MessageStore(sql);
    this.steps = new StepStore(sql);
    this.steps.adoptLegacyAnswers();
    this.blobs = new BlobStore(sql, blobPrefix);
    this.leases = new MessageLeases(sql, this.messages, this.steps, this.blobs);
  }

  /**
   * Replays one page of history after a cursor; never asks the client to run anything. The result
   * says `more: true` when the client should ask again from `cursor`. Pages are charged against a
   * per-connection and a per-agent byte budget; a page over either is refused with `rate_limited`
   * before any text is loaded, and the client asks again later.
   */
  sync(socket: DeskSocket, after: number, now: number, req?: string): void {
    const plan = this.messages.planPage(after, LIMITS.syncPageMessages, LIMITS.syncPageBytes);
    const cost = plan.bytes + plan.count * FRAME_OVERHEAD_BYTES;
    const mine = this.replayPerSocket.of(socket.ws).take(cost, now);
    const shared = mine.ok ? this.replayPerAgent.take(cost, now) : mine;
    if (!shared.ok) {
      if (mine.ok) this.replayPerSocket.of(socket.ws).refund(cost);
      return send(socket.ws, errorFrame("rate_limited", `sync replay budget exceeded; ask again in ${shared.retryAfterMs} ms`, req));
    }
    const known = Math.min(after, this.messages.lastId());
    if (known > socket.state.cursor) {
      socket.state.cursor = known;
      writeConn(socket.ws, socket.state);
    }
    for (const m of plan.count ? this.messages.range(after, plan.last) : []) this.push(socket, m, false);
    writeConn(socket.ws, socket.state);
    send(socket.ws, { type: "result", op: "sync", req, cursor: plan.last, more: plan.more });
  }

  /**
   * An ack, reply, checkpoint, fail, park, step or heartbeat. A write for a message goes to the
   * message's own lease (MessageLeases.write); a checkpoint with only the serve fence is the
   * agent's own, from its holder. Returns the answer and what the write moves, for the plan.
   */
  write(state: ConnState, frame: WriteFrame, now: number, lease: LeaseRecord): WriteOutcome {
    if (frame.type !== "checkpoint" || (frame.token !== undefined && frame.id !== undefined)) {
      return this.leases.write(runnerOf(state), frame as TokenWrite, now, lease.fence);
    }
    const fence = frame.fence!;
    const verdict = checkFencedWrite(lease, state, fence);
    if (!verdict.ok) return { reply: errorFrame(verdict.code, verdict.message, frame.req), change: null, refused: verdict.code, expired: false };
    this.messages.saveCheckpoint(frame.value, fence, now);
    return { reply: { type: "result", op: "checkpoint", req: frame.req, fence }, change: null, refused: null, expired: false };
  }

  /** Sends a message frame (a run copy only to its runner) and moves the connection's cursor past it; the caller writes the attachment. */
  push(socket: DeskSocket, m: StoredMessage, run: boolean): void {
    send(socket.ws, messageFrame(m, run, this.leases.policies.policy(), run ? this.leases.journal(m.id) : []));
    if (m.id > socket.state.cursor) socket.state.cursor = m.id;
  }

  /** One message as HTTP shows it, with its steps (without their values). */
  view(m: StoredMessage): MessageView {
    return messageView(m, this.steps.summaries(m.id), this.messages.answersFor([m.id]).get(m.id) ?? []);
  }

  /** A page of messages with their steps and answers, read in one query each. */
  views(ms: readonly StoredMessage[]): MessageView[] {
    const ids = ms.map((m) => m.id);
    const steps = this.steps.summariesFor(ids);
    const answers = this.messages.answersFor(ids);
    return ms.map((m) => messageView(m, steps.get(m.id) ?? [], answers.get(m.id) ?? []));
  }
}

/** While parked for a person (not for an unknown outcome): the question, or approve/reject when the run asked none. */
function questionView(m: StoredMessage): MessageView["question"] {
  if (m.status !== "parked" || m.pending_ask !== null) return null;
  const asked = questionOf(m);
  return { text: asked?.text ?? null, choices: asked?.choices ?? [], deadline: m.expires_at, on_deadline: m.on_deadline ?? "fail", asked_at: asked?.asked_at ?? null };
}

export function messageView(m: StoredMessage, steps: StepSummary[], answers: AnswerRecord[]): MessageView {
  return {
    id: m.id,
    text: m.text,
    status: m.status,
    attempts: m.attempts,
    created_at: m.created_at,
    acked_at: m.acked_at,
    acked_fence: m.acked_fence,
    reply: m.reply,
    reply_blob: m.reply_blob === null ? null : { id: m.reply_blob, bytes: m.reply_blob_bytes ?? 0 },
    token: m.token,
    acked_token: m.acked_token,
    group: m.msg_group,
    run_timeout_seconds: m.run_timeout_ms === null ? null : m.run_timeout_ms / 1000,
    /** Why the latest attempt failed or was taken back (null while none did), how many did, and when a failed one is tried again. */
    error: m.error,
    failures: m.failures,
    retry_at: m.retry_at,
    /** Run deadline while running, park deadline while parked (server ms). */
    expires_at: m.expires_at,
    claim_seq: m.runner === null ? null : Number(m.runner),
    /** The machine of the runner it was last handed to (it runs, or ran, there). */
    machine: m.machine,
    checkpoint: m.checkpoint === null ? null : (JSON.parse(m.checkpoint) as unknown),
    checkpoint_blob: m.checkpoint_blob === null ? null : { id: m.checkpoint_blob, bytes: m.checkpoint_blob_bytes ?? 0 },
    resume_input: m.resume_input,
    steps,
    waiting_on: m.status === "parked" ? m.pending_ask : null,
    question: questionView(m),
    answers,
    resume_choice: m.resume_choice,
    for_person: m.for_person === 1,
    heartbeat_at: m.heartbeat_at,
    progress: m.progress === null ? null : (JSON.parse(m.progress) as unknown),
    superseded_by: m.superseded_by ?? null,
    cancelled: cancelView(m, steps),
  };
}

/** Who cancelled, and the effects left with an unknown outcome (an intent without an outcome: nobody knows whether they happened). */
function cancelView(m: StoredMessage, steps: StepSummary[]): MessageView["cancelled"] {
  if (m.status !== "cancelled" || m.cancel === null) return null;
  const record = JSON.parse(m.cancel) as CancelRecord;
  return { ...record, unknown_effects: steps.filter((s) => s.kind === "effect" && s.status === "intent").map((s) => s.name) };
}
