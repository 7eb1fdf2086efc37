// `baton serve` wired together: the reconnecting socket, the client-side lease clock, the
// message runner and the journal. Claims on every (re)connect; demotes itself (kills the run,
// posts nothing, reconnects with a new claim) as soon as its own clock says the lease ran out.
import type { BackoffOptions } from "./backoff.ts";
import { ClientLease } from "./client-lease.ts";
import { CoordinatorSocket } from "./coordinator-socket.ts";
import { MessageJournal } from "./message-journal.ts";
import { MessageRunner } from "./message-runner.ts";
import type { StatusReporter } from "./status-line.ts";
import type { ServerFrame } from "../../worker/wire/protocol.ts";

export interface ServeSessionOptions {
  url: string;
  token: string;
  agent: string;
  machine: string;
  command: string;
  args: readonly string[];
  graceMs: number;
  stateDir: string;
  checkpointPath: string;
  reporter: StatusReporter;
  backoff?: BackoffOptions;
  /** How long to wait for serve_lease before treating the coordinator as an old one that grants. */
  legacyGrantMs?: number;
}

export const LEGACY_GRANT_MS = 2000;
const FALLBACK_TTL_MS = 60_000;

export class ServeSession {
  private readonly socket: CoordinatorSocket;
  private readonly lease = new ClientLease(FALLBACK_TTL_MS);
  private readonly runner: MessageRunner;
  private readonly journal: MessageJournal;
  private claimSentAt = 0;
  private heardLease = false;
  private legacyTimer: NodeJS.Timeout | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;
  private fatalHandler: (message: string) => void = () => {};

  constructor(private readonly opts: ServeSessionOptions) {
    this.socket = new CoordinatorSocket({
      url: opts.url, token: opts.token, agent: opts.agent, machine: opts.machine, backoff: opts.backoff, fallbackTtlMs: FALLBACK_TTL_MS,
    });
    this.journal = new MessageJournal(opts.stateDir, opts.agent, opts.url);
    this.runner = new MessageRunner({
      agent: opts.agent,
      command: opts.command,
      args: opts.args,
      graceMs: opts.graceMs,
      checkpointPath: opts.checkpointPath,
      mayAct: () => this.mayAct(),
      fence: () => (this.lease.state.kind === "holder" ? this.lease.state.fence : -1),
      request: (frame) => this.socket.request(frame),
      nextReq: () => this.socket.nextReq(),
      log: (message, fields) => opts.reporter.log(message, fields),
    });
    this.socket.on("open", (dialedAt) => this.onOpen(dialedAt));
    this.socket.on("frame", (frame) => this.onFrame(frame));
    this.socket.on("pong", (sentAt) => {
      this.lease.acked(sentAt, performance.now());
      this.afterLeaseChange();
    });
    this.socket.on("closed", () => this.onClosed());
    this.socket.on("reconnecting", (attempt, delayMs) => opts.reporter.status({ kind: "reconnecting", attempt, delayMs }));
    this.socket.on("fatal", (message) => this.fatalHandler(message));
  }

  /** Connects; `onFatal` is called when the coordinator refuses us for good (bad token, bad name). */
  start(onFatal: (message: string) => void): void {
    this.fatalHandler = onFatal;
    this.opts.reporter.status({ kind: "connecting" });
    this.socket.start();
  }

  /**
   * Graceful exit: stops the run (SIGTERM, then SIGKILL after the grace), releases the lease so a
   * standby takes over at once, waits briefly for the answer, and closes.
   */
  async shutdown(): Promise<void> {
    this.clearTimers();
    await this.runner.stop();
    if (this.socket.isOpen) {
      try {
        const answer = await this.socket.request({ type: "serve_lease", op: "release", req: this.socket.nextReq() }, 2000);
        if (answer.type === "result" && answer.released === true) this.opts.reporter.log("released the lease");
      } catch {
        // the coordinator will notice the close instead
      }
    }
    await this.socket.stop();
    this.runner.dispose();
    this.opts.reporter.end();
  }

  private mayAct(): boolean {
    if (this.lease.mayAct(performance.now())) return true;
    if (this.lease.state.kind === "lapsed") this.demote();
    return false;
  }

  private onOpen(dialedAt: number): void {
    this.lease.reset(this.socket.heartbeatTtlMs);
    this.lease.acked(dialedAt, performance.now());
    this.heardLease = false;
    this.claimSentAt = performance.now();
    this.socket.send({ type: "serve_lease", op: "claim" });
    this.socket.send({ type: "sync", after: this.journal.cursor, req: this.socket.nextReq() });
    this.armLegacyGrant();
  }

  private onFrame(frame: ServerFrame): void {
    const now = performance.now();
    switch (frame.type) {
      case "welcome":
        if (!this.heardLease) this.armLegacyGrant();
        return;
      case "serve_lease": {
        if (!this.heardLease) {
          this.heardLease = true;
          if (this.legacyTimer) clearTimeout(this.legacyTimer);
          this.lease.acked(this.claimSentAt, now);
        }
        const wasHolder = this.lease.state.kind === "holder";
        const view = this.lease.onLeaseFrame(frame, now);
        if (view.kind === "holder" && !wasHolder) this.runner.setCheckpoint(frame.checkpoint);
        if (view.kind !== "holder") void this.runner.stop();
        this.afterLeaseChange();
        return;
      }
      case "message":
        this.journal.record(frame);
        if (frame.run) this.runner.enqueue(frame);
        return;
      case "error":
        if (frame.req === undefined || !frame.req.startsWith("r")) this.opts.reporter.log(`coordinator error: ${frame.code}: ${frame.message}`);
        return;
      default:
        return;
    }
  }

  private onClosed(): void {
    this.clearTimers();
    void this.runner.stop();
    this.lease.reset(this.socket.heartbeatTtlMs);
  }

  /** Old coordinators never send serve_lease: after a short wait the connection itself is the lease. */
  private armLegacyGrant(): void {
    if (this.legacyTimer) clearTimeout(this.legacyTimer);
    this.legacyTimer = setTimeout(() => {
      if (this.heardLease || !this.socket.isOpen) return;
      this.lease.grantLegacy(performance.now());
      this.afterLeaseChange();
    }, this.opts.legacyGrantMs ?? LEGACY_GRANT_MS);
  }

  /** Reports the state and re-arms the local deadline; a lapsed lease demotes at once. */
  private afterLeaseChange(): void {
    const now = performance.now();
    this.lease.valid(now);
    const view = this.lease.state;
    this.opts.reporter.status(view);
    if (view.kind === "lapsed") return this.demote();
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    const deadline = this.lease.deadline;
    if (deadline !== null) this.deadlineTimer = setTimeout(() => this.afterLeaseChange(), Math.max(0, deadline - now) + 1);
  }

  private demoting = false;

  /** The local clock says the lease is gone: kill the run, post nothing, rejoin as a new claimant. */
  private demote(): void {
    if (this.demoting) return;
    this.demoting = true;
    this.clearTimers();
    this.opts.reporter.status(this.lease.state);
    void this.runner.stop();
    this.socket.reconnectNow();
    this.demoting = false;
  }

  private clearTimers(): void {
    if (this.legacyTimer) clearTimeout(this.legacyTimer);
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.legacyTimer = null;
    this.deadlineTimer = null;
  }
}
