// One Durable Object per (account, agent): holds the agent's serve connections. Every input (a
// frame, an open or a close, an alarm, a call from the Worker) is one event: the object reads one
// snapshot, asks ../rules/agent-plan.ts for the plan and applies it (agent-apply.ts), which
// interprets the plan and decides nothing. All state lives in SQLite or in socket attachments
// (SocketObject), so the object can be evicted and rebuilt at any moment. The HTTP API is answered
// in the Worker (../agents.ts), which calls the one-line methods of agent-calls.ts; `fetch` is only
// the serve socket upgrade. Beside it: the event each frame makes (agent-frames.ts), the snapshot
// it reads (agent-snapshot.ts) and its reports to the directory (agent-presence.ts).
import { AgentStore, type AgentIdentity } from "./agent-store.ts";
import { isStale } from "../rules/election.ts";
import { planAgent, type AgentEvent, type AgentPlan } from "../rules/agent-plan.ts";
import { FrameRateLimit } from "../rules/frame-rate-limit.ts";
import { isReplyEvent, replyEffects, type ReplyEvent } from "../rules/plan/reply.ts";
import type { AgentControls } from "./agent-controls.ts";
import { newConnState, serveAttachment, writeConn, type ConnState } from "./connections.ts";
import { LIMITS, parseClientFrame } from "../wire/protocol.ts";
import type { Env } from "../env.ts";
import { PresenceReports } from "./agent-presence.ts";
import { agentOfObject } from "./names.ts";
import { SocketObject, type Socket, type SocketKind } from "./socket-object.ts";
import type { AgentMetricsKeeper } from "./metrics-agent.ts";
import type { WorkDesk } from "./work-desk.ts";
import { accountTag } from "../rules/step-journal.ts";
import type { AgentWebhooks } from "./agent-webhooks.ts";
import type { OutboxEvent } from "./webhook-outbox.ts";
import type { AgentInputs, Inputs, LiveConn, Outputs } from "./agent-inputs.ts";
import { applyEffects, applyPlan, type ApplyParts } from "./agent-apply.ts";
import { frameEvent, leavesBlobs } from "./agent-frames.ts";
import { heartbeatOf, readSnapshot, runKeysFor, type SnapshotParts } from "./agent-snapshot.ts";
import { AgentCalls } from "./agent-calls.ts";
import { OutputFollowers } from "./output-followers.ts";
import type { AgentSchedules } from "./agent-schedules.ts";
import { buildAgentParts } from "./agent-parts.ts";
import { fireDueSlots, type FireHost } from "./schedule-fire.ts";
import type { A2APushTargets } from "./a2a-push.ts";
import type { MessageView } from "../wire/http-responses.ts";

export type { CancelAnswer, PostResult, ResumeAnswer } from "./agent-inputs.ts";

const SERVE: SocketKind<ConnState> = {
  tag: "serve",
  schema: serveAttachment,
  max: LIMITS.connectionsPerAgent,
  limitMessage: `at most ${LIMITS.connectionsPerAgent} connections per agent`,
};

export class AgentCoordinator extends AgentCalls {
  protected readonly kind = SERVE;
  private readonly rate = new FrameRateLimit(LIMITS.framesPerSecond, LIMITS.frameCharsPerSecond);
  /** Presence reports, retries and confirmations to the directory (agent-presence.ts). */
  private readonly reports: PresenceReports;
  // What storage backs (agent-parts.ts), built again from storage after a rolled-back fire (build).
  private store!: AgentStore;
  private desk!: WorkDesk;
  private metrics!: AgentMetricsKeeper;
  private controls!: AgentControls;
  private webhooks!: AgentWebhooks;
  private parts!: SnapshotParts & ApplyParts;
  private inputs!: AgentInputs;
  private schedules!: AgentSchedules;
  /** The alarm this instance last set (null: none, or unknown after a restart), so a scan is not re-set on every frame. */
  private alarmAt: number | null = null;
  /** Who this object serves: its name, stored at first contact, since an alarm wakes it without one. */
  private readonly identity: AgentIdentity | null;
  /** Readers' follow calls waiting for a message's next output (output-followers.ts). */
  protected readonly followers = new OutputFollowers();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.identity = new AgentStore(ctx.storage.sql).identity(agentOfObject(ctx.id));
    this.build();
    this.reports = new PresenceReports(ctx.storage.sql, this.config.heartbeatTtlMs, this.clock, ctx, env.DIRECTORY, this.identity, {
      read: () => {
        const now = this.now();
        const presence = this.inputs.presenceOf(this.liveConns(), now);
        return { presence, metrics: this.metrics.changed(presence, now) };
      },
      forgetMetrics: () => this.metrics.forget(),
      failed: () => this.reportFailed(),
    });
    // After a restart (deploy, crash) the stored lease may name a holder whose socket died with the
    // old process: keep the lease for that runner's return (restart grace), and re-elect from the
    // sockets that are really here before anything else runs.
    void ctx.blockConcurrencyWhile(async () => {
      if (this.identity) this.desk.leases.knowKeys(await accountTag(this.identity.account), this.identity.agent);
      const now = this.now();
      if (ctx.getWebSockets().length === 0) this.controls.noteRestart(this.store.lease(), now);
      this.step(now, { type: "start" });
      this.fireSchedules(now);
      this.awaitAccountWebhook(this.webhooks.resume(now));
    });
  }

  /** The parts whose memory mirrors storage, built from storage (at start, and after a fire was rolled back). */
  private build(): void {
    const { ctx, env, config, clock, identity } = this;
    ({ store: this.store, controls: this.controls, desk: this.desk, metrics: this.metrics, webhooks: this.webhooks, parts: this.parts, schedules: this.schedules, inputs: this.inputs } =
      buildAgentParts({ ctx, env, config, clock, identity, now: () => this.now() }));
    this.alarmAt = null;
  }

  private readonly fireHost: FireHost = {
    ctx: this.ctx, schedules: () => this.schedules, outbound: () => this.parts.outbound,
    step: (now, event) => this.step(now, event), rebuild: () => this.build(),
  };

  /** The serve socket upgrade, forwarded by the Worker: the open is an event (`opened`: welcomed) once the socket is accepted. */
  async fetch(request: Request): Promise<Response> {
    this.store.countWake();
    const now = this.now();
    const opened = ({ state }: Socket<ConnState>) => void this.step(now, { type: "opened", from: state.id, agent: this.identity?.agent ?? "unknown" });
    return this.acceptSocket(request, (id) => newConnState(id, request, now), opened);
  }

  /**
   * One call of the Worker: counted as a wake, read at this object's clock, decided by its input
   * (agent-inputs.ts), which returns the plan event it makes; the answer is built after the plan.
   */
  protected run<K extends keyof Inputs>(input: Inputs[K] & { type: K }): Outputs[K] {
    this.store.countWake();
    const now = this.now();
    const decided = this.inputs.decide(input, now, this.liveConns());
    const plan = decided.event === null ? null : this.step(now, decided.event);
    if (decided.sweep) void this.sweepBlobs();
    const answer = decided.answer(plan);
    // An unpause lets slots kept for catch-up be posted now.
    if (input.type === "control") this.fireSchedules(now);
    return answer;
  }

  protected pushCall<T>(call: (p: A2APushTargets, view: (id: number) => MessageView | null, now: number) => T, changes: boolean): T {
    this.store.countWake();
    const now = this.now();
    const answer = call(this.webhooks.push, (id) => this.desk.viewOf(id), now);
    // A push queued at once (a target set on a task past submitted) is due now: the alarm is planned for it.
    if (changes) this.step(now, { type: "alarm" });
    else this.notePushTargetCount();
    return answer;
  }

  protected scheduleCall<T>(call: (s: AgentSchedules, now: number) => T, changes: boolean): T {
    this.store.countWake();
    const now = this.now();
    const count = this.schedules.count();
    const answer = call(this.schedules, now);
    // A change moves the next slot: the alarm is planned again for it.
    if (!this.fireSchedules(now) && changes) this.step(now, { type: "alarm" });
    this.noteScheduleCount(count);
    return answer;
  }

  /** The directory is told of a change of the agent's A2A push targets or schedules, for the account's limits (agent-presence.ts). */
  private notePushTargetCount(): void {
    const count = this.webhooks.push.takeCountChange();
    if (count !== null) this.reports.countChanged("push_targets", count);
  }

  private noteScheduleCount(before: number): void {
    const after = this.schedules.count();
    if (after !== before) this.reports.countChanged("schedules", after);
  }

  /** Posts the schedules' due slots (schedule-fire.ts says how a slot posts once or not at all). Ends with a plan of the alarm. */
  private fireSchedules(now: number): boolean {
    const account = this.identity?.account;
    const paused = this.controls.paused();
    const wake = this.schedules.nextWake(now, paused);
    if (account === undefined || wake === null || wake > now) return false;
    const count = this.schedules.count();
    fireDueSlots(this.fireHost, now, paused, account);
    this.step(now, { type: "alarm" });
    this.noteScheduleCount(count);
    // A fire changes the schedules' figures /metrics reports with presence.
    this.reports.changed();
    return true;
  }

  // ---- Socket events ----

  /**
   * Liveness: a frame the object processes proves its sender alive at the object's own clock, and
   * so does an auto-answered ping, within the rule of provenAlive (a holder's ping after its
   * deadline never counts). A frame from a connection already past its TTL is refused, and the
   * lease moves before anything else happens. A frame over the rate is refused before all that.
   */
  protected async onMessage({ ws, state }: Socket<ConnState>, raw: string | ArrayBuffer): Promise<void> {
    const now = this.now();
    // A frame over the size cap is refused unread, so it is charged no more than the cap.
    const chars = Math.min(typeof raw === "string" ? raw.length : raw.byteLength, LIMITS.frameBytes);
    if (!this.rate.allow(ws, now, chars)) return this.reply({ ws, state }, { type: "rate_limited", from: state.id }, now);
    this.store.countWake();
    if (isStale({ lastHeartbeat: this.proven({ ws, state }) }, now, this.config.heartbeatTtlMs)) {
      this.step(now, { type: "stale_frame", from: state.id });
      return;
    }
    state.lastSeen = now;
    writeConn(ws, state);
    const parsed = parseClientFrame(raw);
    const event = frameEvent(this.desk, ws, state, parsed, now);
    if (isReplyEvent(event)) this.reply({ ws, state }, event, now);
    else this.step(now, event);
    if (leavesBlobs(parsed)) void this.sweepBlobs();
  }

  /** A reply event (a ping, a refusal): its one frame effect, applied without a snapshot (rules/plan/reply.ts says why). */
  private reply(sender: Socket<ConnState>, event: ReplyEvent, now: number): void {
    applyEffects(this.parts, replyEffects(event), [sender], now);
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
    this.reports.wake(now);
    // Claimed before the plan, so the alarm it sets is for what stays due, not for what is being sent.
    const due = this.identity ? this.webhooks.claimDue(now) : [];
    this.step(now, { type: "alarm" });
    this.fireSchedules(now);
    this.store.saveWakes();
    // Started, never awaited: the next alarm (a takeover, a run timeout, a park deadline) must not
    // wait for a receiver; the answers come back as their own event.
    if (due.length > 0 && this.identity) this.ctx.waitUntil(this.sendWebhooks(due, this.identity));
    await this.sweepBlobs();
  }

  /** Deliveries the alarm started: their answers recorded, then a plan for what is due next (an event of its own). */
  private async sendWebhooks(due: OutboxEvent[], who: AgentIdentity): Promise<void> {
    try {
      await this.webhooks.deliver(due, who);
    } catch (err) {
      // Not recorded: the events stay claimed until WEBHOOK.inFlightMs passes, then they are sent again.
      console.error(`webhook delivery failed: ${String(err)}`);
    }
    this.step(this.now(), { type: "alarm" });
    this.reports.changed();
  }

  /** A fetch of the account's webhook that changed what is known is an event: the alarm is planned again for it. */
  private awaitAccountWebhook(fetching: Promise<boolean> | null): void {
    if (fetching) this.ctx.waitUntil(fetching.then((changed) => void (changed && this.step(this.now(), { type: "alarm" }))));
  }

  /** A report or confirmation to the directory failed: an event that plans the alarm for the retry. */
  private reportFailed(): void {
    const now = this.now();
    this.reports.failedAt(now);
    this.step(now, { type: "alarm" });
  }

  /** Deletes the R2 objects of blobs no message keeps (WorkDesk.sweep), never awaited by a decision. */
  private sweepBlobs(): Promise<void> {
    return this.desk.sweep(this.env.BLOBS);
  }

  // ---- Snapshot, plan, apply ----

  private proven({ ws, state }: Socket<ConnState>): number {
    return heartbeatOf(state, this.lastAutoPing(ws), this.store.lease(), this.config.heartbeatTtlMs);
  }

  private liveConns(): LiveConn[] {
    return this.sockets().map((s) => ({ ...s, heartbeat: this.proven(s) }));
  }

  /** One event: a snapshot, the plan for it, and the plan applied. An event names its sender by the connection's id. */
  private step(now: number, event: AgentEvent): AgentPlan {
    const conns = this.liveConns();
    const ownDeadlines = [...this.reports.deadlines(), this.schedules.nextWake(now, this.controls.paused())];
    const plan = planAgent(readSnapshot(this.parts, now, conns, { ownDeadlines, alarmAt: this.alarmAt, runKeys: runKeysFor(conns, event) }), event);
    const applied = applyPlan(this.parts, plan, conns, now);
    this.awaitAccountWebhook(applied.accountWebhook);
    if (plan.alarm === "delete") this.alarmAt = null;
    else if (plan.alarm) this.alarmAt = plan.alarm.set;
    if (applied.sweep) void this.sweepBlobs();
    if (plan.presenceChanged) this.reports.changed();
    for (const c of plan.changes) this.followers.wake(c.id);
    this.notePushTargetCount();
    return plan;
  }
}
