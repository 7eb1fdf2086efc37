// One run of one message: the hand-out it runs under, its abort, its timers (run timeout and
// heartbeat clock, on the injected clock), its journal as replayed and written, the steps in
// flight, and its checkpoint writes in call order. Whatever ends the run (revoke, cancel, lease
// lost, stop) aborts its signal once and cancels its timers.
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import type { JournalEntry } from "../../worker/wire/server-frames.ts";
import { LeaseLostError } from "../errors.ts";
import type { Clock } from "./clock.ts";

export class Run {
  readonly controller = new AbortController();
  /** The journal as the hand-out carried it, then as this run's writes left it. */
  readonly journal: Map<string, JournalEntry>;
  /** Steps and effects of this attempt still running, by kind and name: a second call of one shares the first's result. */
  readonly inflight = new Map<string, Promise<unknown>>();
  /** Effects of this attempt whose `fn` is running: an `ask` now is refused (it could never be answered). */
  readonly effectsRunning = new Set<string>();
  /** How many times this run called `ask` (its default journal names: ask:1, ask:2, …). */
  asks = 0;
  parked = false;
  private cancelTimeout: (() => void) | null = null;
  private cancelBeat: (() => void) | null = null;
  /** Message checkpoints and parks, one after the other in call order (a large one uploads first, and must not land after a later small one). */
  private checkpoints: Promise<unknown> = Promise.resolve();

  constructor(readonly msg: MessageFrame & { token: number }, private readonly clock: Clock) {
    this.journal = new Map((msg.steps ?? []).map((e) => [e.name, e]));
  }

  get id(): number {
    return this.msg.id;
  }

  get token(): number {
    return this.msg.token;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Stops the run at its run timeout by this process's clock (the coordinator's started earlier, so this one is never later). */
  armRunTimeout(onLapse: () => void): void {
    const ms = this.msg.run_timeout_ms;
    if (ms === undefined) return;
    this.cancelTimeout = this.clock.after(ms, () => {
      onLapse();
      this.abort(new LeaseLostError(`message ${this.id} ran past its run timeout`, "lapsed"));
    });
  }

  /**
   * With a heartbeat timeout, the coordinator takes the run back once none arrived within it; this
   * clock stops the run first: it runs from `sentAt` of the last confirmed heartbeat (or the
   * hand-out), which is never later than the coordinator's own.
   */
  armHeartbeatClock(sentAt: number, onLapse: () => void): void {
    const timeout = this.msg.heartbeat_timeout_ms;
    if (timeout === undefined || this.signal.aborted) return;
    this.cancelBeat?.();
    this.cancelBeat = this.clock.after(Math.max(0, sentAt + timeout - this.clock.now()), () => {
      onLapse();
      this.abort(new LeaseLostError(`message ${this.id} sent no heartbeat within ${timeout} ms`, "lapsed"));
    });
  }

  /** Ends the run's right to act: its signal aborts with `reason` (once) and its timers stop. */
  abort(reason: LeaseLostError): void {
    this.stopTimers();
    if (!this.signal.aborted) this.controller.abort(reason);
  }

  /** A park gave the lease up: the run timeout no longer applies. */
  markParked(): void {
    this.parked = true;
    this.cancelTimeout?.();
  }

  stopTimers(): void {
    this.cancelTimeout?.();
    this.cancelBeat?.();
    this.cancelTimeout = this.cancelBeat = null;
  }

  throwIfStopped(): void {
    if (this.signal.aborted) throw this.signal.reason instanceof Error ? this.signal.reason : new LeaseLostError("the lease is gone", "stopped");
  }

  /** One call per kind and name at a time in an attempt: a second, concurrent call (Promise.all, a retry wrapper) gets the first one's result. */
  once<T>(key: string, body: () => Promise<T>): Promise<T> {
    const running = this.inflight.get(key);
    if (running) return running as Promise<T>;
    const call = body().finally(() => this.inflight.delete(key));
    this.inflight.set(key, call);
    return call;
  }

  /** Runs checkpoint writes and parks of this run one at a time, in the order they were called. */
  inOrder<T>(write: () => Promise<T>): Promise<T> {
    const next = this.checkpoints.then(write, write);
    this.checkpoints = next.catch(() => {});
    return next;
  }
}
