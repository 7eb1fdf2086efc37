// Durable work of one agent: stores messages, replays history to serve connections, pushes message
// frames (only the runner's copy says run), and accepts idempotent replies, acks, failures and
// checkpoints under a message's token (message-leases.ts; the agent's own checkpoint under the
// serve fence). Who runs what is decided by ../rules/agent-plan.ts; the agent object applies it.
import type { LeaseRecord } from "../rules/election.ts";
import { checkFencedWrite } from "../rules/fencing.ts";
import { send, type ConnState } from "./connections.ts";
import { MessageStore, type Retention, type StoredMessage } from "./message-store.ts";
import type { PostInsert } from "../rules/plan/post.ts";
import { messageFrame, messageView } from "./message-row.ts";
import { StepStore } from "./step-store.ts";
import { BlobStore } from "./blob-store.ts";
import type { MessageView } from "../wire/http-responses.ts";
import { MessageLeases, type DeskSocket, type TokenWrite, type WriteOutcome } from "./message-leases.ts";
import { runnerOf } from "../rules/agent-plan.ts";
import { errorFrame, LIMITS, type ClientFrame } from "../wire/protocol.ts";
import { BucketPerSocket, ByteBucket } from "../rules/frame-rate-limit.ts";

export type { DeskSocket };

type WriteFrame = Extract<ClientFrame, { type: "ack" | "reply" | "checkpoint" | "fail" | "park" | "step" | "heartbeat" }>;

/** R2 deletes per sweep (R2 takes up to 1000 keys per call). */
const SWEEP_KEYS = 1000;

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
    this.blobs = new BlobStore(sql, blobPrefix);
    this.leases = new MessageLeases(sql, this.messages, this.steps, this.blobs);
  }

  /**
   * The page of history after a cursor a sync asks for, its cost taken from a per-connection and a
   * per-agent byte budget (in memory, as the frame rate limit): a page over either is refused
   * before any text is loaded, and the client asks again later. The plan replays it (never asking
   * the client to run anything); `more: true` tells the client to ask again from the page's last id.
   */
  historyPage(ws: WebSocket, after: number, now: number): { ok: true; known: number; last: number; count: number; more: boolean } | { ok: false; retryAfterMs: number } {
    const page = this.messages.planPage(after, LIMITS.syncPageMessages, LIMITS.syncPageBytes);
    const cost = page.bytes + page.count * FRAME_OVERHEAD_BYTES;
    const mine = this.replayPerSocket.of(ws).take(cost, now);
    const shared = mine.ok ? this.replayPerAgent.take(cost, now) : mine;
    if (!shared.ok) {
      if (mine.ok) this.replayPerSocket.of(ws).refund(cost);
      return { ok: false, retryAfterMs: shared.retryAfterMs };
    }
    return { ok: true, known: Math.min(after, this.messages.lastId()), last: page.last, count: page.count, more: page.more };
  }

  /**
   * An ack, reply, checkpoint, fail, park, step or heartbeat. A write for a message goes to the
   * message's own lease (MessageLeases.write); a checkpoint with only the serve fence is the
   * agent's own, from its holder. Returns the answer and what the write moves, for the plan to store.
   */
  write(state: ConnState, frame: WriteFrame, now: number, lease: LeaseRecord): WriteOutcome & { agentCheckpoint?: { value: unknown; fence: number } } {
    if (frame.type !== "checkpoint" || (frame.token !== undefined && frame.id !== undefined)) {
      return this.leases.write(runnerOf(state), frame as TokenWrite, now, lease.fence);
    }
    const fence = frame.fence!;
    const verdict = checkFencedWrite(lease, state, fence);
    if (!verdict.ok) return { reply: errorFrame(verdict.code, verdict.message, frame.req), change: null, refused: verdict.code, expired: false };
    return { reply: { type: "result", op: "checkpoint", req: frame.req, fence }, change: null, refused: null, expired: false, agentCheckpoint: { value: frame.value, fence } };
  }

  /**
   * Stores a post as its plan decided it: the row under its id, its idempotency key, and the
   * history bounded (every post prunes, questions for a person included). True when messages went,
   * so their blobs became garbage.
   */
  storePost(row: PostInsert, retention: Retention, now: number): boolean {
    this.messages.insert(row);
    if (row.key !== null) this.messages.rememberPost(row.key, row.id, now);
    const pruned = this.messages.prune(row.id, now, retention);
    this.steps.dropMessages(pruned);
    if (pruned.length > 0) this.blobs.collectOrphans(now);
    return pruned.length > 0;
  }

  /**
   * Deletes the R2 objects of blobs no message keeps (pruned messages, refused uploads); a delete
   * that fails stays queued and is tried on the next sweep.
   */
  async sweep(bucket: R2Bucket | undefined): Promise<void> {
    const keys = this.blobs.garbage(SWEEP_KEYS);
    if (!bucket || keys.length === 0) return;
    try {
      await bucket.delete(keys);
      this.blobs.forgetGarbage(keys);
    } catch {
      // R2 unavailable now: the keys stay in blob_garbage
    }
  }

  /** Sends a message frame (a run copy only to its runner) and moves the connection's cursor past it; the caller writes the attachment. */
  push(socket: DeskSocket, m: StoredMessage, run: boolean): void {
    send(socket.ws, messageFrame(m, run, this.leases.policies.policy(), run ? this.steps.entries(m.id) : []));
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
