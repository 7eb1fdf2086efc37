// One Durable Object per (account, agent): holds the agent's serve connections, elects the
// leaseholder with the pure rules in worker/rules, and fences every write. All state lives in
// SQLite or in socket attachments (SocketObject), so the object can be evicted and rebuilt at any
// moment. It knows its own (account, agent) from its object name.
import { AgentStore } from "./agent-store.ts";
import {
  applyElection, holderCheckAt, isStale, nextStaleDeadline, provenAlive, type Candidate, type LeaseRecord, type TransitionReason,
} from "../rules/election.ts";
import { AgentControls, CONTROL_ROUTES, type ControlRoute, type RankedConn } from "./agent-controls.ts";
import { linePlace, type RankedCandidate } from "../rules/preference.ts";
import type { Retention } from "./message-store.ts";
import { holdsLease } from "../rules/fencing.ts";
import { FrameRateLimit } from "../rules/frame-rate-limit.ts";
import {
  closeQuietly, newConnState, send, serveAttachment, writeConn, type ConnState,
} from "./connections.ts";
import {
  CLOSE_CODES, errorFrame, errorResponse, LIMITS, MACHINE_LABEL, parseClientFrame, postMessageSchema, utf8Bytes, type ClientFrame,
} from "../wire/protocol.ts";
import { readBody, readJsonBody } from "./http.ts";
import type { Env } from "../env.ts";
import { buildPresence, PREVIEW_CHARS, type Presence } from "../wire/presence.ts";
import { DirectoryReporter, REPORT_RETRY_MS } from "./directory-reporter.ts";
import { agentOfObject } from "./names.ts";
import { SocketObject, type Socket, type SocketKind } from "./socket-object.ts";
import { AgentMetricsKeeper } from "./metrics-agent.ts";
import { isHolder, messageView, WorkDesk } from "./work-desk.ts";
import { messageRoute } from "./message-routes.ts";

interface LiveConn {
  ws: WebSocket;
  state: ConnState;
  heartbeat: number;
}


function earliest(...times: (number | null)[]): number | null {
  const known = times.filter((t): t is number => t !== null);
  return known.length ? Math.min(...known) : null;
}

const SERVE: SocketKind<ConnState> = {
  tag: "serve",
  schema: serveAttachment,
  max: LIMITS.connectionsPerAgent,
  limitMessage: `at most ${LIMITS.connectionsPerAgent} connections per agent`,
};

export class AgentCoordinator extends SocketObject<ConnState> {
  protected readonly kind = SERVE;
  private readonly store: AgentStore;
  private readonly rate = new FrameRateLimit(LIMITS.framesPerSecond, LIMITS.frameCharsPerSecond);
  private readonly desk: WorkDesk;
  private readonly metrics: AgentMetricsKeeper;
  /** The alarm this instance last set (null: none, or unknown after a restart), so a scan is not re-set on every frame. */
  private alarmAt: number | null = null;
  private readonly controls: AgentControls;
  private get retention(): Retention {
    return this.config.retention;
  }
  /** Who this object serves, from its own name; null only for an object not made by name. */
  private readonly identity: { account: string; agent: string } | null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new AgentStore(ctx.storage.sql);
    this.identity = this.store.identity(agentOfObject(ctx.id));
    this.controls = new AgentControls(ctx.storage.sql, this.config.preference);
    this.desk = new WorkDesk(ctx.storage.sql, () => this.store.lease(), () => this.liveConns(), (state) => this.mayHandOut(state));
    this.metrics = new AgentMetricsKeeper(ctx.storage.sql);
    this.desk.onRefused = (code) => this.refused(code);
    this.directoryReporter.onFailure = () => {
      const now = Date.now();
      this.reportRetryAt = now + REPORT_RETRY_MS;
      this.scheduleScan(now);
    };
    // After a restart (deploy, crash) the stored lease may name a holder whose socket died with the
    // old process: keep the lease for that runner's return (restart grace), and re-elect from the
    // sockets that are really here before anything else runs.
    void ctx.blockConcurrencyWhile(async () => {
      const now = Date.now();
      if (ctx.getWebSockets().length === 0) this.controls.noteRestart(this.store.lease(), now);
      this.reconcile(now, "closed");
    });
  }

  /** The agent's HTTP routes and the serve socket upgrade, as forwarded by the Worker. */
  async fetch(request: Request): Promise<Response> {
    const refusal = this.configRefusal();
    if (refusal) return refusal;
    const url = new URL(request.url);
    this.store.countWake();
    const route = url.pathname.split("/").slice(3).join("/");
    if (route === "serve") return this.acceptServe(request, url);
    if (route === "presence" && request.method === "GET") return Response.json(this.presence());
    if (route === "messages" && request.method === "POST") return this.postMessage(request);
    if (route === "messages" && request.method === "GET") return this.listMessages(url);
    const work = await messageRoute(request, route, this.desk, Date.now());
    if (work) {
      this.afterWork(Date.now());
      return work;
    }
    if (CONTROL_ROUTES.includes(route) && request.method === "POST") return this.control(route as ControlRoute, request);
    const one = route.match(/^messages\/(\d{1,15})$/);
    if (one && request.method === "GET") {
      const m = this.desk.messages.get(Number(one[1]));
      return m ? Response.json(messageView(m)) : errorResponse(404, "not_found", `no message ${one[1]}`);
    }
    return errorResponse(404, "not_found", `no route for ${request.method} ${url.pathname}`);
  }

  /**
   * Stores a message. With an Idempotency-Key header, a retry within the key's retention returns
   * the message the first post created (200, Idempotent-Replayed: true) and stores nothing.
   */
  private async postMessage(request: Request): Promise<Response> {
    const key = request.headers.get("idempotency-key");
    if (key !== null && (key.length < 1 || key.length > LIMITS.idempotencyKeyChars || !MACHINE_LABEL.test(key))) {
      return errorResponse(400, "bad_request", `Idempotency-Key must be 1-${LIMITS.idempotencyKeyChars} printable characters`);
    }
    const body = await readJsonBody(request, LIMITS.messageTextBytes * 2);
    if (!body.ok) return body.response;
    const parsed = postMessageSchema.safeParse(body.data);
    if (!parsed.success) {
      return errorResponse(400, "bad_request", 'body must be {"text": "<non-empty string>", "group"?: "<label>", "run_timeout_seconds"?: <seconds>}');
    }
    if (utf8Bytes(parsed.data.text) > LIMITS.messageTextBytes) {
      return errorResponse(413, "too_large", `message text exceeds ${LIMITS.messageTextBytes} bytes`);
    }
    const now = Date.now();
    const earlier = key === null ? null : this.desk.messages.postedWith(key, now, this.retention);
    if (earlier !== null) {
      const first = this.desk.messages.get(earlier);
      const view = first ? messageView(first) : { id: earlier, pruned: true };
      return Response.json(view, { status: 200, headers: { "Idempotent-Replayed": "true" } });
    }
    const { text, group, run_timeout_seconds } = parsed.data;
    const runTimeoutMs = run_timeout_seconds === undefined ? undefined : Math.round(run_timeout_seconds * 1000);
    const stored = this.desk.post(text, now, { group, runTimeoutMs });
    if (key !== null) this.desk.messages.rememberPost(key, stored.id, now);
    this.desk.messages.prune(stored.id, now, this.retention);
    this.afterWork(now);
    return Response.json(messageView(stored), { status: 201 });
  }

  /** Pause, unpause, drain, undrain: stored, then applied by one reconcile (which may move the lease). */
  private async control(route: ControlRoute, request: Request): Promise<Response> {
    const body = await readBody(request, LIMITS.frameBytes);
    if (!body.ok) return body.response;
    let data: unknown = {};
    try {
      if (body.bytes.byteLength > 0) data = JSON.parse(new TextDecoder().decode(body.bytes));
    } catch {
      return errorResponse(400, "bad_json", "body is not valid JSON");
    }
    const now = Date.now();
    const outcome = this.controls.apply(route, data, this.store.lease().holderMachine, now);
    if (!outcome.ok) return errorResponse(outcome.status, outcome.code, outcome.message);
    if (outcome.changed) this.reconcile(now, "claimed");
    return Response.json({ agent: this.agentName(), changed: outcome.changed, ...this.controls.report(now) });
  }

  private listMessages(url: URL): Response {
    const after = Number(url.searchParams.get("after") ?? "0");
    const limit = Number(url.searchParams.get("limit") ?? "100");
    if (!Number.isInteger(after) || after < 0 || !Number.isInteger(limit) || limit < 1) {
      return errorResponse(400, "bad_request", "after must be an integer >= 0 and limit an integer >= 1");
    }
    const messages = this.desk.messages.after(after, limit).map(messageView);
    return Response.json({ agent: this.agentName(), messages, cursor: messages.at(-1)?.id ?? after });
  }

  private acceptServe(request: Request, url: URL): Response {
    const now = Date.now();
    return this.acceptSocket(request, () => {
      const machine = url.searchParams.get("machine") || "unknown";
      if (machine.length > LIMITS.machineLabelChars || !MACHINE_LABEL.test(machine)) {
        return errorResponse(400, "bad_request", `machine labels are 1-${LIMITS.machineLabelChars} printable characters`);
      }
      return newConnState(machine, now);
    }, ({ ws }) => {
      send(ws, { type: "welcome", agent: this.agentName(), heartbeat_ttl_ms: this.config.heartbeatTtlMs, limits: LIMITS });
      this.scheduleScan(now);
      this.presenceChanged();
    });
  }

  /**
   * Liveness: a frame the object processes proves its sender alive at the object's own clock, and
   * so does an auto-answered ping, within the rule of provenAlive (a holder's ping after its
   * deadline never counts). A frame from a connection already past its TTL is refused, and the
   * lease moves before anything else happens.
   */
  protected async onMessage({ ws, state }: Socket<ConnState>, raw: string | ArrayBuffer): Promise<void> {
    const now = Date.now();
    // A frame over the size cap is refused unread, so it is charged no more than the cap.
    const chars = Math.min(typeof raw === "string" ? raw.length : raw.byteLength, LIMITS.frameBytes);
    if (!this.rate.allow(ws, now, chars)) {
      send(ws, errorFrame("rate_limited", `at most ${LIMITS.framesPerSecond} frames and ${LIMITS.frameCharsPerSecond} characters per second`));
      return;
    }
    this.store.countWake();
    if (isStale({ lastHeartbeat: this.heartbeat(ws, state) }, now, this.config.heartbeatTtlMs)) {
      send(ws, errorFrame("lease_expired", "no heartbeat within the TTL; reconnect and claim again"));
      this.reconcile(now, "stale");
      return;
    }
    state.lastSeen = now;
    writeConn(ws, state);
    const parsed = parseClientFrame(raw);
    if (!parsed.ok) {
      send(ws, errorFrame(parsed.code, parsed.message, parsed.req));
      return;
    }
    this.handle(ws, state, parsed.frame, now);
  }

  /**
   * The connection's last proof of life (provenAlive). A holder's accepted auto ping is folded into
   * its attachment, so its deadline moves on from there and never from a ping that came too late.
   */
  private heartbeat(ws: WebSocket, state: ConnState): number {
    const holder = isHolder(state, this.store.lease().holderClaim);
    const proven = provenAlive(state.lastSeen, this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? null, holder, this.config.heartbeatTtlMs);
    if (holder && proven > state.lastSeen) {
      state.lastSeen = proven;
      writeConn(ws, state);
    }
    return proven;
  }

  private handle(ws: WebSocket, state: ConnState, frame: ClientFrame, now: number): void {
    switch (frame.type) {
      case "ping":
        send(ws, { type: "pong" });
        return;
      case "hello":
        if (frame.concurrency !== undefined) this.setSlots(ws, state, frame.concurrency, now);
        return this.relabel(ws, state, frame.machine);
      case "serve_lease":
        if (frame.op === "claim") {
          if (frame.concurrency !== undefined && frame.concurrency !== state.slots) {
            // Saved even when the claim itself changes nothing (a re-claim with other slots).
            state.slots = frame.concurrency;
            writeConn(ws, state);
          }
          return this.claim(ws, state, now, frame.priority, frame.runner_id);
        }
        return this.release(ws, state, now, frame.req);
      case "sync": {
        const cursor = state.cursor;
        this.desk.sync({ ws, state }, frame.after, now, frame.req);
        return state.cursor === cursor ? undefined : this.presenceChanged();
      }
      case "checkpoint":
        // A checkpoint is not part of presence, so nobody watching needs to hear of it.
        return this.desk.write({ ws, state }, frame, now);
      case "ack":
      case "reply":
      case "fail":
      case "park":
        this.desk.write({ ws, state }, frame, now);
        // The holder's safe point: with nothing left running it may hand on (preferred, drained).
        if (this.handingOn(now) && this.holderIdle()) return this.reconcile(now, "claimed");
        return this.afterWork(now);
    }
  }

  /** A runner's slots (serve --concurrency) changed: more messages may go to it now. */
  private setSlots(ws: WebSocket, state: ConnState, slots: number, now: number): void {
    if (state.slots === slots) return;
    state.slots = slots;
    writeConn(ws, state);
    this.desk.reconcile(now);
    this.afterWork(now);
  }

  /** After messages may have moved: re-arm the alarm for their deadlines and report presence. */
  private afterWork(now: number): void {
    this.scheduleScan(now);
    this.presenceChanged();
  }

  /** A hello may rename the connection's machine; a holder's new label reaches the lease and every claimant. */
  private relabel(ws: WebSocket, state: ConnState, machine: string | undefined): void {
    if (!machine || machine === state.machine) return;
    state.machine = machine;
    writeConn(ws, state);
    const lease = this.store.lease();
    if (holdsLease(state, lease)) {
      const relabelled = { ...lease, holderMachine: machine };
      this.store.saveLease(relabelled, null);
      const conns = this.liveConns();
      const lineup = this.controls.lineup(this.ranked(this.candidates(conns)));
      for (const c of conns) this.tell(c, relabelled, lineup, true);
    }
    this.presenceChanged();
  }

  private claim(ws: WebSocket, state: ConnState, now: number, priority?: number, runnerId?: string): void {
    if (state.claimSeq === null || state.released) {
      state.claimSeq = this.store.nextClaimSeq();
      state.released = false;
      state.readySince = now;
      state.toldHeld = null;
      if (priority !== undefined) state.priority = priority;
      if (runnerId !== undefined) state.runnerId = runnerId;
      writeConn(ws, state);
    }
    this.reconcile(now, "claimed");
  }

  private release(ws: WebSocket, state: ConnState, now: number, req?: string): void {
    const held = holdsLease(state, this.store.lease());
    if (held) {
      state.released = true;
      writeConn(ws, state);
      this.reconcile(now, "released");
    }
    send(ws, { type: "result", op: "release", req, released: held, fence: this.store.lease().fence });
  }

  protected onClose(ws: WebSocket): void {
    this.store.countWake();
    this.reconcile(Date.now(), "closed", ws);
  }

  async alarm(): Promise<void> {
    this.alarmAt = null;
    this.store.countWake();
    const now = Date.now();
    // Confirmations first: the scan below then schedules the next one.
    if (this.reportRetryAt !== null && now >= this.reportRetryAt) {
      this.reportRetryAt = null;
      this.presenceChanged();
    }
    if (this.identity) {
      this.directoryReporter.confirmIfDue(this.ctx, this.env.DIRECTORY, this.identity.account, this.identity.agent, now, () => this.presenceChanged());
    }
    this.reconcile(now, "stale");
    // The alarm moves messages too (run timeouts, park deadlines, backoffs ending): the reporter sends only what changed.
    this.presenceChanged();
    this.store.saveWakes();
  }

  /** Live connections with their last heartbeat, rebuilt from the runtime's socket list on every call. */
  private liveConns(exclude?: WebSocket): LiveConn[] {
    return this.sockets(exclude).map(({ ws, state }) => ({ ws, state, heartbeat: this.heartbeat(ws, state) }));
  }

  /**
   * The one place the lease moves: closes silent connections, elects, stores the new fence
   * before anyone hears of it, tells each connection only when its own state changed, and
   * schedules the next scan.
   */
  private reconcile(now: number, reason: TransitionReason, exclude?: WebSocket): void {
    const ttl = this.config.heartbeatTtlMs;
    const before = this.store.lease();
    const conns: LiveConn[] = [];
    let holderWentStale = false;
    let holderLostAt = now;
    let closedAny = false;
    for (const c of this.liveConns(exclude)) {
      if (isStale({ lastHeartbeat: c.heartbeat }, now, ttl)) {
        if (isHolder(c.state, before.holderClaim)) {
          holderWentStale = true;
          holderLostAt = c.heartbeat + ttl;
        }
        closeQuietly(c.ws, CLOSE_CODES.heartbeatTimeout, "heartbeat timeout");
        closedAny = true;
      } else {
        conns.push(c);
      }
    }
    const ranked = this.ranked(this.candidates(conns));
    const choice = this.controls.elect(ranked, before, !this.holderIdle(before), now);
    const why = holderWentStale ? "stale" : choice.reason ?? (before.holderClaim === null ? "claimed" : reason);
    const { lease, transition } = applyElection(before, choice.winner, now, why);
    if (transition) {
      this.store.saveLease(lease, transition);
      this.metrics.transition(transition, holderLostAt);
      this.controls.noteHolder(choice.winner);
    }
    const lineup = this.controls.lineup(ranked);
    for (const c of conns) this.tell(c, lease, lineup);
    this.desk.reconcile(now);
    this.scheduleScan(now, conns);
    // A scan that found everyone alive changed nothing anybody watches (message moves report via afterWork).
    if (transition || closedAny || reason !== "stale") this.presenceChanged(conns);
  }

  /** Called only where presence may have changed; the reporter still sends only what really did. */
  private presenceChanged(conns?: LiveConn[]): void {
    if (!this.identity) return;
    const presence = this.presence(conns);
    this.directoryReporter.report(this.ctx, this.env.DIRECTORY, this.identity.account, presence);
    this.metrics.report(this.ctx, this.env.DIRECTORY, this.identity.account, presence);
  }

  /** A write refused with a named code (stale fence, not the holder): counted for /metrics. */
  private refused(code: string): void {
    this.metrics.refused(code, Date.now());
    this.presenceChanged();
  }

  /** Remembers (in SQLite) what was last reported to the directory, so a rebuilt object does not repeat it. */
  private readonly directoryReporter = new DirectoryReporter(this.ctx.storage.sql, this.config.heartbeatTtlMs);
  /** A report to the directory failed: the alarm tries again then (in memory: after an eviction the directory's own lease tells the truth). */
  private reportRetryAt: number | null = null;

  private candidates(conns: LiveConn[]): (Candidate & { state: ConnState })[] {
    return conns
      .filter((c) => c.state.role === "serve" && c.state.claimSeq !== null && !c.state.released)
      .map((c) => ({ claimSeq: c.state.claimSeq!, machine: c.state.machine, lastHeartbeat: c.heartbeat, state: c.state }));
  }

  private ranked(candidates: (Candidate & { state: ConnState })[]): RankedConn[] {
    return candidates.map(({ state, ...c }) => ({ ...c, runner: state.runnerId ?? null, priority: state.priority ?? 0, readySince: state.readySince ?? state.joinedAt }));
  }

  /** The holder runs no message: its safe point, where the lease may move on purpose. */
  private holderIdle(lease: LeaseRecord = this.store.lease()): boolean {
    return lease.holderClaim === null || this.desk.messages.runningOn(String(lease.holderClaim)) === 0;
  }

  /** The holder should hand on at its next safe point (a preferred runner is ready, or it is drained). */
  private handingOn(now: number): boolean {
    return this.controls.wantsMove(this.ranked(this.candidates(this.liveConns())), this.store.lease(), now);
  }

  /**
   * Whether a runner may be handed a new message: not while paused, not on a drained machine, and
   * not to a holder that is handing on, so that it reaches its safe point.
   */
  private mayHandOut(state: ConnState): boolean {
    if (this.controls.paused() || this.controls.drained().has(state.machine)) return false;
    return state.claimSeq !== this.store.lease().holderClaim || !this.handingOn(Date.now());
  }

  /** Sends a serve_lease frame when this connection's own state changed, or always when `force` (a relabelled holder). */
  private tell(c: LiveConn, lease: LeaseRecord, lineup: RankedCandidate[], force = false): void {
    const { state } = c;
    const { fence } = lease;
    if (state.claimSeq === null) return;
    const held = holdsLease(state, lease);
    if (!force && state.toldHeld === held && (!held || state.toldFence === fence)) return;
    // A new holder's deadline runs from its latest proof as a standby, which the election found live.
    if (held && state.toldHeld !== true) state.lastSeen = Math.max(state.lastSeen, c.heartbeat);
    const checkpoint = held ? this.desk.messages.checkpoint() : null;
    send(c.ws, {
      type: "serve_lease",
      held,
      fence,
      claim_seq: state.claimSeq,
      position: state.released ? -1 : linePlace(lineup, state.claimSeq, lease.holderClaim),
      ttl_ms: this.config.heartbeatTtlMs,
      holder: lease.holderClaim === null ? null : { claim_seq: lease.holderClaim, machine: lease.holderMachine ?? "unknown", since: lease.since ?? 0 },
      ...(checkpoint ? { checkpoint: checkpoint.value, checkpoint_fence: checkpoint.fence } : {}),
    });
    state.toldHeld = held;
    state.toldFence = fence;
    writeConn(c.ws, state);
  }

  /**
   * Schedules the next scan at the earliest moment a connection can go stale (the holder is looked
   * at halfway there, see holderCheckAt; capped by the scan interval) or a message's run or park
   * deadline passes. An alarm already due earlier is left alone (it re-schedules when it runs), so
   * a frame costs no alarm write; with nothing to watch, no alarm is left behind.
   */
  private scheduleScan(now: number, conns: LiveConn[] = this.liveConns()): void {
    const ttl = this.config.heartbeatTtlMs;
    const serving = conns;
    let stale = nextStaleDeadline(serving.map((c) => ({ lastHeartbeat: c.heartbeat })), ttl);
    const holder = serving.find((c) => isHolder(c.state, this.store.lease().holderClaim));
    if (holder && stale !== null) stale = Math.min(stale, holderCheckAt(holder.heartbeat, now, ttl));
    const scan = stale === null ? null : Math.min(stale, now + this.config.presenceScanMs);
    const deadline = earliest(scan, this.desk.messages.nextDeadline(now), this.directoryReporter.nextConfirmation(), this.reportRetryAt);
    if (deadline === null) {
      if (this.alarmAt !== null) void this.ctx.storage.deleteAlarm();
      this.alarmAt = null;
      return;
    }
    // Preference moves by the clock alone too: when a preferred runner's hysteresis or a restart grace ends.
    const moment = this.controls.nextMoment(this.ranked(this.candidates(serving)), this.store.lease(), now);
    const at = Math.max(now + 1, moment === null ? deadline : Math.min(deadline, moment));
    if (this.alarmAt !== null && this.alarmAt > now && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  private agentName(): string {
    return this.identity?.agent ?? "unknown";
  }

  presence(conns: LiveConn[] = this.liveConns()): Presence {
    const now = Date.now();
    return buildPresence({
      agent: this.agentName(),
      now,
      ttlMs: this.config.heartbeatTtlMs,
      lease: this.store.lease(),
      conns: conns.map((c) => ({ ...c.state, heartbeat: c.heartbeat })),
      transitions: this.store.recentTransitions(),
      recentMessages: this.desk.messages.recent(10, PREVIEW_CHARS),
      work: this.desk.leases.report(),
      controls: this.controls.report(now),
      wakes: this.store.wakes(),
    });
  }
}
