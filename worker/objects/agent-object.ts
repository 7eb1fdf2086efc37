// One Durable Object per (account, agent): holds the agent's serve connections, and for every
// event (a frame, a close, an alarm, a call from the Worker) reads one snapshot, asks
// ../rules/agent-plan.ts for the plan and applies it. All state lives in SQLite or in socket
// attachments (SocketObject), so the object can be evicted and rebuilt at any moment. The HTTP API
// is answered in the Worker (../agents.ts), which calls the typed methods below; `fetch` is only
// the serve socket upgrade.
import { AgentStore, type AgentIdentity } from "./agent-store.ts";
import { isStale, provenAlive } from "../rules/election.ts";
import { planAgent, runnerOf, type AgentEvent, type AgentPlan, type AgentSnapshot } from "../rules/agent-plan.ts";
import { holdsLease } from "../rules/fencing.ts";
import { isOpen, type MessagePolicy } from "../rules/message-lease.ts";
import { FrameRateLimit } from "../rules/frame-rate-limit.ts";
import { AgentControls, type ControlOutcome, type ControlRoute } from "./agent-controls.ts";
import { closeQuietly, newConnState, send, serveAttachment, writeConn, type ConnState } from "./connections.ts";
import { CLOSE_CODES, errorFrame, errorResponse, LIMITS, MACHINE_LABEL, parseClientFrame, type ClientFrame, type Question } from "../wire/protocol.ts";
import type { Env } from "../env.ts";
import { buildPresence, PREVIEW_CHARS } from "../rules/presence.ts";
import type { Presence } from "../wire/server-frames.ts";
import { DirectoryReporter, REPORT_RETRY_MS } from "./directory-reporter.ts";
import { agentOfObject } from "./names.ts";
import { SocketObject, type Socket, type SocketKind } from "./socket-object.ts";
import { AgentMetricsKeeper } from "./metrics-agent.ts";
import { WorkDesk } from "./work-desk.ts";
import { randomHex128 } from "./secrets.ts";
import { leaseOf, type StoredMessage } from "./message-store.ts";
import { decideOnBusy } from "../rules/on-busy.ts";
import type { Answerer, BlobReserve, HeartbeatAnswer, MessageLeases, Refusal, ResumeOutcome, StepAnswer } from "./message-leases.ts";
import type { Answer } from "../rules/message-lease.ts";
import { accountTag, idempotencyKey, legacyIdempotencyKey, type StepWrite, type UnknownOutcome } from "../rules/step-journal.ts";
import { escalationEvent } from "../rules/webhooks.ts";
import { webhookCounts } from "../rules/webhook-exposure.ts";
import type { MessageView, StepView } from "../wire/http-responses.ts";
import { AgentWebhooks } from "./agent-webhooks.ts";
import type { OutboxEvent } from "./webhook-outbox.ts";
import type { SignedRequest } from "./webhook-delivery.ts";
import { directoryObjectName } from "./names.ts";
import type { WebhookConfigBody, WebhookView } from "../wire/webhooks.ts";

/** R2 deletes per sweep (R2 takes up to 1000 keys per call). */
const BLOB_SWEEP_BATCH = 1000;
/** How long after a change its presence report is built (presenceChanged). */
const REPORT_DELAY_MS = 10;

const SERVE: SocketKind<ConnState> = {
  tag: "serve",
  schema: serveAttachment,
  max: LIMITS.connectionsPerAgent,
  limitMessage: `at most ${LIMITS.connectionsPerAgent} connections per agent`,
};

/** A live connection with its proven heartbeat, as one snapshot saw it. */
interface LiveConn extends Socket<ConnState> {
  heartbeat: number;
}

export type PostResult =
  | { status: 201 | 200; replayed: boolean; view: MessageView | { id: number; pruned: true } }
  /** on_busy reject while the group is busy: nothing was stored. */
  | { status: 409; code: "busy"; message: string; holder: number };

export type ResumeAnswer = { ok: true; view: MessageView } | Extract<ResumeOutcome, { ok: false }>;
/** A cancel's answer: the message as it is now (`already`: an earlier cancel stands), or why not. */
export type CancelAnswer =
  | { ok: true; already: boolean; view: MessageView }
  | { ok: false; status: 404 | 409; code: "not_found" | "message_finished"; message: string };

export class AgentCoordinator extends SocketObject<ConnState> {
  protected readonly kind = SERVE;
  private readonly store: AgentStore;
  private readonly rate = new FrameRateLimit(LIMITS.framesPerSecond, LIMITS.frameCharsPerSecond);
  private readonly desk: WorkDesk;
  private readonly metrics: AgentMetricsKeeper;
  private readonly controls: AgentControls;
  /** Webhook configuration, outbox and delivery (agent-webhooks.ts). */
  private readonly webhooks: AgentWebhooks;
  /** Remembers (in SQLite) what was last reported to the directory, so a rebuilt object does not repeat it. */
  private readonly directoryReporter: DirectoryReporter;
  /** The alarm this instance last set (null: none, or unknown after a restart), so a scan is not re-set on every frame. */
  private alarmAt: number | null = null;
  /** A report to the directory failed: the alarm tries again then (in memory: after an eviction the directory's own lease tells the truth). */
  private reportRetryAt: number | null = null;
  /** A presence report is waiting for its delay (presenceChanged). */
  private reportQueued = false;
  /** Who this object serves: its name, stored at first contact, since an alarm wakes it without one. */
  private readonly identity: AgentIdentity | null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new AgentStore(ctx.storage.sql);
    this.identity = this.store.identity(agentOfObject(ctx.id));
    this.controls = new AgentControls(ctx.storage.sql, this.config.preference);
    this.desk = new WorkDesk(ctx.storage.sql, `agents/${ctx.id.toString()}`);
    this.metrics = new AgentMetricsKeeper(ctx.storage.sql);
    this.directoryReporter = new DirectoryReporter(ctx.storage.sql, this.config.heartbeatTtlMs, this.clock);
    this.webhooks = new AgentWebhooks(ctx.storage.sql, () => this.identity && env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(this.identity.account))));
    // The one place message status changes become events: every lease save that moves a status.
    this.desk.messages.onStatusChange = (before, after) => {
      const now = this.now();
      this.webhooks.messageChanged(before, after, now);
      // An ended message commits nothing more: its uncommitted uploads go now (the acknowledgement does the same in MessageLeases).
      if (!isOpen(after) && this.desk.blobs.discardUnkept(after.id, now) > 0) void this.sweepBlobs();
    };
    this.webhooks.onAccountConfig = () => this.step(this.now(), { type: "alarm" });
    this.desk.onRefused = (code) => {
      this.metrics.refused(code, this.now());
      this.presenceChanged();
    };
    this.directoryReporter.onFailure = () => {
      this.reportRetryAt = this.now() + REPORT_RETRY_MS;
      this.step(this.now(), { type: "alarm" });
    };
    // After a restart (deploy, crash) the stored lease may name a holder whose socket died with the
    // old process: keep the lease for that runner's return (restart grace), and re-elect from the
    // sockets that are really here before anything else runs.
    void ctx.blockConcurrencyWhile(async () => {
      if (this.identity) {
        const tag = await accountTag(this.identity.account);
        const agent = this.identity.agent;
        this.desk.leases.effectKey = (id, name, legacy) => legacy ? legacyIdempotencyKey(agent, id, name) : idempotencyKey(tag, agent, id, name);
      }
      const now = this.now();
      if (ctx.getWebSockets().length === 0) this.controls.noteRestart(this.store.lease(), now);
      this.step(now, { type: "start" });
      this.webhooks.resume(now);
    });
  }

  /** The serve socket upgrade, forwarded by the Worker. Everything else is a method call. */
  async fetch(request: Request): Promise<Response> {
    this.store.countWake();
    const now = this.now();
    return this.acceptSocket(request, () => {
      const machine = new URL(request.url).searchParams.get("machine") || "unknown";
      if (machine.length > LIMITS.machineLabelChars || !MACHINE_LABEL.test(machine)) {
        return errorResponse(400, "bad_request", `machine labels are 1-${LIMITS.machineLabelChars} printable characters`);
      }
      return newConnState(machine, now);
    }, ({ ws }) => {
      send(ws, { type: "welcome", agent: this.agentName(), heartbeat_ttl_ms: this.config.heartbeatTtlMs, limits: LIMITS });
      this.step(now, { type: "work" });
    });
  }

  // ---- Methods the Worker calls (../agents.ts); input is validated there. ----

  presence(): Presence {
    this.store.countWake();
    return this.presenceOf(this.liveConns(this.now()));
  }

  /**
   * Stores a message and hands it out. With an idempotency key, a retry within the key's retention
   * returns the message the first post created (200, replayed) and stores nothing.
   */
  post(text: string, opts: { group?: string; runTimeoutMs?: number; key: string | null; by: Answerer; question?: Question; deadlineSeconds?: number; traceparent?: string }): PostResult {
    this.store.countWake();
    const now = this.now();
    const { messages } = this.desk;
    const earlier = opts.key === null ? null : messages.postedWith(opts.key, now, this.config.retention);
    if (earlier !== null) {
      const first = messages.get(earlier);
      return { status: 200, replayed: true, view: first ? this.desk.view(first) : { id: earlier, pruned: true } };
    }
    // While its group is busy, the agent's on_busy policy decides (rules/on-busy.ts); queue, the default, reads nothing.
    // A question for a person alone is never run, so it is never busy nor makes anything busy.
    const forPerson = opts.question !== undefined;
    const policy = this.desk.leases.policies.policy();
    const group = opts.group ?? null;
    const busy = forPerson || policy.onBusy === "queue" ? null : decideOnBusy(policy, messages.openInGroup(group), group, now);
    if (busy?.action === "refuse") return { status: 409, code: busy.code, message: busy.message, holder: busy.holder };
    const stored = messages.add(text, now, { group: opts.group, runTimeoutMs: opts.runTimeoutMs, holdUntil: busy?.holdUntil ?? null, first: busy?.first ?? false, forPerson, traceparent: opts.traceparent });
    if (opts.key !== null) messages.rememberPost(opts.key, stored.id, now);
    // Every post bounds the history, questions for a person included.
    if (messages.prune(stored.id, now, this.config.retention) > 0) {
      this.desk.blobs.collectOrphans(now);
      void this.sweepBlobs();
    }
    if (opts.question !== undefined) {
      // Nobody runs it, so no connection is pushed it now (a sync replays it as history): the page, the CLI and the webhooks ask the person.
      this.desk.leases.askPerson(stored.id, opts.question, opts.deadlineSeconds ?? null, now);
      this.step(now, { type: "work" });
      return { status: 201, replayed: false, view: this.desk.view(messages.get(stored.id)!) };
    }
    const acts = busy !== null && (busy.interrupt.length > 0 || busy.supersede.length > 0);
    const { conns, plan } = this.step(now, acts ? { type: "busy", newId: stored.id, by: opts.by, interrupt: busy.interrupt, supersede: busy.supersede } : { type: "work" });
    // Every other connection sees the message too, without being asked to run it.
    const runner = plan.handOuts.find((h) => h.lease.id === stored.id)?.to;
    conns.forEach((c, i) => {
      if (i === runner) return;
      this.desk.push(c, stored, false);
      writeConn(c.ws, c.state);
    });
    return { status: 201, replayed: false, view: this.desk.view(messages.get(stored.id)!) };
  }

  messagePage(after: number, limit: number): { agent: string; messages: MessageView[]; cursor: number } {
    this.store.countWake();
    const messages = this.desk.views(this.desk.messages.after(after, limit));
    return { agent: this.agentName(), messages, cursor: messages.at(-1)?.id ?? after };
  }

  message(id: number): MessageView | null {
    this.store.countWake();
    const m = this.desk.messages.get(id);
    return m ? this.desk.view(m) : null;
  }

  /** One step of a message with its value, and the idempotency key an effect of that name hands out. */
  stepOf(id: number, name: string): StepView | null {
    this.store.countWake();
    const record = this.desk.steps.get(id, name);
    if (!record) return null;
    return {
      id, name, kind: record.kind, status: record.status, attempt: record.attempt, on_unknown: record.onUnknown, blob: record.blob,
      value: record.value === null ? null : (JSON.parse(record.value) as unknown), idempotency_key: this.desk.leases.effectKeyOf(id, name) ?? "",
    };
  }

  /** A step write over HTTP (`baton step`, any language): the run key stands for the connection. */
  recordStep(id: number, token: number, runKey: string, write: StepWrite): StepAnswer {
    this.store.countWake();
    const now = this.now();
    const answer = this.desk.leases.recordStep(id, token, { runKey }, write, now);
    if (!answer.ok && answer.expired) this.step(now, { type: "work" });
    return answer;
  }

  /** Before an upload: room for `bytes` under the running attempt's token, and the R2 key to store it under. */
  reserveBlob(id: number, token: number, runKey: string, bytes: number): BlobReserve {
    this.store.countWake();
    const now = this.now();
    const answer = this.desk.leases.reserveBlob(id, token, { runKey }, bytes, now);
    if (!answer.ok && answer.expired) this.step(now, { type: "work" });
    // Uploads of earlier attempts were dropped to make room: their R2 objects go now.
    void this.sweepBlobs();
    return answer;
  }

  /** After an upload (`stored`: R2 took it): staged under its token if the run still holds the message, else queued for deletion. */
  stageBlob(id: number, token: number, runKey: string, blob: string, stored: boolean): Refusal | { ok: true } {
    this.store.countWake();
    const now = this.now();
    const answer = this.desk.leases.stageBlob(id, token, { runKey }, blob, stored, now);
    if (!answer.ok) void this.sweepBlobs();
    return answer;
  }

  /** The R2 key of a message's blob, for reading it; null when there is none. */
  blobKey(id: number, blob: string): string | null {
    this.store.countWake();
    return this.desk.leases.blobKey(id, blob);
  }

  heartbeatRun(id: number, token: number, runKey: string, details: unknown): HeartbeatAnswer {
    this.store.countWake();
    const now = this.now();
    const answer = this.desk.leases.heartbeat(id, token, { runKey }, details, now);
    if (!answer.ok && answer.expired) this.step(now, { type: "work" });
    return answer;
  }

  /** Pause, unpause, drain, undrain: stored, then applied by one plan (which may move the lease at its safe point). */
  control(route: ControlRoute, body: unknown): ControlOutcome & { agent: string; report: ReturnType<AgentControls["report"]> } {
    this.store.countWake();
    const now = this.now();
    const outcome = this.controls.apply(route, body, this.store.lease().holderMachine, now);
    if (outcome.ok && outcome.changed) this.step(now, { type: "work" });
    return { ...outcome, agent: this.agentName(), report: this.controls.report(now) };
  }

  policy(): MessagePolicy {
    this.store.countWake();
    return this.desk.leases.policies.policy();
  }

  setPolicy(update: Partial<MessagePolicy>): MessagePolicy {
    this.store.countWake();
    const policy = this.desk.leases.setPolicy(update);
    this.step(this.now(), { type: "work" });
    return policy;
  }

  resume(id: number, input: string | null, outcome: UnknownOutcome | null, by: Answerer): ResumeAnswer {
    return this.decided(this.now(), (now) => this.desk.leases.resume(id, input, outcome, by, now), id);
  }

  /** A person's answer to a parked message: approve, reject, or one of its question's choices. */
  answer(id: number, reply: Answer, by: Answerer): ResumeAnswer {
    return this.decided(this.now(), (now) => this.desk.leases.answer(id, reply, by, now), id);
  }

  /** A failed message queued again, with a fresh set of attempts. */
  retry(id: number, by: Answerer): ResumeAnswer {
    return this.decided(this.now(), (now) => this.desk.leases.retry(id, by, now), id);
  }

  /**
   * Cancels a message wherever it is (rules/message-cancel.ts), as one event of the plan: queued
   * or parked it ends at once; running, its runner is told to stop and its token refuses every
   * later write, and the slot it held takes the next message in the same plan.
   */
  cancel(id: number, reason: string | null, by: Answerer): CancelAnswer {
    this.store.countWake();
    const stored = this.desk.messages.get(id);
    if (!stored) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
    const verdict = this.step(this.now(), { type: "cancel", target: leaseOf(stored), by, reason }).plan.cancel!.verdict;
    if (verdict.outcome === "refused") return { ok: false, status: 409, code: verdict.code, message: verdict.message };
    return { ok: true, already: verdict.outcome === "already", view: this.desk.view(this.desk.messages.get(id)!) };
  }

  /** A served command's question (`baton ask`), stored under the run's token for the park that follows. */
  ask(id: number, token: number, runKey: string, question: Question, deadlineSeconds: number | null): ReturnType<MessageLeases["ask"]> {
    this.store.countWake();
    const now = this.now();
    const answer = this.desk.leases.ask(id, token, { runKey }, question, deadlineSeconds, now);
    if (!answer.ok && answer.expired) this.step(now, { type: "work" });
    return answer;
  }

  /** A person's decision, then the plan that follows it: an answered message is handed out at once, one whose deadline passed is settled by it. */
  private decided(now: number, decide: (now: number) => ResumeOutcome, id: number): ResumeAnswer {
    this.store.countWake();
    const result = decide(now);
    this.step(now, { type: "work" });
    if (!result.ok) return result;
    return { ok: true, view: this.desk.view(this.desk.messages.get(id)!) };
  }

  /** The agent's own webhook (never its secret); null when it has none. */
  webhook(): WebhookView | null {
    this.store.countWake();
    return this.webhooks.view(this.agentName(), this.now());
  }

  /** A signed `webhook.test` event for the agent's own webhook (null: it has none); the Worker sends it, so nothing here waits on the receiver. */
  webhookTest(): Promise<SignedRequest | null> {
    this.store.countWake();
    return this.webhooks.testRequest({ account: this.identity?.account ?? "unknown", agent: this.agentName() }, this.now());
  }

  /** Sets the agent's own webhook; events then go to it instead of the account's. `origin`: where event links point. */
  setWebhook(body: WebhookConfigBody, origin: string): WebhookView {
    this.store.countWake();
    const now = this.now();
    const view = this.webhooks.set(body, origin, this.agentName(), now);
    this.step(now, { type: "work" });
    return view;
  }

  /** Removes the agent's own webhook (the account's applies again); false when it had none. */
  deleteWebhook(): boolean {
    this.store.countWake();
    const deleted = this.webhooks.delete();
    if (deleted) this.step(this.now(), { type: "work" });
    return deleted;
  }

  // ---- Socket events ----

  /**
   * Liveness: a frame the object processes proves its sender alive at the object's own clock, and
   * so does an auto-answered ping, within the rule of provenAlive (a holder's ping after its
   * deadline never counts). A frame from a connection already past its TTL is refused, and the
   * lease moves before anything else happens.
   */
  protected async onMessage({ ws, state }: Socket<ConnState>, raw: string | ArrayBuffer): Promise<void> {
    const now = this.now();
    // A frame over the size cap is refused unread, so it is charged no more than the cap.
    const chars = Math.min(typeof raw === "string" ? raw.length : raw.byteLength, LIMITS.frameBytes);
    if (!this.rate.allow(ws, now, chars)) {
      send(ws, errorFrame("rate_limited", `at most ${LIMITS.framesPerSecond} frames and ${LIMITS.frameCharsPerSecond} characters per second`));
      return;
    }
    this.store.countWake();
    if (isStale({ lastHeartbeat: this.proven(ws, state) }, now, this.config.heartbeatTtlMs)) {
      send(ws, errorFrame("lease_expired", "no heartbeat within the TTL; reconnect and claim again"));
      this.step(now, { type: "stale_frame" });
      return;
    }
    state.lastSeen = now;
    writeConn(ws, state);
    const parsed = parseClientFrame(raw);
    if (!parsed.ok) {
      send(ws, errorFrame(parsed.code, parsed.message, parsed.req));
      return;
    }
    this.handle({ ws, state }, parsed.frame, now);
  }

  private handle(socket: Socket<ConnState>, frame: ClientFrame, now: number): void {
    switch (frame.type) {
      case "ping":
        send(socket.ws, { type: "pong" });
        return;
      case "hello":
        this.step(now, (from) => ({ type: "hello", from, machine: frame.machine, slots: frame.concurrency }), socket.ws);
        return;
      case "serve_lease": {
        if (frame.op === "claim") {
          this.step(now, (from) => ({ type: "claim", from, priority: frame.priority, runnerId: frame.runner_id, slots: frame.concurrency }), socket.ws);
          return;
        }
        const { plan } = this.step(now, (from) => ({ type: "release", from }), socket.ws);
        send(socket.ws, { type: "result", op: "release", req: frame.req, released: plan.released ?? false, fence: plan.lease.fence });
        return;
      }
      case "sync": {
        const cursor = socket.state.cursor;
        this.desk.sync(socket, frame.after, now, frame.req);
        if (socket.state.cursor !== cursor) this.presenceChanged();
        return;
      }
      case "checkpoint":
      case "ack":
      case "reply":
      case "fail":
      case "park":
      case "step":
      case "heartbeat":
        // A checkpoint, step or heartbeat moves nothing; any other write may free a slot or reach the holder's safe point.
        if (this.desk.write(socket, frame, now, this.store.lease())) this.step(now, { type: "work" });
        // A new message checkpoint drops the blob of the one it replaced, and an acknowledgement the
        // uploads it did not commit: deleted now, not at the next alarm.
        if (frame.type === "checkpoint" || frame.type === "park" || frame.type === "ack" || frame.type === "reply") void this.sweepBlobs();
        return;
    }
  }

  protected onClose(): void {
    this.store.countWake();
    this.step(this.now(), { type: "closed" });
  }

  async alarm(): Promise<void> {
    this.alarmAt = null;
    this.store.countWake();
    const now = this.now();
    // Confirmations first: the plan below then schedules the next one.
    if (this.reportRetryAt !== null && now >= this.reportRetryAt) {
      this.reportRetryAt = null;
      this.presenceChanged();
    }
    if (this.identity) {
      this.directoryReporter.confirmIfDue(this.ctx, this.env.DIRECTORY, this.identity.account, this.identity.agent, now, () => this.presenceChanged());
    }
    this.webhooks.checkNoHolder(now);
    // Claimed before the plan, so the alarm it sets is for what stays due, not for what is being sent.
    const due = this.identity ? this.webhooks.claimDue(now) : [];
    this.step(now, { type: "alarm" });
    this.store.saveWakes();
    // Started, never awaited: the next alarm (a takeover, a run timeout, a park deadline) must not
    // wait for a receiver; the answers come back as their own event.
    if (due.length > 0 && this.identity) this.ctx.waitUntil(this.sendWebhooks(due, this.identity));
    await this.sweepBlobs();
  }

  /** Deliveries the alarm started: their answers recorded, then a plan for what is due next. */
  private async sendWebhooks(due: OutboxEvent[], who: AgentIdentity): Promise<void> {
    try {
      await this.webhooks.deliver(due, who);
    } catch (err) {
      // Not recorded: the events stay claimed until WEBHOOK.inFlightMs passes, then they are sent again.
      console.error(`webhook delivery failed: ${String(err)}`);
    }
    this.step(this.now(), { type: "alarm" });
    this.presenceChanged();
  }

  /**
   * Deletes the R2 objects of blobs no message keeps (pruned messages, refused uploads); a delete
   * that fails stays queued and is tried on the next sweep.
   */
  private async sweepBlobs(): Promise<void> {
    const bucket = this.env.BLOBS;
    const keys = this.desk.blobs.garbage(BLOB_SWEEP_BATCH);
    if (!bucket || keys.length === 0) return;
    try {
      await bucket.delete(keys);
      this.desk.blobs.forgetGarbage(keys);
    } catch {
      // R2 unavailable now: the keys stay in blob_garbage
    }
  }

  // ---- Snapshot, plan, apply ----

  /**
   * The connection's last proof of life (provenAlive): its last frame, or its latest auto ping
   * unless that came after a holder's deadline. Read-only; the plan folds a holder's proof in.
   */
  private proven(ws: WebSocket, state: ConnState): number {
    const holder = holdsLease(state, this.store.lease());
    return provenAlive(state.lastSeen, this.lastAutoPing(ws), holder, this.config.heartbeatTtlMs);
  }

  private liveConns(_now: number): LiveConn[] {
    return this.sockets().map((s) => ({ ...s, heartbeat: this.proven(s.ws, s.state) }));
  }

  private snapshot(now: number, conns: LiveConn[]): AgentSnapshot {
    const { messages, leases } = this.desk;
    return {
      now,
      ttlMs: this.config.heartbeatTtlMs,
      scanMs: this.config.presenceScanMs,
      lease: this.store.lease(),
      conns: conns.map((c) => ({ conn: c.state, heartbeat: c.heartbeat })),
      controls: this.controls.snapshot(now),
      work: { policy: leases.policies.policy(), open: messages.openLeases(now), parkDeadline: messages.parkDeadline(now) },
      claimCounter: this.store.claimCounter(),
      tokenCounter: leases.policies.tokenCounter(),
      ownDeadlines: [this.directoryReporter.nextConfirmation(), this.reportRetryAt, this.webhooks.dueAt()],
      alarmAt: this.alarmAt,
    };
  }

  /**
   * One event: a snapshot, the plan for it, and the plan applied. An event about one connection is
   * made from its index in the snapshot (`sender`). A socket that closed is no longer among the
   * live ones (SocketObject.sockets).
   */
  private step(
    now: number, event: AgentEvent | ((from: number) => AgentEvent), sender?: WebSocket,
  ): { conns: LiveConn[]; plan: AgentPlan } {
    const conns = this.liveConns(now);
    const from = conns.findIndex((c) => c.ws === sender);
    // A sender that is no longer a live connection (it is closing) has nothing of its own to change.
    const decided = typeof event !== "function" ? event : from < 0 ? ({ type: "work" } as const) : event(from);
    const plan = planAgent(this.snapshot(now, conns), decided);
    const [enqueued, webhookDue] = [this.webhooks.enqueued, this.webhooks.dueAt()];
    this.apply(plan, conns, now);
    // Events made while applying (a message taken back and failed), or an outage it began (the
    // agent.no_holder deadline), were not in the snapshot: plan the alarm for them.
    if (this.webhooks.enqueued !== enqueued || this.webhooks.dueAt() !== webhookDue) this.step(now, { type: "alarm" });
    return { conns, plan };
  }

  /** Writes before frames: the output gate holds every frame until the writes it follows are durable. */
  private apply(plan: AgentPlan, conns: LiveConn[], now: number): void {
    const { messages, leases } = this.desk;
    if (plan.leaseChanged) this.store.saveLease(plan.lease, plan.transition);
    if (plan.transition) {
      this.metrics.transition(plan.transition, plan.holderLostAt);
      this.webhooks.holderChanged(plan.transition, plan.holderLostAt, now);
      this.controls.noteHolder(plan.holderRunner, plan.transition.toClaim !== null);
    }
    this.store.saveClaimCounter(plan.claimCounter);
    leases.policies.saveTokenCounter(plan.tokenCounter);
    /** Messages the plan queued that failed instead as they were stored: not handed out. */
    const failedInstead = new Set<number>();
    for (const t of plan.takeBacks) {
      // The reason first, so a message.failed event made by the save carries it.
      if (t.error !== null) messages.recordFailure(t.lease.id, t.error);
      if (t.deadline === "approve" || t.deadline === "reject") {
        if (!leases.answeredByDeadline(t.lease, t.deadline, now)) failedInstead.add(t.lease.id);
      } else {
        const saved = messages.saveLease(t.lease);
        // Still parked, so no status change tells anyone: the escalation is its own event.
        if (t.deadline === "escalate") this.webhooks.enqueue(escalationEvent(saved), now);
      }
    }
    for (const c of plan.cancels) if (c.verdict.outcome === "cancelled") leases.saveCancel(c.verdict.message, { at: now, ...c.by, reason: c.reason });
    for (const s of plan.superseded) leases.saveSuperseded(s.lease, s.by);
    const changed = new Set<number>(plan.patches.keys());
    for (const [i, p] of plan.patches) Object.assign(conns[i]!.state, p);
    for (const i of plan.close) closeQuietly(conns[i]!.ws, CLOSE_CODES.heartbeatTimeout, "heartbeat timeout");
    for (const t of plan.takeBacks) {
      if (t.revoke) send(conns[t.revoke.to]!.ws, { type: "revoked", id: t.lease.id, token: t.revoke.token, reason: t.revoke.reason });
    }
    for (const { stop, reason, by } of plan.cancels) if (stop) send(conns[stop.to]!.ws, { type: "cancel", id: stop.id, token: stop.token, reason, by: by.token });
    const checkpoint = plan.tells.some((t) => t.held) ? messages.checkpoint() : null;
    for (const t of plan.tells) {
      send(conns[t.to]!.ws, {
        type: "serve_lease", held: t.held, fence: t.fence, claim_seq: t.claimSeq, position: t.position, ttl_ms: this.config.heartbeatTtlMs,
        holder: t.holder && { claim_seq: t.holder.claimSeq, machine: t.holder.machine, since: t.holder.since },
        ...(t.held && checkpoint ? { checkpoint: checkpoint.value, checkpoint_fence: checkpoint.fence } : {}),
      });
    }
    for (const h of plan.handOuts) {
      if (failedInstead.has(h.lease.id)) continue;
      const runner = conns[h.to]!;
      const stored: StoredMessage = messages.saveLease(h.lease, { fence: plan.lease.fence, machine: runner.state.machine, runKey: randomHex128() });
      this.desk.push(runner, stored, true);
      changed.add(h.to);
    }
    for (const i of changed) writeConn(conns[i]!.ws, conns[i]!.state);
    if (plan.alarm === "delete") {
      void this.ctx.storage.deleteAlarm();
      this.alarmAt = null;
    } else if (plan.alarm) {
      this.alarmAt = plan.alarm.set;
      void this.ctx.storage.setAlarm(this.clock.alarmAt(plan.alarm.set));
    }
    if (plan.presenceChanged) this.presenceChanged();
  }

  /**
   * Called only where presence may have changed. The report is built REPORT_DELAY_MS later, from
   * the state then: the frames of the event that changed it leave first (a report built at once,
   * and the directory's commit it causes, held them back on the same thread), and the changes of
   * that span, such as a connection's open and its claim, share one report. The reporter still
   * sends only what really changed.
   */
  private presenceChanged(): void {
    if (!this.identity || this.reportQueued) return;
    this.reportQueued = true;
    this.ctx.waitUntil(new Promise<void>((done) => setTimeout(() => {
      this.reportQueued = false;
      try {
        this.reportPresence();
      } catch (err) {
        // Not sent: the alarm tries again after REPORT_RETRY_MS, as after a failed RPC.
        console.error(`presence report failed: ${String(err)}`);
        this.directoryReporter.onFailure();
      } finally {
        done();
      }
    }, REPORT_DELAY_MS)));
  }

  private reportPresence(): void {
    if (!this.identity) return;
    const now = this.now();
    const presence = this.presenceOf(this.liveConns(now), now);
    const metrics = this.metrics.changed(presence, now);
    // The directory shows every token of the account (GET /agents, dashboards): webhook counts only.
    const listed = { ...presence, webhook: presence.webhook && webhookCounts(presence.webhook) };
    this.directoryReporter.report(this.ctx, this.env.DIRECTORY, this.identity.account, listed, metrics, () => this.metrics.forget());
  }

  private agentName(): string {
    return this.identity?.agent ?? "unknown";
  }

  private presenceOf(conns: LiveConn[], now = this.now()): Presence {
    const machines = new Map(conns.map((c) => [runnerOf(c.state), c.state.machine]));
    return buildPresence({
      agent: this.agentName(),
      now,
      ttlMs: this.config.heartbeatTtlMs,
      lease: this.store.lease(),
      conns: conns.map((c) => ({ ...c.state, heartbeat: c.heartbeat })),
      transitions: this.store.recentTransitions(),
      recentMessages: this.desk.messages.recent(10, PREVIEW_CHARS),
      work: this.desk.leases.report(machines),
      controls: this.controls.report(now),
      wakes: this.store.wakes(),
      webhook: this.webhooks.report(),
    });
  }
}
