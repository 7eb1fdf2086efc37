// Durable work of one agent: stores messages, replays history to serve connections, pushes message
// frames (only the runner's copy says run), and reads what a runner's write touches for the plan
// to decide (message-leases.ts; the agent's own checkpoint under the serve fence). Who runs what is decided by ../rules/agent-plan.ts; the agent object applies it.
import { send, sendText, type ConnState } from "./connections.ts";
import { runCopyText } from "./run-copy.ts";
import { MessageStore, type Retention, type StoredMessage } from "./message-store.ts";
import type { PostInsert } from "../rules/plan/post.ts";
import { messageFrame, messageView } from "./message-row.ts";
import { StepStore } from "./step-store.ts";
import { BlobStore } from "./blob-store.ts";
import type { MessageView } from "../wire/http-responses.ts";
import { MessageLeases, type DeskSocket } from "./message-leases.ts";
import type { WriteInput } from "../rules/plan/write-event.ts";
import { runnerOf } from "../rules/agent-plan.ts";
import { pageLength } from "../rules/history-page.ts";
import { LIMITS, type ClientFrame } from "../wire/protocol.ts";
import { BucketPerSocket, ByteBucket } from "../rules/frame-rate-limit.ts";
import { OutputStore } from "./output-store.ts";
import { leaseOf } from "./message-store.ts";
import { busyRead } from "../rules/on-busy.ts";
import type { OnBusy } from "../wire/enums.ts";
import type { MessageLease } from "../rules/message-lease.ts";
import { sameSecret } from "./secrets.ts";
import type { OutputChunk } from "../wire/output.ts";
import type { OutputAppend } from "../rules/plan/output.ts";

export type { DeskSocket };

type WriteFrame = Extract<ClientFrame, { type: "ack" | "reply" | "agent_checkpoint" | "message_checkpoint" | "decline" | "fail" | "park" | "step" | "heartbeat" | "output" }>;

/** R2 deletes per sweep (R2 takes up to 1000 keys per call). */
const SWEEP_KEYS = 1000;

/** What a history page's JSON holds beside its messages (agent, cursor, more), kept out of its byte budget. */
const PAGE_ENVELOPE_BYTES = 1024;

/** What a message frame costs beyond its text, for the replay budget. */
const FRAME_OVERHEAD_BYTES = 128;

export class WorkDesk {
  readonly messages: MessageStore;
  readonly leases: MessageLeases;
  readonly steps: StepStore;
  readonly blobs: BlobStore;
  readonly output: OutputStore;
  private readonly replayPerSocket = new BucketPerSocket(LIMITS.replayBytesPerSecond, LIMITS.replayBytesPerSecond);
  private readonly replayPerAgent = new ByteBucket(LIMITS.replayBytesPerSecondPerAgent, LIMITS.replayBytesPerSecondPerAgent);

  /**
   * `blobPrefix`: this object's own R2 key prefix; `outputBudget`: bytes of output one message
   * keeps; `agentOutputBudget`: bytes of output the agent stores in all (output-store.ts keepAgentBudget).
   */
  constructor(sql: SqlStorage, blobPrefix: string, private readonly outputBudget: number, private readonly agentOutputBudget: number) {
    this.messages = new MessageStore(sql);
    this.output = new OutputStore(sql);
    this.steps = new StepStore(sql);
    this.blobs = new BlobStore(sql, blobPrefix);
    this.leases = new MessageLeases(sql, this.messages, this.steps, this.blobs, this.output);
  }

  /**
   * The page of history after a cursor a sync asks for, its cost taken from a per-connection and a
   * per-agent byte budget (in memory, as the frame rate limit): a page over either is refused
   * before any text is loaded, and the client asks again later. The plan replays it (never asking
   * the client to run anything); `more: true` tells the client to ask again from the page's last id.
   */
  historyPage(ws: WebSocket, after: number, now: number): { ok: true; known: number; last: number; count: number; more: boolean } | { ok: false; retryAfterMs: number } {
    const page = this.messages.pages.planPage(after, LIMITS.syncPageMessages, LIMITS.syncPageBytes);
    const cost = page.bytes + page.count * FRAME_OVERHEAD_BYTES;
    const mine = this.replayPerSocket.of(ws).take(cost, now);
    const shared = mine.ok ? this.replayPerAgent.take(cost, now) : mine;
    if (!shared.ok) {
      if (mine.ok) this.replayPerSocket.of(ws).refund(cost);
      return { ok: false, retryAfterMs: shared.retryAfterMs };
    }
    return { ok: true, known: Math.min(after, this.messages.pages.lastId()), last: page.last, count: page.count, more: page.more };
  }

  /**
   * An ack, reply, checkpoint, fail, park, step, heartbeat or output batch, with what it touches,
   * for the plan to decide: a write for a message reads its own lease (MessageLeases.frameWrite); an
   * agent_checkpoint, under the serve fence, is the agent's own and reads its sender's claim.
   */
  writeInput(state: ConnState, frame: WriteFrame): WriteInput {
    if (frame.type === "output") return this.outputInput(frame.id, frame.token, frame.chunks, { runner: runnerOf(state) }, frame.req);
    if (frame.type !== "agent_checkpoint") return this.leases.frameWrite(runnerOf(state), frame, state.stopping === true);
    return { kind: "agent_checkpoint", fence: frame.fence, value: frame.value, req: frame.req, sender: { claimSeq: state.claimSeq, released: state.released } };
  }

  /**
   * A batch of a run's live output, from its connection or over HTTP with its run key, with what it
   * reads (its lease, its output's head), for rules/plan/output.ts to decide like any runner write.
   */
  outputInput(id: number, token: number, chunks: readonly OutputChunk[], writer: { runner: string } | { runKey: string }, req?: string): WriteInput {
    const stored = this.messages.get(id);
    const target = stored && { lease: leaseOf(stored), head: this.output.head(id), machine: stored.machine ?? "unknown" };
    const who = "runner" in writer ? writer : { runKeyMatches: stored !== null && sameSecret(writer.runKey, stored.run_key) };
    return { kind: "output", id, token, chunks, writer: who, target, budget: this.outputBudget, ...(req === undefined ? {} : { req }) };
  }

  /**
   * Stores a post as its plan decided it: the row under its id, its idempotency key, and the
   * history bounded (every post prunes, questions for a person included). True when messages went,
   * so their blobs became garbage.
   */
  storePost(row: PostInsert, retention: Retention, now: number): boolean {
    this.messages.insert(row);
    if (row.key !== null) this.messages.postKeys.remember(row.key, row.id, now);
    const pruned = this.messages.prune(row.id, now, retention);
    this.steps.dropMessages(pruned);
    if (pruned.length > 0) {
      this.blobs.collectOrphans(now);
      this.output.prune();
    }
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

  /**
   * Sends a message frame (a run copy only to its runner, with its journal as the store keeps it)
   * and moves the connection's cursor past it; the caller writes the attachment.
   */
  push(socket: DeskSocket, m: StoredMessage, run: boolean): void {
    const policy = this.leases.policies.policy();
    if (run) sendText(socket.ws, runCopyText(messageFrame(m, true, policy), this.steps.journal(m.id)));
    else send(socket.ws, messageFrame(m, false, policy));
    if (m.id > socket.state.cursor) socket.state.cursor = m.id;
  }

  /** One message as HTTP shows it, with its steps (without their values) and the permits its approvals became. */
  /** Message `id` as HTTP shows it (view), or null when there is none. */
  viewOf(id: number): MessageView | null {
    const m = this.messages.get(id);
    return m ? this.view(m) : null;
  }

  view(m: StoredMessage): MessageView {
    const permits = this.messages.permits.of(m.id).map((p) => ({
      effect: p.effect, digest: p.digest, args: p.args, asked_token: p.askedToken, granted_at: p.grantedAt, by: p.by, spent_token: p.spentToken, spent_at: p.spentAt,
    }));
    const dropped = this.output.droppedFor(m.id);
    return {
      ...messageView(m, this.steps.summaries(m.id), this.messages.answers.of([m.id]).get(m.id) ?? []), ...(permits.length > 0 ? { permits } : {}),
      ...(dropped === null ? {} : { output_dropped: dropped }),
    };
  }

  /** Stores a batch of a run's output as its plan decided it, then keeps the agent within its stored-output budget. */
  appendOutput(id: number, output: OutputAppend, now: number): void {
    this.output.append(id, output, now);
    this.output.keepAgentBudget(this.agentOutputBudget);
  }

  /**
   * One page of history after `after` (GET /agents/{agent}/messages): at most `limit` (and
   * LIMITS.historyPageMessages) messages and LIMITS.historyPageBytes of JSON, but at least one
   * (rules/history-page.ts). The stored weights choose which rows to load, so a page never loads
   * much more than it answers; their views, measured, end it. `more`: messages follow its cursor.
   */
  historyViews(after: number, limit: number): { messages: MessageView[]; cursor: number; more: boolean } {
    const count = Math.min(limit, LIMITS.historyPageMessages);
    const budget = LIMITS.historyPageBytes - PAGE_ENVELOPE_BYTES;
    const weights = this.messages.pages.weightsAfter(after, count + 1);
    const loaded = pageLength(weights.map((w) => w.bytes), count, budget);
    const views = loaded === 0 ? [] : this.views(this.messages.pages.range(after, weights[loaded - 1]!.id));
    const utf8 = new TextEncoder();
    const messages = views.slice(0, pageLength(views.map((v) => utf8.encode(JSON.stringify(v)).length + 1), count, budget));
    return { messages, cursor: messages.at(-1)?.id ?? after, more: weights.length > messages.length };
  }

  /** A page of messages with their steps and answers, read in one query each. */
  views(ms: readonly StoredMessage[]): MessageView[] {
    const ids = ms.map((m) => m.id);
    const steps = this.steps.summariesFor(ids);
    const answers = this.messages.answers.of(ids);
    return ms.map((m) => messageView(m, steps.get(m.id) ?? [], answers.get(m.id) ?? []));
  }

  /**
   * What a post's on_busy (its own, else the agent's) decides on in its group, read whole
   * (rules/on-busy.ts busyRead); null when it acts on nothing there (queue, a pool's ungrouped work).
   */
  busyGroupOf(group: string | null, onBusy: OnBusy | null = null): MessageLease[] | null {
    const policy = this.leases.policies.policy();
    const read = busyRead(onBusy ? { ...policy, onBusy } : policy, group);
    return read === null ? null : this.messages.busyGroup(group, read);
  }
}
