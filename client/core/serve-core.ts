// One serve connection's decisions, without I/O: what to send when the connection opens (the
// claim, then a replay of missed history), what each frame from the coordinator means (the lease
// held or lost, a message to run, a run revoked or cancelled), and when this process's own clock
// says the lease or the connection can no longer be proven (then every run stops and the link
// dials again). The socket, HTTP blobs and timers come in as adapters: CoreLink, Blobs, Clock.
import type { MessageFrame, ServerFrame } from "../../worker/wire/server-frames.ts";
import { LeaseLostError } from "../errors.ts";
import { LeaseClock } from "../lease-clock.ts";
import { ServeLease, type LeaseView } from "../serve-lease.ts";
import { sleep, type Clock } from "./clock.ts";
import { agentMessage, type AgentMessage, type MessageHandler, type ServeEvent } from "./handler.ts";
import type { Blobs } from "./run-blobs.ts";
import { WorkLoop } from "./work-loop.ts";
import type { CoreLink } from "./writes.ts";

export type ServeStatus = LeaseView | { kind: "reconnecting"; attempt: number; delayMs: number; reason: string };

export interface ServeCoreOptions {
  agent: string;
  handler: MessageHandler;
  link: CoreLink;
  clock: Clock;
  runnerId: string;
  priority?: number;
  /** Messages run at once (default 1, in order). */
  concurrency?: number;
  /** Messages up to this id were already seen: the first sync asks only for later ones. */
  cursor?: number;
  blobs?: Blobs;
  onStatus?: (status: ServeStatus) => void;
  onEvent?: (event: ServeEvent) => void;
  /** Every message frame as it arrives (without its run key: journals must not store it). */
  onMessage?: (message: AgentMessage) => void;
}

/** Until the coordinator's welcome says otherwise. */
export const FALLBACK_TTL_MS = 60_000;
const RATE_LIMITED_RETRY_MS = 1000;
const RELEASE_TIMEOUT_MS = 2000;

export class ServeCore {
  private readonly lease = new ServeLease(FALLBACK_TTL_MS);
  /** The connection itself, by this process's clock: a pool runner that is not the holder may act on its messages only while the coordinator cannot yet have given up on it. */
  private readonly connection = new LeaseClock(FALLBACK_TTL_MS);
  private readonly work: WorkLoop;
  private statusValue: ServeStatus = { kind: "connecting" };
  private cursor: number;
  private syncEpoch = 0;
  private claimSentAt = 0;
  private heardLease = false;
  private cancelDeadline: (() => void) | null = null;
  /** stop() began: nothing more is claimed or run, even what the coordinator handed out before it heard (as Python's work.stopping). */
  private stopped = false;
  /** stop() told the coordinator this runner is stopping (hello `stopping`), so it may decline what it will not start. */
  private saidStopping = false;
  /** While stopping, the coordinator handed the lease to a runner that is not: as good as released. */
  private handedOn = false;

  constructor(private readonly opts: ServeCoreOptions) {
    this.cursor = opts.cursor ?? 0;
    const { link, clock } = opts;
    this.work = new WorkLoop({
      agent: opts.agent, handler: opts.handler, link, clock, slots: opts.concurrency ?? 1, blobs: opts.blobs,
      event: (e) => this.event(e),
      mayAct: () => this.mayAct(),
      mayRun: () => link.isOpen && this.connection.mayAct(clock.now()),
      fence: () => (this.lease.state.kind === "holder" ? this.lease.state.fence : -1),
    });
    this.report(this.statusValue);
  }

  get status(): ServeStatus {
    return this.statusValue;
  }

  /** True while a handler runs or a message waits to. */
  get busy(): boolean {
    return this.work.busy;
  }

  /** The connection opened (dialled at `dialedAt`): claim, and replay what was missed. */
  opened(dialedAt: number): void {
    if (this.stopped) return;
    const { link, clock } = this.opts;
    const now = clock.now();
    this.lease.reset(link.ttlMs);
    this.lease.acked(dialedAt, now);
    this.connection.reset(link.ttlMs);
    this.connection.confirmed(dialedAt, now);
    this.connection.hold(now);
    this.heardLease = false;
    this.claimSentAt = now;
    const slots = this.opts.concurrency ?? 1;
    link.send({
      type: "serve_lease", op: "claim", runner_id: this.opts.runnerId,
      ...(this.opts.priority === undefined ? {} : { priority: this.opts.priority }), ...(slots === 1 ? {} : { concurrency: slots }),
    });
    void this.replayHistory(++this.syncEpoch);
    this.report(this.lease.state);
  }

  /** A frame from the coordinator (answers to requests are matched by the link, not here). */
  receive(frame: ServerFrame): void {
    const now = this.opts.clock.now();
    switch (frame.type) {
      case "serve_lease": {
        if (!this.heardLease) {
          this.heardLease = true;
          this.lease.acked(this.claimSentAt, now);
        }
        const wasHolder = this.lease.state.kind === "holder";
        if (wasHolder && this.saidStopping && !frame.held) this.handedOn = true;
        // Messages run under their own tokens, so losing the serve lease stops none: the coordinator revokes them one by one.
        if (this.lease.onLeaseFrame(frame, now).kind === "holder" && !wasHolder) this.work.setCheckpoint(frame.checkpoint);
        return this.afterLeaseChange();
      }
      case "message":
        this.cursor = Math.max(this.cursor, frame.id);
        this.opts.onMessage?.(agentMessage(frame, false));
        if (!frame.run) return;
        if (!this.stopped) this.work.enqueue(frame);
        // Handed out before the coordinator read our hello {stopping}: given back, so it costs no attempt.
        else if (this.saidStopping) this.decline(frame);
        return;
      case "revoked":
        return this.work.revoke(frame.id, frame.token, frame.reason);
      case "cancel":
        return this.work.cancel(frame.id, frame.token, frame.by, frame.reason);
      case "error":
        // Answers to our own requests are reported where they were asked.
        if (frame.req === undefined) this.event({ type: "coordinator_error", code: frame.code, message: frame.message });
        return;
      default:
        return;
    }
  }

  /** A pong answered the ping sent at `sentAt`: both clocks move on. */
  pong(sentAt: number): void {
    const now = this.opts.clock.now();
    this.connection.confirmed(sentAt, now);
    this.lease.acked(sentAt, now);
    this.afterLeaseChange();
  }

  /** The connection closed: every run stops (the coordinator takes their messages back). */
  async closed(): Promise<void> {
    this.clearDeadline();
    this.lease.reset(this.opts.link.ttlMs);
    await this.work.stop(new LeaseLostError("the connection closed", "lapsed"));
  }

  /** The link is retrying after a failure. */
  retrying(attempt: number, delayMs: number, reason: string): void {
    this.report({ kind: "reconnecting", attempt, delayMs, reason });
  }

  /**
   * Stops every run and waits for them to settle; with `release`, first tells the coordinator this
   * runner is stopping (so nothing new is handed to it while its runs stop, and a message posted
   * meanwhile waits for another runner as attempt 1), then gives the lease up so a standby takes over at once.
   * What reached it that no handler started (waiting for a slot, or handed out before the
   * coordinator read the hello) it declines: back to the queue, the attempt not counted.
   */
  async stop(release: boolean): Promise<void> {
    this.stopped = true;
    this.clearDeadline();
    const { link } = this.opts;
    if (release && link.isOpen) {
      link.send({ type: "hello", stopping: true });
      this.saidStopping = true;
    }
    // What never started goes back at once: a handler that ignores its abort must not keep it `running` (nor cost it an attempt by a heartbeat timeout).
    const unstarted = this.work.halt(new LeaseLostError("serving stopped", "stopped"));
    if (this.saidStopping) for (const m of unstarted) this.decline(m);
    await this.work.settledAll();
    if (!release || !link.isOpen) return;
    const answer = await link.request({ type: "serve_lease", op: "release", req: link.nextReq() }, RELEASE_TIMEOUT_MS).catch(() => null);
    // No answer: the coordinator notices the close instead.
    if (answer?.type === "result" && answer.op === "release" && (answer.released || this.handedOn)) this.event({ type: "released" });
  }

  /** Gives a hand-out this stopping runner never started back to the queue (the socket keeps it ahead of the release). */
  private decline(m: MessageFrame): void {
    const { link } = this.opts;
    if (m.token === undefined || !link.isOpen) return;
    void link.request({ type: "decline", id: m.id, token: m.token, req: link.nextReq() }, RELEASE_TIMEOUT_MS).catch(() => null);
  }

  private mayAct(): boolean {
    if (this.lease.mayAct(this.opts.clock.now())) return true;
    if (this.lease.state.kind === "lapsed") this.demote();
    return false;
  }

  /**
   * Replays missed history one page at a time: each sync is answered with one page and `more: true`
   * while there is another; over the coordinator's replay budget it is answered rate_limited and we
   * ask again a second later. A reconnect starts a new replay and ends this one.
   */
  private async replayHistory(epoch: number): Promise<void> {
    const { link, clock } = this.opts;
    let after = this.cursor;
    while (epoch === this.syncEpoch && link.isOpen) {
      const answer = await link.request({ type: "sync", after, req: link.nextReq() }).catch(() => null);
      if (answer === null) return;
      if (answer.type === "error") {
        if (answer.code !== "rate_limited") return;
        await sleep(clock, RATE_LIMITED_RETRY_MS);
      } else if (answer.op === "sync" && answer.more) {
        after = answer.cursor;
      } else {
        return;
      }
    }
  }

  /** Reports the state and re-arms the local deadline; a lapsed lease or connection demotes at once. */
  private afterLeaseChange(): void {
    const { clock } = this.opts;
    const t = clock.now();
    this.lease.valid(t);
    const view = this.lease.state;
    if (view.kind === "lapsed") return this.demote();
    // The connection lapsed by our clock (no pong for a TTL): the coordinator may already have taken every message of ours back.
    if (!this.connection.valid(t)) return this.demote();
    if (JSON.stringify(this.statusValue) !== JSON.stringify(view)) this.report(view);
    this.clearDeadline();
    const deadline = this.lease.deadline === null ? this.connection.deadline : Math.min(this.lease.deadline, this.connection.deadline ?? Infinity);
    if (deadline !== null) this.cancelDeadline = clock.after(Math.max(0, deadline - t) + 1, () => this.afterLeaseChange());
  }

  /** The local clock says the lease is gone: abort every run, post nothing, rejoin as a new claimant. */
  private demote(): void {
    this.clearDeadline();
    this.report(this.lease.state);
    void this.work.stop(new LeaseLostError("the lease lapsed on the local clock", "lapsed"));
    this.opts.link.reconnectNow();
  }

  private clearDeadline(): void {
    this.cancelDeadline?.();
    this.cancelDeadline = null;
  }

  private report(next: ServeStatus): void {
    this.statusValue = next;
    this.opts.onStatus?.(next);
  }

  private event(e: ServeEvent): void {
    this.opts.onEvent?.(e);
  }
}
