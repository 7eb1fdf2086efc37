// The runner's work loop: calls the handler once per message the coordinator marked `run`, up to
// `slots` at a time (in order when slots is 1), and writes how the run ended: its reply (which the
// coordinator takes as the acknowledgement), a failure, or nothing (parked, or stopped). Every
// message runs under its own lease token; its run is aborted when the coordinator revokes it, a
// person cancels it, its run timeout or heartbeat timeout passes on this process's clock, a write
// for it is refused as no longer its runner's, or the connection is lost. Nothing a stopped
// handler returns is posted.
import { LIMITS, type MessageFrame } from "../../worker/wire/protocol.ts";
import { CoordinatorError, LeaseLostError, MessageCancelledError } from "../errors.ts";
import type { Clock } from "./clock.ts";
import { agentMessage, type MessageHandler, type ServeEvent } from "./handler.ts";
import { RunBlobs, type Blobs } from "./run-blobs.ts";
import { heartbeatLapsed, park, runContext, type RunEnv } from "./run-context.ts";
import { Run } from "./run.ts";
import { Writer, type CoreLink } from "./writes.ts";
import { OutputBatcher } from "./output-batcher.ts";

export interface WorkLoopDeps {
  handler: MessageHandler;
  link: CoreLink;
  clock: Clock;
  /** True while this process holds the serve lease valid by its own clock; asked before every write under the fence. */
  mayAct: () => boolean;
  /** True while the connection is alive by this process's clock; asked before every write under a message token. */
  mayRun: () => boolean;
  /** The serve fence held now (-1 when not the holder). */
  fence: () => number;
  event: (event: ServeEvent) => void;
  /** Messages run at once (serve --concurrency); 1 keeps them in order. */
  slots?: number;
  /** The agent's name (uploads and what a person is told to run). */
  agent: string;
  /** Values too large for a frame travel over HTTP (R2 on the coordinator); without this they are refused. */
  blobs?: Blobs;
}

export class WorkLoop {
  private queue: MessageFrame[] = [];
  private readonly running = new Map<number, Run>();
  private readonly settled = new Set<Promise<unknown>>();
  /** Hand-outs (id and token) whose reply was accepted: one handed out again is acknowledged, not run. */
  private readonly replied = new Set<string>();
  private agentCheckpoint: unknown = null;
  private readonly writer: Writer;
  private readonly blobs: RunBlobs;

  constructor(private readonly deps: WorkLoopDeps) {
    this.writer = new Writer(deps);
    this.blobs = new RunBlobs(deps.agent, deps.blobs);
  }

  /** The latest agent checkpoint, as handed over with `held:true`. */
  setCheckpoint(value: unknown): void {
    this.agentCheckpoint = value ?? null;
  }

  /** True while a handler runs or a message waits for a slot. */
  get busy(): boolean {
    return this.settled.size > 0 || this.queue.length > 0;
  }

  enqueue(msg: MessageFrame): void {
    const same = (m: MessageFrame) => m.id === msg.id && m.token === msg.token;
    if (this.queue.some(same) || [...this.running.values()].some((r) => same(r.msg))) return;
    this.queue.push(msg);
    this.pump();
  }

  /** The coordinator took a message back: abort its run (if it is this token's) and forget it. */
  revoke(id: number, token: number, reason: string): void {
    const run = this.forget(id, token);
    if (!run) return;
    this.deps.event({ type: "revoked", id, token, reason });
    run.abort(new LeaseLostError(`the coordinator took message ${id} back (${reason})`, "revoked"));
  }

  /** A person cancelled a message: abort its run (if it is this token's) with a MessageCancelledError, and forget it. */
  cancel(id: number, token: number, by: string, reason: string | null): void {
    const run = this.forget(id, token);
    if (!run) return;
    this.deps.event({ type: "cancelled", id, token, by, reason });
    run.abort(new MessageCancelledError(id, by, reason));
  }

  /** Aborts every running handler with `reason` and forgets the queue; resolves, once they have settled, with the queued messages no handler started. */
  async stop(reason: LeaseLostError): Promise<MessageFrame[]> {
    const unstarted = this.halt(reason);
    await this.settledAll();
    return unstarted;
  }

  /** Aborts every running handler with `reason` and forgets the queue, at once: returns the queued messages no handler started. */
  halt(reason: LeaseLostError): MessageFrame[] {
    const unstarted = this.queue;
    this.queue = [];
    for (const run of this.running.values()) run.abort(reason);
    return unstarted;
  }

  /** Resolves once every handler started so far has settled. */
  async settledAll(): Promise<void> {
    await Promise.allSettled([...this.settled]);
  }

  private forget(id: number, token: number): Run | undefined {
    this.queue = this.queue.filter((m) => !(m.id === id && m.token === token));
    const run = this.running.get(id);
    return run && run.token === token ? run : undefined;
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
    const run = new Run({ ...msg, token: msg.token }, deps.clock);
    if (this.replied.has(handOut(run))) {
      await this.writer.send(run, { type: "ack", id: run.id, token: run.token }).catch(() => null);
      return;
    }
    const env: RunEnv = {
      agent: deps.agent, writer: this.writer, blobs: this.blobs, clock: deps.clock, event: deps.event, fence: deps.fence(),
      agentCheckpoint: { get: () => this.agentCheckpoint, set: (value) => (this.agentCheckpoint = value) },
      output: new OutputBatcher((chunks) => this.writer.send(run, { type: "output", id: run.id, token: run.token, chunks }), deps.clock),
    };
    run.armRunTimeout(() => deps.event({ type: "revoked", id: run.id, token: run.token, reason: "run_timeout by the local clock" }));
    run.armHeartbeatClock(deps.clock.now(), () => heartbeatLapsed(run, env));
    this.running.set(run.id, run);
    try {
      await this.runHandler(run, env);
    } finally {
      run.stopTimers();
      if (this.running.get(run.id) === run) this.running.delete(run.id);
    }
  }

  private async runHandler(run: Run, env: RunEnv): Promise<void> {
    const { deps } = this;
    let messageCheckpoint: unknown = run.msg.checkpoint ?? null;
    try {
      if (run.msg.checkpoint_blob) messageCheckpoint = await this.blobs.readJson(run.id, run.msg.checkpoint_blob.id, "checkpoint");
    } catch (error) {
      run.stopTimers();
      if (run.signal.aborted) return;
      return this.fail(run, error, `the message's checkpoint could not be read: ${errorText(error)}`);
    }
    // Cancelled, revoked or stopped while the checkpoint was read: the handler never starts.
    if (run.signal.aborted) return;
    let reply: string | void;
    try {
      reply = await deps.handler(agentMessage(run.msg, true), runContext(run, env, messageCheckpoint));
    } catch (error) {
      if (run.signal.aborted || run.parked) return;
      // A run that fails is a failed attempt, never a reply: the coordinator retries it after a backoff.
      await env.output.flush();
      return this.fail(run, error, errorText(error));
    } finally {
      // The run's time ends with its handler: what it posts now (a reply, a fail) is not cut short by its own timers.
      run.stopTimers();
    }
    if (run.signal.aborted || run.parked) return;
    // Its output is stored before its reply ends the attempt (after that, the coordinator refuses it).
    await env.output.flush();
    if (run.signal.aborted) return;
    await this.reply(run, env, reply ?? "");
  }

  private async reply(run: Run, env: RunEnv, text: string): Promise<void> {
    let body: { text: string } | { text: ""; blob: string };
    try {
      const bytes = new TextEncoder().encode(text);
      body = bytes.byteLength <= LIMITS.replyTextBytes ? { text } : { text: "", blob: await this.blobs.upload(run, bytes, "a reply") };
    } catch (error) {
      if (run.signal.aborted) return;
      return this.fail(run, error, errorText(error));
    }
    try {
      await this.writer.send(run, { type: "reply", id: run.id, token: run.token, key: `${run.id}:reply`, ...body });
    } catch (error) {
      if (!(error instanceof CoordinatorError)) return;
      // The run asked a person (a served command's `baton ask`) and finished anyway: it waits for the answer instead.
      if (error.code === "question_open") return park(run, env, {}).catch((e: unknown) => this.deps.event({ type: "handler_failed", id: run.id, error: e }));
      // An effect of this attempt began and never recorded its outcome: the attempt fails, and the message waits for a person.
      if (error.code === "outcome_unknown") return this.fail(run, null, truncateUtf8(error.message, LIMITS.failReasonChars));
      return;
    }
    this.replied.add(handOut(run));
    this.deps.event({ type: "ran", id: run.id, attempt: run.msg.attempt, fence: env.fence, token: run.token });
  }

  /** Fails this attempt with `reason` (reporting `error` when there is one): the coordinator retries it or gives up. */
  private async fail(run: Run, error: unknown, reason: string): Promise<void> {
    if (error !== null) this.deps.event({ type: "handler_failed", id: run.id, error });
    await this.writer.send(run, { type: "fail", id: run.id, token: run.token, reason }).catch(() => null);
  }
}

function handOut(run: Run): string {
  return `${run.id}:${run.token}`;
}

function errorText(error: unknown): string {
  return truncateUtf8(error instanceof Error ? error.message : String(error), LIMITS.failReasonChars);
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= maxBytes) return text;
  return new TextDecoder().decode(bytes.subarray(0, maxBytes)).replace(/\uFFFD$/, "");
}
