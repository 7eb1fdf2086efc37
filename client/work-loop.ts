// The holder's work loop: calls the handler once per message the coordinator marked `run`, one at
// a time and in order, and posts its reply (which the coordinator takes as the acknowledgement).
// Every post is gated by the lease clock; stop() (lease lost, lapsed, connection gone, shutdown)
// aborts the handler's signal and drops the queue, and nothing a stopped handler returns is posted.
import { checkpointTooLarge, LIMITS, type ClientFrame, type ErrorCode, type MessageFrame } from "../worker/wire/protocol.ts";
import { CoordinatorError, LeaseLostError } from "./errors.ts";
import type { ReplyFrame } from "./socket.ts";

export interface AgentMessage {
  id: number;
  text: string;
  /** 1 on first delivery; more when an earlier holder got it and lost the lease before replying. */
  attempt: number;
  /** When the message was posted (ms since the epoch, coordinator's clock). */
  createdAt: number;
}

export interface MessageContext {
  /** Aborted the moment this process may no longer act on the message (lease lost or lapsed, stop). */
  readonly signal: AbortSignal;
  /** The fence of the lease this message runs under: attach it to your own writes. */
  readonly fence: number;
  /** The message's own lease token when the coordinator leases messages one by one, else null. */
  readonly token: number | null;
  /** The latest checkpoint stored for this agent (null when none was ever saved). */
  readonly checkpoint: unknown;
  /**
   * Stores a checkpoint under this message's fence and resolves once the coordinator accepted it.
   * Rejects with LeaseLostError when the lease is gone (and aborts `signal`).
   */
  saveCheckpoint(value: unknown): Promise<void>;
}

/** Returns the reply text (empty when nothing is returned); throwing leaves the message unacknowledged. */
export type MessageHandler = (message: AgentMessage, ctx: MessageContext) => Promise<string | void> | string | void;

export type ServeEvent =
  | { type: "ran"; id: number; attempt: number; fence: number }
  | { type: "handler_failed"; id: number; error: unknown }
  | { type: "refused"; frame: ClientFrame["type"]; code: ErrorCode; message: string }
  | { type: "unconfirmed"; frame: ClientFrame["type"]; reason: string }
  | { type: "reply_truncated"; id: number; bytes: number }
  | { type: "coordinator_error"; code: ErrorCode; message: string }
  | { type: "released" };

export interface WorkLoopDeps {
  handler: MessageHandler;
  /** True while this process holds a lease valid by its own clock; asked before every action. */
  mayAct: () => boolean;
  fence: () => number;
  request: (frame: ClientFrame & { req: string }) => Promise<ReplyFrame>;
  nextReq: () => string;
  event: (event: ServeEvent) => void;
}

/** Error codes after which nothing more may be posted under this lease. */
const LEASE_GONE: ReadonlySet<string> = new Set(["stale_fence", "not_holder", "lease_expired", "lease_lost"]);
/** Error codes after which nothing more may be posted for this one message. */
const MESSAGE_GONE: ReadonlySet<string> = new Set(["stale_token", "message_not_running"]);

export class WorkLoop {
  private queue: MessageFrame[] = [];
  private busy = false;
  /** Bumped by stop(): a handler running under an older epoch is abandoned. */
  private epoch = 0;
  private current: { id: number; controller: AbortController; settled: Promise<unknown> } | null = null;
  private readonly replied = new Set<number>();
  private checkpointValue: unknown = null;

  constructor(private readonly deps: WorkLoopDeps) {}

  /** The latest checkpoint, as handed over with `held:true`. */
  setCheckpoint(value: unknown): void {
    this.checkpointValue = value ?? null;
  }

  enqueue(msg: MessageFrame): void {
    if (this.queue.some((m) => m.id === msg.id)) return;
    this.queue.push(msg);
    void this.drain();
  }

  /** The coordinator took one message back (its run timeout passed): abort it or drop it from the queue. */
  revoke(id: number, reason: string): void {
    this.queue = this.queue.filter((m) => m.id !== id);
    if (this.current?.id === id) this.current.controller.abort(new LeaseLostError(`the coordinator took message ${id} back (${reason})`, "revoked"));
  }

  /** Aborts the running handler, forgets the queue, and resolves once the handler has settled. */
  async stop(reason: LeaseLostError): Promise<void> {
    this.epoch += 1;
    this.queue = [];
    const run = this.current;
    if (!run) return;
    run.controller.abort(reason);
    await run.settled.catch(() => {});
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (let msg = this.queue.shift(); msg; msg = this.queue.shift()) await this.handle(msg, this.epoch);
    } finally {
      this.busy = false;
    }
  }

  private async handle(msg: MessageFrame, epoch: number): Promise<void> {
    const { deps } = this;
    if (!deps.mayAct()) return;
    const fence = deps.fence();
    // Writes for a leased message carry its token; without one, the serve fence.
    const under = msg.token === undefined ? { fence } : { token: msg.token };
    if (this.replied.has(msg.id)) {
      await this.post({ type: "ack", id: msg.id, ...under, req: deps.nextReq() }, epoch);
      return;
    }
    const controller = new AbortController();
    const ctx: MessageContext = {
      signal: controller.signal,
      fence,
      token: msg.token ?? null,
      checkpoint: this.checkpointValue,
      saveCheckpoint: (value) => this.saveCheckpoint(value, fence, epoch, controller.signal),
    };
    const message: AgentMessage = { id: msg.id, text: msg.text, attempt: msg.attempt, createdAt: msg.created_at };
    const settled = (async () => deps.handler(message, ctx))();
    this.current = { id: msg.id, controller, settled };
    let reply: string | void;
    try {
      reply = await settled;
    } catch (error) {
      if (!controller.signal.aborted && epoch === this.epoch) deps.event({ type: "handler_failed", id: msg.id, error });
      return;
    } finally {
      this.current = null;
    }
    if (controller.signal.aborted || epoch !== this.epoch) return;
    const full = reply ?? "";
    const text = truncateUtf8(full, LIMITS.replyTextBytes);
    if (text.length < full.length) deps.event({ type: "reply_truncated", id: msg.id, bytes: LIMITS.replyTextBytes });
    if (!(await this.post({ type: "reply", id: msg.id, ...under, key: `${msg.id}:reply`, text, req: deps.nextReq() }, epoch))) return;
    this.replied.add(msg.id);
    deps.event({ type: "ran", id: msg.id, attempt: msg.attempt, fence });
  }

  private async saveCheckpoint(value: unknown, fence: number, epoch: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new LeaseLostError("the lease is gone", "stopped");
    if (checkpointTooLarge(value)) throw new RangeError(`a checkpoint is JSON of at most ${LIMITS.checkpointBytes} bytes`);
    const answer = await this.postOrAnswer({ type: "checkpoint", fence, value, req: this.deps.nextReq() }, epoch);
    if (answer === "stale") throw new LeaseLostError("the lease was lost before the checkpoint was stored", "lapsed");
    if (answer instanceof Error) throw answer;
    this.checkpointValue = value;
  }

  /** Posts one frame if the lease still allows it; false when it was not posted or was refused. */
  private async post(frame: ClientFrame & { req: string }, epoch: number): Promise<boolean> {
    return (await this.postOrAnswer(frame, epoch)) === "ok";
  }

  private async postOrAnswer(frame: ClientFrame & { req: string }, epoch: number): Promise<"ok" | "stale" | Error> {
    if (epoch !== this.epoch || !this.deps.mayAct()) return "stale";
    let answer: ReplyFrame;
    try {
      answer = await this.deps.request(frame);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      this.deps.event({ type: "unconfirmed", frame: frame.type, reason });
      return new LeaseLostError(`${frame.type} not confirmed: ${reason}`, "lapsed");
    }
    if (answer.type === "result") return "ok";
    this.deps.event({ type: "refused", frame: frame.type, code: answer.code, message: answer.message });
    if (MESSAGE_GONE.has(answer.code)) {
      const gone = new LeaseLostError(`the coordinator refused the ${frame.type}: ${answer.code}`, answer.code);
      this.current?.controller.abort(gone);
      return gone;
    }
    if (!LEASE_GONE.has(answer.code)) return new CoordinatorError(`${frame.type} refused: ${answer.message}`, 0, answer.code);
    this.epoch += 1;
    this.current?.controller.abort(new LeaseLostError(`the coordinator refused the ${frame.type}: ${answer.code}`, answer.code));
    return new LeaseLostError(`the coordinator refused the ${frame.type}: ${answer.code}`, answer.code);
  }
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= maxBytes) return text;
  return new TextDecoder().decode(bytes.subarray(0, maxBytes)).replace(/\uFFFD$/, "");
}
