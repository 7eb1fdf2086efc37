// The one way a run writes to the coordinator: a frame goes out (with a fresh `req`) only while
// the lease it is written under can still be proven by this process's clock, and comes back as
// the coordinator's result or as a thrown error that says what the refusal means for the run.
import type { ClientFrame, ErrorCode } from "../../worker/wire/protocol.ts";
import type { ServerFrame } from "../../worker/wire/server-frames.ts";
import { CoordinatorError, LeaseLostError } from "../errors.ts";
import type { ServeEvent } from "./handler.ts";
import type { Run } from "./run.ts";

export type ReplyFrame = Extract<ServerFrame, { type: "result" } | { type: "error" }>;
export type ResultFrame = Extract<ServerFrame, { type: "result" }>;

/** A frame the core sends; `req` is added when it goes out. */
export type OutFrame = ClientFrame extends infer F ? (F extends ClientFrame ? Omit<F, "req"> : never) : never;

/** How the core reaches the coordinator: the serve socket in serve(), a scripted fake in transcripts. */
export interface CoreLink {
  readonly isOpen: boolean;
  /** The heartbeat TTL the coordinator announced. */
  readonly ttlMs: number;
  /** A frame that expects no answer (the claim). */
  send(frame: ClientFrame): void;
  /** A frame carrying `req`; resolves with the result or error frame answering it, rejects when none can come (within `timeoutMs`, when given). */
  request(frame: ClientFrame & { req: string }, timeoutMs?: number): Promise<ReplyFrame>;
  nextReq(): string;
  /** Drops the connection and dials again (a new claim). */
  reconnectNow(): void;
}

/** Error codes after which nothing more may be posted under the serve lease. */
const LEASE_GONE: ReadonlySet<ErrorCode> = new Set(["stale_fence", "not_holder", "lease_expired", "lease_lost"]);
/** Error codes after which nothing more may be posted for one message. */
const MESSAGE_GONE: ReadonlySet<ErrorCode> = new Set(["stale_token", "message_not_running", "cancelled", "not_your_message"]);

export interface WriterDeps {
  link: CoreLink;
  /** True while this process holds the serve lease valid by its own clock. */
  mayAct: () => boolean;
  /** True while the connection is alive by this process's clock. */
  mayRun: () => boolean;
  event: (event: ServeEvent) => void;
}

export class Writer {
  constructor(private readonly deps: WriterDeps) {}

  /**
   * Sends `frame` for `run` (under the serve fence when `underFence`, else under the message's
   * token) and resolves with the result. Throws the run's abort reason when it is stopped, a
   * LeaseLostError when the lease cannot be proven, the write was not confirmed, or the refusal
   * means the lease is gone (a refusal for the message also aborts the run), and a
   * CoordinatorError for any other refusal.
   */
  async send(run: Run, frame: OutFrame, underFence = false): Promise<ResultFrame> {
    run.throwIfStopped();
    const { deps } = this;
    if (!(underFence ? deps.mayAct() : deps.mayRun())) {
      throw new LeaseLostError(`${frame.type} not sent: ${underFence ? "the serve lease" : "the message's lease"} can no longer be proven`, "lapsed");
    }
    let answer: ReplyFrame;
    try {
      answer = await deps.link.request({ ...frame, req: deps.link.nextReq() } as ClientFrame & { req: string });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      deps.event({ type: "unconfirmed", frame: frame.type, reason });
      throw new LeaseLostError(`${frame.type} not confirmed: ${reason}`, "lapsed");
    }
    if (answer.type === "result") return answer;
    deps.event({ type: "refused", frame: frame.type, code: answer.code, message: answer.message });
    const lost = new LeaseLostError(`the coordinator refused the ${frame.type}: ${answer.code}`, answer.code);
    if (MESSAGE_GONE.has(answer.code) || (!underFence && LEASE_GONE.has(answer.code))) {
      run.abort(lost);
      throw lost;
    }
    if (LEASE_GONE.has(answer.code)) throw lost;
    throw new CoordinatorError(`${frame.type} refused: ${answer.message}`, 0, answer.code);
  }
}
