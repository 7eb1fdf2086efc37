// The holder's work loop: runs COMMAND once per message the coordinator marked `run`, one at a
// time and in order, then posts the checkpoint (if the run rewrote it) and the reply (which the
// coordinator takes as the acknowledgement).
// Every post is gated by the lease check, and stop() (lease lost, lapsed or connection gone)
// kills the run and drops the queue; output of a stopped run is never posted.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { LIMITS, type ClientFrame, type MessageFrame } from "../../worker/wire/protocol.ts";
import type { ReplyFrame } from "./coordinator-socket.ts";
import { startRun, type RunHandle } from "./runner.ts";

export interface MessageRunnerDeps {
  agent: string;
  command: string;
  args: readonly string[];
  graceMs: number;
  checkpointPath: string;
  /** True while this process holds a lease valid by its own clock; checked before every action. */
  mayAct: () => boolean;
  fence: () => number;
  request: (frame: ClientFrame & { req: string }) => Promise<ReplyFrame>;
  nextReq: () => string;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

/** Error codes after which nothing more may be posted for this lease. */
const LEASE_GONE = new Set(["stale_fence", "not_holder", "lease_expired", "lease_lost"]);

export class MessageRunner {
  private queue: MessageFrame[] = [];
  private current: RunHandle | null = null;
  private busy = false;
  /** Bumped by stop(): a loop iteration that sees a different epoch abandons its message. */
  private epoch = 0;
  private readonly replied = new Set<number>();
  private checkpointText = "null";

  constructor(private readonly deps: MessageRunnerDeps) {}

  /** The latest checkpoint, as handed over with `held:true` (null when there is none). */
  setCheckpoint(value: unknown): void {
    this.checkpointText = JSON.stringify(value ?? null);
  }

  get queued(): number {
    return this.queue.length + (this.busy ? 1 : 0);
  }

  enqueue(msg: MessageFrame): void {
    if (this.queue.some((m) => m.id === msg.id)) return;
    this.queue.push(msg);
    void this.drain();
  }

  /** Kills the running command (SIGTERM, SIGKILL after the grace) and forgets the queue. */
  async stop(): Promise<void> {
    this.epoch += 1;
    this.queue = [];
    const run = this.current;
    if (run) await run.kill(this.deps.graceMs);
  }

  /** Removes the checkpoint file handed to commands. */
  dispose(): void {
    rmSync(this.deps.checkpointPath, { force: true });
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (let msg = this.queue.shift(); msg; msg = this.queue.shift()) {
        await this.handle(msg, this.epoch);
      }
    } finally {
      this.busy = false;
    }
  }

  private async handle(msg: MessageFrame, epoch: number): Promise<void> {
    const { deps } = this;
    if (!deps.mayAct()) return;
    const fence = deps.fence();
    if (this.replied.has(msg.id)) {
      await this.post({ type: "ack", id: msg.id, fence, req: deps.nextReq() }, epoch);
      return;
    }
    writeFileSync(deps.checkpointPath, this.checkpointText);
    const run = startRun({
      command: deps.command,
      args: deps.args,
      stdin: msg.text,
      env: {
        BATON_AGENT: deps.agent,
        BATON_MESSAGE_ID: String(msg.id),
        BATON_FENCE: String(fence),
        BATON_ATTEMPT: String(msg.attempt),
        BATON_CHECKPOINT: deps.checkpointPath,
      },
    });
    this.current = run;
    const outcome = await run.done;
    this.current = null;
    if (outcome.killed || epoch !== this.epoch) return;
    if (outcome.spawnError) deps.log(`command could not start: ${outcome.spawnError}`, { id: msg.id });
    else if (outcome.code !== 0) deps.log(`command exited with ${outcome.code ?? outcome.signal} for message ${msg.id}`, { id: msg.id });

    const checkpoint = this.readCheckpoint();
    if (checkpoint !== null) {
      const ok = await this.post({ type: "checkpoint", fence, value: checkpoint.value, req: deps.nextReq() }, epoch);
      if (!ok) return;
      this.checkpointText = checkpoint.text;
    }
    const text = truncateUtf8(outcome.stdout, LIMITS.replyTextBytes);
    if (text.length < outcome.stdout.length) deps.log(`reply to message ${msg.id} truncated to ${LIMITS.replyTextBytes} bytes`);
    if (!(await this.post({ type: "reply", id: msg.id, fence, key: `${msg.id}:reply`, text, req: deps.nextReq() }, epoch))) return;
    // The coordinator acknowledges a message with its reply; no separate ack is needed.
    this.replied.add(msg.id);
    deps.log(`ran message ${msg.id} (attempt ${msg.attempt}, fence ${fence})`, { id: msg.id, fence });
  }

  /** The checkpoint file as rewritten by the command, or null when unchanged or not valid JSON. */
  private readCheckpoint(): { text: string; value: unknown } | null {
    let text: string;
    try {
      text = readFileSync(this.deps.checkpointPath, "utf8");
    } catch {
      return null;
    }
    if (text === this.checkpointText) return null;
    try {
      return { text, value: JSON.parse(text) as unknown };
    } catch {
      this.deps.log("checkpoint file is not valid JSON; not stored");
      return null;
    }
  }

  /** Posts one frame if the lease still allows it; false when it was not posted or was refused. */
  private async post(frame: ClientFrame & { req: string }, epoch: number): Promise<boolean> {
    if (epoch !== this.epoch || !this.deps.mayAct()) return false;
    let answer: ReplyFrame;
    try {
      answer = await this.deps.request(frame);
    } catch (err) {
      this.deps.log(`${frame.type} not confirmed: ${(err as Error).message}`);
      return false;
    }
    if (answer.type === "error") {
      this.deps.log(`${frame.type} refused: ${answer.code}: ${answer.message}`, { code: answer.code });
      if (LEASE_GONE.has(answer.code)) this.epoch += 1;
      return false;
    }
    return true;
  }
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.byteLength <= maxBytes) return text;
  return bytes.subarray(0, maxBytes).toString("utf8").replace(/\uFFFD$/, "");
}
