// The runner's work loop: calls the handler once per message the coordinator marked `run`, up to
// `slots` at a time (in order when slots is 1), and posts its reply (which the coordinator takes
// as the acknowledgement). A message handed out with its own lease token is written under that
// token; its run is aborted when the coordinator revokes it, when its run timeout passes on this
// process's clock, or when the connection is lost. A message without a token (an older
// coordinator) runs under the serve lease's fence and stops when that lease is lost.
// Nothing a stopped handler returns is posted.
import {
  checkpointTooLarge, LIMITS, STEP_NAME, unknownOutcomeReason, type ClientFrame, type ErrorCode, type JournalEntry, type MessageFrame, type OnUnknown,
  type Question,
} from "../worker/wire/protocol.ts";
import { CoordinatorError, LeaseLostError, MessageCancelledError, WaitingForPersonError } from "./errors.ts";
import type { ReplyFrame } from "./socket.ts";
import type { RunProof } from "./run-journal.ts";
import type { OnDeadline } from "../worker/wire/enums.ts";

export interface AgentMessage {
  id: number;
  text: string;
  /** 1 on first hand-out; more after a runner lost it (left, timed out) or after a resume. */
  attempt: number;
  /** When the message was posted (ms since the epoch, coordinator's clock). */
  createdAt: number;
  /** The message's own lease token (null from coordinators without per-message leases). */
  token: number | null;
  /** The input a person gave with `baton resume` (null when the message was not resumed). */
  resumeInput: string | null;
  group: string | null;
  /** Proves this hand-out over HTTP (a command's `baton step`, any language): see RunJournal. */
  runKey: string | null;
  /** With the agent's heartbeat timeout, a run that sends no heartbeat within it is taken back; null: none. */
  heartbeatTimeoutMs: number | null;
  /** The choice of the answer that resumed it (approve, or one its question offered); null when it was not answered. */
  resumeChoice: string | null;
  /** The W3C trace context its sender attached (null: none): the run's span continues that trace. */
  traceparent: string | null;
}

/** A person's answer to `ctx.ask`: the choice, the text they gave, and who answered (account, token name, from where), when. */
export interface PersonAnswer {
  choice: string;
  text: string | null;
  by: { account: string; token: string; via: string };
  at: number;
}

export interface AskOptions {
  /** What the person picks from (absent: approve or reject). Reject always ends the message as `rejected`. */
  choices?: string[];
  /** Nobody answered within this: the deadline decides, as `onDeadline` says (fail by default). */
  deadlineSeconds?: number;
  onDeadline?: OnDeadline;
  /**
   * The journal name the answer is kept under (default `ask:N`, N counting this run's asks). Only
   * the coordinator's answer path writes there: a name a step or effect of the run holds is refused.
   */
  name?: string;
  /** Stored with the park as the message's checkpoint. */
  checkpoint?: unknown;
}

export interface MessageContext {
  /** Aborted the moment this process may no longer act on the message (revoked, cancelled by a person, run timeout, lease lost, stop); its reason says which (a cancel's is a MessageCancelledError). */
  readonly signal: AbortSignal;
  /** The fence of the serve lease this process holds (-1 for a pool runner that is not the holder). */
  readonly fence: number;
  /** The message's own lease token when the coordinator leases messages one by one, else null. */
  readonly token: number | null;
  /** The agent's latest checkpoint, as handed to the serve leaseholder (null when none was saved). */
  readonly checkpoint: unknown;
  /** This message's own checkpoint from an earlier attempt (null when none was saved). */
  readonly messageCheckpoint: unknown;
  /**
   * Stores the agent's checkpoint under the serve fence (the holder's) and resolves once the
   * coordinator accepted it. Rejects with LeaseLostError when the lease is gone (and aborts `signal`).
   */
  saveCheckpoint(value: unknown): Promise<void>;
  /** Stores this message's checkpoint under its token: the next runner of this message gets it. */
  saveMessageCheckpoint(value: unknown): Promise<void>;
  /**
   * Gives the message's lease up until someone resumes it (`baton resume`), storing `checkpoint`
   * with it; after `deadlineSeconds` without a resume it fails. Nothing is replied for this run.
   */
  park(options?: { checkpoint?: unknown; deadlineSeconds?: number }): Promise<void>;
  /**
   * A durable step: the first time `name` completes for this message, its result (JSON) is stored
   * under the message's token; on every later attempt, here or on another machine, `step` returns
   * the stored result without calling `fn`. Run the handler from the top on each attempt: recorded
   * steps return at once, so an expensive call is paid once. A step whose `fn` throws records
   * nothing. Rejects with LeaseLostError when the message's lease is gone.
   */
  step<T>(name: string, fn: () => Promise<T> | T): Promise<T>;
  /**
   * A side effect: records its intent before `fn` runs and its outcome after, and hands `fn` the key
   * the coordinator makes for it, the same on every attempt and different in every account
   * (`baton:<account tag>:<agent>:<message id>:<name>`), to pass to the external API as its
   * idempotency key. `fn` may not `ask` (refused: the question could never be answered). An outcome already recorded is returned without running `fn`. If an earlier
   * attempt recorded the intent but no outcome (it died, or `fn` threw), nobody knows whether the
   * effect happened: `onUnknown: "retry"` runs it again under the same key (for APIs that honour
   * it); `"ask"` (the default) parks the message as "outcome unknown: step NAME" until a person
   * answers `baton resume AGENT ID --done` or `--redo`. An effect is never run twice silently.
   */
  effect<T>(name: string, fn: (effect: { key: string; signal: AbortSignal }) => Promise<T> | T, options?: { onUnknown?: OnUnknown }): Promise<T>;
  /**
   * Tells the coordinator the run is alive: with the agent's heartbeat timeout, its deadline moves
   * that far from now (never past the run timeout); `details` are kept as its progress. Resolves
   * with the run's deadline (server ms).
   */
  heartbeat(details?: unknown): Promise<number | null>;
  /**
   * Asks a person: parks the message with the question and ends this run (by throwing
   * WaitingForPersonError, which the loop treats as parked, not failed). When someone answers
   * (dashboard, `baton approve|reject|answer`, HTTP), the handler runs again from the top and
   * `ask` returns the answer at once (only a record the answer path wrote, of kind `answer`). A
   * rejected message never runs again. Not inside an effect's `fn`: refused, as no answer could reach it.
   */
  ask(question: string, options?: AskOptions): Promise<PersonAnswer>;
}

/**
 * Returns the reply text (empty when nothing is returned). Throwing fails the attempt: the
 * coordinator is told why (the error's message) and runs the message again after a backoff, until
 * the agent's max_attempts, after which it is `failed` with that reason.
 */
export type MessageHandler = (message: AgentMessage, ctx: MessageContext) => Promise<string | void> | string | void;

export type ServeEvent =
  | { type: "ran"; id: number; attempt: number; fence: number; token: number | null }
  | { type: "parked"; id: number; token: number }
  | { type: "revoked"; id: number; token: number; reason: string }
  | { type: "cancelled"; id: number; token: number; by: string; reason: string | null }
  | { type: "handler_failed"; id: number; error: unknown }
  | { type: "refused"; frame: ClientFrame["type"]; code: ErrorCode; message: string }
  | { type: "unconfirmed"; frame: ClientFrame["type"]; reason: string }
  | { type: "coordinator_error"; code: ErrorCode; message: string }
  | { type: "released" };

export interface WorkLoopDeps {
  handler: MessageHandler;
  /** True while this process holds the serve lease valid by its own clock; asked before every fenced action. */
  mayAct: () => boolean;
  /** True while the connection is alive by this process's clock; asked before every action under a message token. */
  mayRun: () => boolean;
  fence: () => number;
  request: (frame: ClientFrame & { req: string }) => Promise<ReplyFrame>;
  nextReq: () => string;
  event: (event: ServeEvent) => void;
  /** Messages run at once (serve --concurrency); 1 keeps them in order. */
  slots?: number;
  /** The agent's name (uploads and what a person is told to run). */
  agent: string;
  /** Values too large for a frame travel over HTTP (R2 on the coordinator); without this they are refused. */
  blobs?: {
    upload(proof: RunProof, bytes: Uint8Array): Promise<string>;
    download(id: number, blob: string): Promise<Uint8Array>;
  };
}

/** Error codes after which nothing more may be posted under the serve lease. */
const LEASE_GONE: ReadonlySet<string> = new Set(["stale_fence", "not_holder", "lease_expired", "lease_lost"]);
/** Error codes after which nothing more may be posted for one message. */
const MESSAGE_GONE: ReadonlySet<string> = new Set(["stale_token", "message_not_running", "cancelled"]);

interface ParkOptions {
  checkpoint?: unknown;
  deadlineSeconds?: number;
  question?: Question;
}

interface Run {
  msg: MessageFrame;
  controller: AbortController;
  timer: ReturnType<typeof setTimeout> | null;
  /** With a heartbeat timeout: aborts the run when no heartbeat was confirmed within it, by this process's clock. */
  beatTimer: ReturnType<typeof setTimeout> | null;
  parked: boolean;
  journal: Map<string, JournalEntry>;
  /** Steps and effects of this attempt still running, by kind and name: a second call of one shares the first's result. */
  inflight: Map<string, Promise<unknown>>;
  /** Message checkpoints and parks, one after the other in call order (a large one uploads first, and must not land after a later small one). */
  checkpoints: Promise<unknown>;
  /** How many times this run called `ask` (its default journal names: ask:1, ask:2, …). */
  asks: number;
  /** Effects of this attempt whose `fn` is running: an `ask` now is refused (it could never be answered). */
  effectsRunning: Set<string>;
}

export class WorkLoop {
  private queue: MessageFrame[] = [];
  private readonly running = new Map<number, Run>();
  private readonly settled = new Set<Promise<unknown>>();
  private readonly replied = new Set<string>();
  private checkpointValue: unknown = null;

  constructor(private readonly deps: WorkLoopDeps) {}

  /** The latest agent checkpoint, as handed over with `held:true`. */
  setCheckpoint(value: unknown): void {
    this.checkpointValue = value ?? null;
  }

  enqueue(msg: MessageFrame): void {
    const same = (m: MessageFrame) => m.id === msg.id && m.token === msg.token;
    if (this.queue.some(same) || [...this.running.values()].some((r) => same(r.msg))) return;
    this.queue.push(msg);
    this.pump();
  }

  /** The coordinator took a message back: abort its run (if it is this token's) and forget it. */
  revoke(id: number, token: number, reason: string): void {
    this.queue = this.queue.filter((m) => !(m.id === id && m.token === token));
    const run = this.running.get(id);
    if (!run || run.msg.token !== token) return;
    this.deps.event({ type: "revoked", id, token, reason });
    this.abort(run, new LeaseLostError(`the coordinator took message ${id} back (${reason})`, "revoked"));
  }

  /** A person cancelled a message: abort its run (if it is this token's) with a MessageCancelledError, and forget it. */
  cancel(id: number, token: number, by: string, reason: string | null): void {
    this.queue = this.queue.filter((m) => !(m.id === id && m.token === token));
    const run = this.running.get(id);
    if (!run || run.msg.token !== token) return;
    this.deps.event({ type: "cancelled", id, token, by, reason });
    this.abort(run, new MessageCancelledError(id, by, reason));
  }

  /**
   * Aborts running handlers and forgets the queue, then resolves once they have settled. With
   * `fencedOnly`, only messages run under the serve fence stop (the serve lease moved, but
   * messages with their own tokens keep running until the coordinator revokes them).
   */
  async stop(reason: LeaseLostError, fencedOnly = false): Promise<void> {
    this.queue = fencedOnly ? this.queue.filter((m) => m.token !== undefined) : [];
    for (const run of this.running.values()) if (!fencedOnly || run.msg.token === undefined) this.abort(run, reason);
    await Promise.allSettled([...this.settled]);
  }

  private abort(run: Run, reason: LeaseLostError): void {
    if (run.timer) clearTimeout(run.timer);
    if (run.beatTimer) clearTimeout(run.beatTimer);
    if (!run.controller.signal.aborted) run.controller.abort(reason);
  }

  private pump(): void {
    const slots = this.deps.slots ?? 1;
    while (this.running.size < slots && this.queue.length > 0) {
      const msg = this.queue.shift()!;
      const settled = this.handle(msg).finally(() => {
        this.settled.delete(settled);
        this.pump();
      });
      this.settled.add(settled);
    }
  }

  private async handle(msg: MessageFrame): Promise<void> {
    const { deps } = this;
    // Every message is run under its own lease token; a coordinator that hands out none is too old.
    if (msg.token === undefined) {
      deps.event({ type: "coordinator_error", code: "bad_frame", message: `message ${msg.id} came without a lease token; this coordinator is too old for this client` });
      return;
    }
    if (!deps.mayRun()) return;
    const fence = deps.fence();
    const run: Run = {
      msg, controller: new AbortController(), timer: null, beatTimer: null, parked: false, journal: new Map((msg.steps ?? []).map((e) => [e.name, e])), inflight: new Map(), checkpoints: Promise.resolve(), asks: 0,
      effectsRunning: new Set(),
    };
    if (this.replied.has(writeKey(msg))) {
      await this.post({ type: "ack", id: msg.id, ...this.lease(msg, fence), req: deps.nextReq() }, run);
      return;
    }
    if (msg.run_timeout_ms !== undefined) {
      // The coordinator's deadline started before this frame arrived, so this one is never later.
      run.timer = setTimeout(() => {
        if (msg.token !== undefined) this.deps.event({ type: "revoked", id: msg.id, token: msg.token, reason: "run_timeout by the local clock" });
        this.abort(run, new LeaseLostError(`message ${msg.id} ran past its run timeout`, "lapsed"));
      }, msg.run_timeout_ms);
    }
    this.armHeartbeatClock(run, Date.now());
    this.running.set(msg.id, run);
    const signal = run.controller.signal;
    let messageCheckpoint: unknown = msg.checkpoint ?? null;
    try {
      if (msg.checkpoint_blob) messageCheckpoint = await this.readJson(msg.id, msg.checkpoint_blob.id, "checkpoint");
    } catch (error) {
      this.finish(run);
      if (signal.aborted) return;
      deps.event({ type: "handler_failed", id: msg.id, error });
      await this.post({ type: "fail", id: msg.id, token: this.token(msg), reason: `the message's checkpoint could not be read: ${errorText(error)}`, req: deps.nextReq() }, run);
      return;
    }
    // Cancelled, revoked or stopped while the checkpoint was read: the handler never starts.
    if (signal.aborted) {
      this.finish(run);
      return;
    }
    const ctx: MessageContext = {
      signal,
      fence,
      token: msg.token ?? null,
      checkpoint: this.checkpointValue,
      messageCheckpoint,
      saveCheckpoint: (value) => this.saveCheckpoint({ type: "checkpoint", fence, value }, run, value, true),
      saveMessageCheckpoint: (value) => this.saveMessageCheckpoint(run, value),
      park: (options = {}) => this.park(run, options),
      step: (name, fn) => this.step(run, name, fn),
      effect: (name, fn, options = {}) => this.effect(run, name, fn, options.onUnknown ?? "ask"),
      heartbeat: (details) => this.heartbeat(run, details),
      ask: (question, options = {}) => this.askPerson(run, question, options),
    };
    const message: AgentMessage = {
      id: msg.id, text: msg.text, attempt: msg.attempt, createdAt: msg.created_at,
      token: msg.token ?? null, resumeInput: msg.resume_input ?? null, group: msg.group ?? null,
      runKey: msg.run_key ?? null, heartbeatTimeoutMs: msg.heartbeat_timeout_ms ?? null, resumeChoice: msg.resume_choice ?? null,
      traceparent: msg.traceparent ?? null,
    };
    let reply: string | void;
    try {
      reply = await deps.handler(message, ctx);
    } catch (error) {
      if (signal.aborted || run.parked) return;
      deps.event({ type: "handler_failed", id: msg.id, error });
      // A run that fails is a failed attempt, never a reply: the coordinator retries it after a backoff.
      await this.post({ type: "fail", id: msg.id, token: this.token(msg), reason: errorText(error), req: deps.nextReq() }, run);
      return;
    } finally {
      this.finish(run);
    }
    if (signal.aborted || run.parked) return;
    const text = reply ?? "";
    let body: { text: string } | { text: ""; blob: string };
    try {
      body = await this.replyBody(run, text);
    } catch (error) {
      if (signal.aborted) return;
      deps.event({ type: "handler_failed", id: msg.id, error });
      await this.post({ type: "fail", id: msg.id, token: this.token(msg), reason: errorText(error), req: deps.nextReq() }, run);
      return;
    }
    const frame = { type: "reply" as const, id: msg.id, ...this.lease(msg, fence), key: `${msg.id}:reply`, ...body, req: deps.nextReq() };
    const answer = await this.postOrAnswer(frame, run);
    if (answer instanceof CoordinatorError && answer.code === "question_open") {
      // The run asked a person (a served command's `baton ask`) and finished anyway: it waits for the answer instead.
      await this.park(run, {}).catch((error: unknown) => deps.event({ type: "handler_failed", id: msg.id, error }));
      return;
    }
    if (answer instanceof CoordinatorError && answer.code === "outcome_unknown") {
      // An effect of this attempt began and never recorded its outcome: the attempt fails, and the message waits for a person.
      await this.post({ type: "fail", id: msg.id, token: this.token(msg), reason: truncateUtf8(answer.message, LIMITS.failReasonChars), req: deps.nextReq() }, run);
      return;
    }
    if (answer !== "ok") return;
    this.replied.add(writeKey(msg));
    deps.event({ type: "ran", id: msg.id, attempt: msg.attempt, fence, token: msg.token ?? null });
  }

  private finish(run: Run): void {
    if (run.timer) clearTimeout(run.timer);
    if (run.beatTimer) clearTimeout(run.beatTimer);
    if (this.running.get(run.msg.id) === run) this.running.delete(run.msg.id);
  }

  /** A reply rides inline up to its frame limit; a larger one is uploaded first (R2), and one over the blob limit fails the run. */
  private async replyBody(run: Run, text: string): Promise<{ text: string } | { text: ""; blob: string }> {
    const bytes = new TextEncoder().encode(text);
    if (bytes.byteLength <= LIMITS.replyTextBytes) return { text };
    return { text: "", blob: await this.upload(run, bytes, "a reply") };
  }

  /** What a write for this message carries: its lease token. */
  private lease(msg: MessageFrame, _fence: number): { token: number } {
    return { token: this.token(msg) };
  }

  private token(msg: MessageFrame): number {
    if (msg.token === undefined) throw new CoordinatorError("this coordinator has no per-message leases", 0, null);
    return msg.token;
  }

  /** A message checkpoint rides inline up to its frame limit; a larger one is uploaded first (R2). */
  private saveMessageCheckpoint(run: Run, value: unknown): Promise<void> {
    return this.inOrder(run, () => this.storeMessageCheckpoint(run, value));
  }

  /** Runs checkpoint writes of one run one at a time, in the order they were called. */
  private inOrder<T>(run: Run, write: () => Promise<T>): Promise<T> {
    const next = run.checkpoints.then(write, write);
    run.checkpoints = next.catch(() => {});
    return next;
  }

  private async storeMessageCheckpoint(run: Run, value: unknown): Promise<void> {
    const blob = await this.checkpointBlob(run, value);
    const frame = { type: "checkpoint" as const, id: run.msg.id, token: this.token(run.msg), ...(blob === null ? { value } : { blob }) };
    const answer = await this.postOrAnswer({ ...frame, req: this.deps.nextReq() }, run, false);
    if (answer === "stale") throw new LeaseLostError("the lease was lost before the checkpoint was stored", "lapsed");
    if (answer instanceof Error) throw answer;
  }

  /** The blob a large message checkpoint was uploaded as, or null when it rides inline. */
  private async checkpointBlob(run: Run, value: unknown): Promise<string | null> {
    if (value === undefined) throw new TypeError("a checkpoint is a JSON value, not undefined");
    const json = JSON.stringify(value);
    const bytes = new TextEncoder().encode(json);
    return bytes.byteLength <= LIMITS.checkpointBytes ? null : this.upload(run, bytes, "a checkpoint");
  }

  private async saveCheckpoint(frame: ClientFrame, run: Run, value: unknown, agentLevel: boolean): Promise<void> {
    this.throwIfStopped(run);
    if (checkpointTooLarge(value)) throw new RangeError(`a checkpoint is JSON of at most ${LIMITS.checkpointBytes} bytes`);
    const answer = await this.postOrAnswer({ ...frame, req: this.deps.nextReq() } as ClientFrame & { req: string }, run, agentLevel);
    if (answer === "stale") throw new LeaseLostError("the lease was lost before the checkpoint was stored", "lapsed");
    if (answer instanceof Error) throw answer;
    if (agentLevel) this.checkpointValue = value;
  }

  private park(run: Run, options: ParkOptions): Promise<void> {
    return this.inOrder(run, () => this.parkNow(run, options));
  }

  /** The answer kept in the journal when this ask was answered; else the message parks with the question and this run ends. */
  private async askPerson(run: Run, question: string, options: AskOptions): Promise<PersonAnswer> {
    const name = options.name ?? `ask:${++run.asks}`;
    checkStepName(name);
    if (options.onDeadline !== undefined && options.deadlineSeconds === undefined) throw new TypeError("ask: onDeadline needs deadlineSeconds");
    const inside = run.effectsRunning.values().next().value;
    if (inside !== undefined) {
      // Parking here would leave the message waiting on the effect's outcome, where no answer can reach it.
      throw new TypeError(`ask inside effect "${inside}": a question asked inside an effect could never be answered; ask before the effect or after it`);
    }
    const answered = run.journal.get(name);
    // Only the coordinator's answer path writes a record of kind answer: a run's own step under this name is no answer.
    if (answered && answered.kind !== "answer") throw new TypeError(`"${name}" is recorded as ${kindName(answered.kind)}, not as a person's answer; an ask needs a name of its own`);
    if (answered?.status === "done") return (await this.valueOf(run, answered)) as PersonAnswer;
    await this.park(run, {
      checkpoint: options.checkpoint, deadlineSeconds: options.deadlineSeconds,
      question: { text: question, step: name, ...(options.choices ? { choices: options.choices } : {}), ...(options.onDeadline ? { on_deadline: options.onDeadline } : {}) },
    });
    throw new WaitingForPersonError(run.msg.id, question);
  }

  private async parkNow(run: Run, options: ParkOptions): Promise<void> {
    const token = this.token(run.msg);
    const blob = options.checkpoint === undefined ? null : await this.checkpointBlob(run, options.checkpoint);
    const frame = {
      type: "park" as const, id: run.msg.id, token, req: this.deps.nextReq(),
      ...(options.checkpoint === undefined ? {} : blob === null ? { value: options.checkpoint } : { blob }),
      ...(options.deadlineSeconds === undefined ? {} : { deadline_seconds: options.deadlineSeconds }),
      ...(options.question === undefined ? {} : { question: options.question }),
    };
    const answer = await this.postOrAnswer(frame, run);
    if (answer === "stale") throw new LeaseLostError("the message's lease was lost before it was parked", "lapsed");
    if (answer instanceof Error) throw answer;
    run.parked = true;
    if (run.timer) clearTimeout(run.timer);
    this.deps.event({ type: "parked", id: run.msg.id, token });
  }

  /**
   * With a heartbeat timeout, the coordinator takes the run back once none arrived within it; this
   * clock stops the run first: it runs from `sentAt` of the last confirmed heartbeat (or the
   * hand-out), which is never later than the coordinator's own.
   */
  private armHeartbeatClock(run: Run, sentAt: number): void {
    const timeout = run.msg.heartbeat_timeout_ms;
    if (timeout === undefined || run.controller.signal.aborted) return;
    if (run.beatTimer) clearTimeout(run.beatTimer);
    run.beatTimer = setTimeout(() => {
      this.deps.event({ type: "revoked", id: run.msg.id, token: this.token(run.msg), reason: "no heartbeat within the heartbeat timeout by the local clock" });
      this.abort(run, new LeaseLostError(`message ${run.msg.id} sent no heartbeat within ${timeout} ms`, "lapsed"));
    }, Math.max(0, sentAt + timeout - Date.now()));
  }

  private async heartbeat(run: Run, details: unknown): Promise<number | null> {
    const sentAt = Date.now();
    const frame = {
      type: "heartbeat" as const, id: run.msg.id, token: this.token(run.msg), req: this.deps.nextReq(), ...(details === undefined ? {} : { details }),
    };
    const answer = await this.ask(frame, run);
    if (answer.op !== "heartbeat") throw new CoordinatorError("heartbeat answered with another result", 0, null);
    this.armHeartbeatClock(run, sentAt);
    return answer.expires_at;
  }

  private step<T>(run: Run, name: string, fn: () => Promise<T> | T): Promise<T> {
    return this.once(run, "step", name, async () => {
      const done = run.journal.get(name);
      if (done && done.kind !== "step") throw new TypeError(`"${name}" is recorded as ${kindName(done.kind)}; a step needs a name of its own`);
      if (done?.status === "done") return this.valueOf(run, done) as Promise<T>;
      this.throwIfStopped(run);
      const value = await fn();
      return (await this.record(run, { name, kind: "step", phase: "done", value })).value as T;
    });
  }

  private effect<T>(
    run: Run, name: string, fn: (effect: { key: string; signal: AbortSignal }) => Promise<T> | T, onUnknown: OnUnknown,
  ): Promise<T> {
    return this.once(run, "effect", name, async () => {
      const known = run.journal.get(name);
      if (known && known.kind !== "effect") throw new TypeError(`"${name}" is recorded as ${kindName(known.kind)}; an effect needs a name of its own`);
      if (known?.status === "done") return this.valueOf(run, known) as Promise<T>;
      this.throwIfStopped(run);
      // The intent is durable before the effect runs, so a successor knows it may have happened.
      const began = await this.record(run, { name, kind: "effect", phase: "intent", onUnknown });
      if (began.status === "done") return began.value as T;
      if (known?.status === "intent" && onUnknown === "ask") {
        // An earlier attempt began it with another policy; with "ask", failing this attempt parks the message for a person.
        throw new Error(`${unknownOutcomeReason(name)}; a person decides: baton resume ${this.deps.agent} ${run.msg.id} --done | --redo`);
      }
      // The coordinator makes the key (it knows the account); one that hands out none is too old for this client.
      if (began.key === undefined) throw new CoordinatorError(`effect "${name}": this coordinator hands out no idempotency key; it is too old for this client`, 0, null);
      run.effectsRunning.add(name);
      let value: T;
      try {
        value = await fn({ key: began.key, signal: run.controller.signal });
      } finally {
        run.effectsRunning.delete(name);
      }
      return (await this.record(run, { name, kind: "effect", phase: "done", value, onUnknown })).value as T;
    });
  }

  /** One call per name at a time in an attempt: a second, concurrent call (Promise.all, a retry wrapper) gets the first one's result. */
  private once<T>(run: Run, kind: "step" | "effect", name: string, body: () => Promise<T>): Promise<T> {
    checkStepName(name);
    const key = `${kind} ${name}`;
    const running = run.inflight.get(key);
    if (running) return running as Promise<T>;
    const call = body().finally(() => run.inflight.delete(key));
    run.inflight.set(key, call);
    return call;
  }

  /** Writes one journal record under the message's token; resolves with what the journal holds for it. */
  private async record(
    run: Run, write: { name: string; kind: "step" | "effect"; phase: "intent" | "done"; value?: unknown; onUnknown?: OnUnknown },
  ): Promise<{ status: "intent" | "done"; value: unknown; key?: string }> {
    const json = JSON.stringify(write.value === undefined ? null : write.value) ?? "null";
    const bytes = new TextEncoder().encode(json);
    const inline = write.phase !== "done" || bytes.byteLength <= LIMITS.stepValueBytes;
    const result = write.phase !== "done" ? {} : inline ? { value: JSON.parse(json) as unknown } : { blob: await this.upload(run, bytes, "a step's result") };
    const frame = {
      type: "step" as const, id: run.msg.id, token: this.token(run.msg), name: write.name, kind: write.kind, phase: write.phase, req: this.deps.nextReq(),
      ...result, ...(write.onUnknown === undefined ? {} : { on_unknown: write.onUnknown }),
    };
    const answer = await this.ask(frame, run);
    if (answer.op !== "step") throw new CoordinatorError("step answered with another result", 0, null);
    const entry: JournalEntry = {
      name: write.name, kind: write.kind, status: answer.status, value: answer.value, on_unknown: write.onUnknown ?? null, attempt: run.msg.attempt,
      ...(answer.blob ? { blob: answer.blob } : {}),
    };
    run.journal.set(write.name, entry);
    return {
      status: answer.status, value: answer.status === "done" ? await this.valueOf(run, entry) : null,
      ...(answer.idempotency_key === undefined ? {} : { key: answer.idempotency_key }),
    };
  }

  /** A value over its frame's inline limit goes to the coordinator's R2 first; the write that names it then commits it. */
  private async upload(run: Run, bytes: Uint8Array, what: string): Promise<string> {
    if (bytes.byteLength > LIMITS.blobBytes) throw new RangeError(`${what} is at most ${LIMITS.blobBytes} bytes, got ${bytes.byteLength}`);
    if (!this.deps.blobs || run.msg.run_key === undefined) throw new RangeError(`${what} of ${bytes.byteLength} bytes needs a coordinator with large values (R2)`);
    this.throwIfStopped(run);
    return this.deps.blobs.upload({ agent: this.deps.agent, id: run.msg.id, token: this.token(run.msg), runKey: run.msg.run_key }, bytes);
  }

  /** A recorded result: inline, or read back from the coordinator's R2. */
  private async valueOf(run: Run, entry: JournalEntry): Promise<unknown> {
    return entry.blob ? this.readJson(run.msg.id, entry.blob.id, `step ${entry.name}'s result`) : entry.value;
  }

  private async readJson(id: number, blob: string, what: string): Promise<unknown> {
    if (!this.deps.blobs) throw new RangeError(`${what} is a blob and this runner cannot read blobs`);
    return JSON.parse(new TextDecoder().decode(await this.deps.blobs.download(id, blob))) as unknown;
  }

  private throwIfStopped(run: Run): void {
    const { signal } = run.controller;
    if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new LeaseLostError("the lease is gone", "stopped");
  }

  /** Sends a write under the message's token and returns its result frame; throws what a refusal means. */
  private async ask(frame: ClientFrame & { req: string }, run: Run): Promise<Extract<ReplyFrame, { type: "result" }>> {
    this.throwIfStopped(run);
    const answer = await this.exchange(frame, run, false);
    if (answer === "stale") throw new LeaseLostError("the connection is lost; the message's lease cannot be proven", "lapsed");
    if (answer instanceof CoordinatorError && answer.code === "not_your_message") {
      // A journal write refused as someone else's means this run no longer owns the message.
      const lost = new LeaseLostError(`the coordinator refused the ${frame.type}: not_your_message`, "not_your_message");
      this.abort(run, lost);
      throw lost;
    }
    if (answer instanceof Error) throw answer;
    return answer;
  }

  /** Posts one frame if the lease still allows it; false when it was not posted or was refused. */
  private async post(frame: ClientFrame & { req: string }, run: Run): Promise<boolean> {
    return (await this.postOrAnswer(frame, run)) === "ok";
  }

  private async postOrAnswer(frame: ClientFrame & { req: string }, run: Run, fenced = run.msg.token === undefined): Promise<"ok" | "stale" | Error> {
    const answer = await this.exchange(frame, run, fenced);
    return typeof answer === "object" && !(answer instanceof Error) ? "ok" : answer;
  }

  /** One write and its answer: the result frame, "stale" when the lease no longer allows it, or the error a refusal means. */
  private async exchange(frame: ClientFrame & { req: string }, run: Run, fenced: boolean): Promise<Extract<ReplyFrame, { type: "result" }> | "stale" | Error> {
    if (run.controller.signal.aborted || !(fenced ? this.deps.mayAct() : this.deps.mayRun())) return "stale";
    let answer: ReplyFrame;
    try {
      answer = await this.deps.request(frame);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      this.deps.event({ type: "unconfirmed", frame: frame.type, reason });
      return new LeaseLostError(`${frame.type} not confirmed: ${reason}`, "lapsed");
    }
    if (answer.type === "result") return answer;
    this.deps.event({ type: "refused", frame: frame.type, code: answer.code, message: answer.message });
    const lost = new LeaseLostError(`the coordinator refused the ${frame.type}: ${answer.code}`, answer.code);
    if (MESSAGE_GONE.has(answer.code)) {
      this.abort(run, lost);
      return lost;
    }
    if (!LEASE_GONE.has(answer.code)) return new CoordinatorError(`${frame.type} refused: ${answer.message}`, 0, answer.code);
    if (fenced) void this.stop(lost, true);
    else this.abort(run, lost);
    return lost;
  }
}

function checkStepName(name: string): void {
  if (!STEP_NAME.test(name)) throw new TypeError(`step names are 1-${LIMITS.stepNameChars} letters, digits, '.', '_', ':' or '-', got ${JSON.stringify(name)}`);
}

function kindName(kind: JournalEntry["kind"]): string {
  return kind === "answer" ? "a person's answer" : kind === "step" ? "a step" : "an effect";
}

function errorText(error: unknown): string {
  return truncateUtf8(error instanceof Error ? error.message : String(error), LIMITS.failReasonChars);
}

function writeKey(msg: MessageFrame): string {
  return `${msg.id}:${msg.token ?? "fence"}`;
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= maxBytes) return text;
  return new TextDecoder().decode(bytes.subarray(0, maxBytes)).replace(/\uFFFD$/, "");
}
