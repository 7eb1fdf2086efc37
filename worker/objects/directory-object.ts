// The agent directory: one Durable Object per account that keeps the latest presence of every
// agent of that account with open connections, and pushes each change to dashboard observers.
// Agent objects report real changes by RPC (directory-reporter.ts); the directory never calls
// an agent back, so its work grows with changes, not with agents or connections. Heartbeats wake
// neither side, so it shows no heartbeat ages, only their bound (see `agedEntry`). Each entry is
// leased (rules/directory-lease.ts): its agent confirms it every two TTLs, and one it stops
// confirming is shown as unknown, never as live.
import { addMissingColumns, migrate, type Migration } from "./migrations.ts";
import { agedEntry, listedInDirectory, whoEntryOf } from "../rules/presence.ts";
import type { DirectoryEntry, PresenceReport } from "../wire/protocol.ts";
import { presenceReportSchema } from "../wire/presence-reports.ts";
import { confirmedUntil } from "../rules/directory-lease.ts";
import { firstPage } from "../rules/directory-page.ts";
import { CLOSE_CODES, errorFrame, errorResponse, LIMITS, parseClientFrame, type ServerFrame } from "../wire/protocol.ts";
import type { Env } from "../env.ts";
import type { AgentMetrics } from "../rules/metrics.ts";
import { MetricsBoard } from "./metrics-directory.ts";
import type { DirectoryUpdate } from "./directory-reporter.ts";
import { closeQuietly, observerAttachment, send, type ObserverState } from "./connections.ts";
import { SocketObject, type Socket, type SocketKind } from "./socket-object.ts";
import { AgentCounts, PUSH_TARGET_COUNTS, SCHEDULE_COUNTS, type Reservation } from "./agent-counts.ts";
import { WebhookConfigStore, webhookView, type WebhookConfig } from "./webhook-config.ts";
import { testRequest, type SignedRequest } from "./webhook-delivery.ts";
import { accountOfDirectory } from "./names.ts";
import { StoredJson } from "../rules/stored-json.ts";
import { readOr } from "./stored-read.ts";
import type { WebhookConfigBody, WebhookView } from "../wire/webhooks.ts";

/** The numbered migrations of the agents table (migrations.ts); 1: as the releases before versions left it (the entry lease came later). */
const AGENTS_MIGRATIONS: readonly Migration[] = [(sql) => {
  sql.exec(`CREATE TABLE IF NOT EXISTS agents (agent TEXT PRIMARY KEY, entry TEXT NOT NULL, reported_at INTEGER NOT NULL)`);
  addMissingColumns(sql, "agents", { confirmed_until: "INTEGER" });
}];

const presenceJson = new StoredJson<PresenceReport>("agents.entry", presenceReportSchema);

/** Dashboards watching one account at once; more are refused with 429 too_many_connections. */
export const MAX_OBSERVERS = 64;

const OBSERVER: SocketKind<ObserverState> = {
  tag: "observer",
  schema: observerAttachment,
  max: MAX_OBSERVERS,
  limitMessage: `at most ${MAX_OBSERVERS} observers per account`,
};

/** How much of each agent `GET /agents` lists: everything, without history (`?view=summary`), or what `baton who` prints (`?view=who`). */
export type DirectoryView = "full" | "summary" | "who";

export class AgentDirectory extends SocketObject<ObserverState> {
  protected readonly kind = OBSERVER;
  private readonly sql: SqlStorage;
  private readonly metrics: MetricsBoard;
  /** The account's webhook: agents without one of their own send their events to it. */
  private readonly webhookConfig: WebhookConfigStore;
  /** Schedules per agent, for LIMITS.schedulesPerAccount (schedule-counts.ts). */
  private readonly scheduleCounts: AgentCounts;
  /** A2A push targets per agent, for LIMITS.pushTargetsPerAccount (push-target-counts.ts). */
  private readonly pushTargetCounts: AgentCounts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    migrate(this.sql, "agents", AGENTS_MIGRATIONS);
    this.metrics = new MetricsBoard(this.sql);
    this.webhookConfig = new WebhookConfigStore(this.sql);
    this.scheduleCounts = new AgentCounts(this.sql, SCHEDULE_COUNTS);
    this.pushTargetCounts = new AgentCounts(this.sql, PUSH_TARGET_COUNTS);
  }

  /** RPC from an agent object whose schedules changed: how many it has now. */
  setScheduleCount(agent: string, schedules: number): void {
    this.scheduleCounts.set(agent, schedules);
  }

  /** The account's schedules outside `agent`, as counted. */
  schedulesBesides(agent: string): number {
    return this.scheduleCounts.total(agent);
  }

  /** RPC from the Worker before an add: the account's schedules outside `agent`, with the places adds in flight hold; reserves one for this add unless the account is full (agent-counts.ts). */
  reserveSchedule(agent: string): Reservation {
    return this.scheduleCounts.reserve(agent, this.now(), LIMITS.schedulesPerAccount);
  }

  /** RPC from the Worker after an add that did not grow the count: its place goes back. */
  releaseSchedule(agent: string, place: number): void {
    this.scheduleCounts.release(agent, place);
  }

  /** RPC from an agent object whose A2A push targets changed: how many it has now. */
  setPushTargetCount(agent: string, targets: number): void {
    this.pushTargetCounts.set(agent, targets);
  }

  /** The account's A2A push targets outside `agent`, as counted. */
  pushTargetsBesides(agent: string): number {
    return this.pushTargetCounts.total(agent);
  }

  /** RPC from the Worker before a push target is set: as reserveSchedule, for targets. */
  reservePushTarget(agent: string): Reservation {
    return this.pushTargetCounts.reserve(agent, this.now(), LIMITS.pushTargetsPerAccount);
  }

  /** RPC from the Worker after a push-target set that did not grow the count: its place goes back. */
  releasePushTarget(agent: string, place: number): void {
    this.pushTargetCounts.release(agent, place);
  }

  /** RPC from the account's agent objects: the account's webhook with its secret (they sign with it), or null. */
  accountWebhook(): WebhookConfig | null {
    return this.webhookConfig.get();
  }

  /** RPC from the Worker (GET /webhook): the account's webhook without its secret. */
  webhook(): WebhookView | null {
    const config = this.webhookConfig.get();
    return config && webhookView(config, null, this.now());
  }

  /** RPC from the Worker (PUT /webhook, validated there); agent objects pick it up within their cache time. */
  setWebhook(body: WebhookConfigBody, origin: string): WebhookView {
    return this.webhookConfig.put(body, origin, null, this.now());
  }

  /** RPC from the Worker (POST /webhook/test): a signed `webhook.test` event for the account's webhook (null: none), which the Worker sends. */
  async webhookTest(): Promise<SignedRequest | null> {
    const config = this.webhookConfig.get();
    const account = accountOfDirectory(this.ctx.id);
    return config && account !== null ? testRequest(config, { account, agent: null }, this.now()) : null;
  }

  /** RPC from the Worker (DELETE /webhook); false when there was none. */
  deleteWebhook(): boolean {
    return this.webhookConfig.delete();
  }

  /** RPC from an agent object: what changed, its presence or its metrics or both, in one call. */
  update(u: DirectoryUpdate): void {
    if (u.presence) this.report(u.presence);
    if (u.metrics) this.reportMetrics(u.metrics);
  }

  /** An agent's latest metrics snapshot (sent only when it changed). */
  reportMetrics(snapshot: AgentMetrics): void {
    this.metrics.accept(snapshot, confirmedUntil(snapshot.reported_at, this.config.heartbeatTtlMs));
  }

  /** RPC for GET /metrics: every agent's latest snapshot, without calling any agent. */
  metricsSnapshots(): AgentMetrics[] {
    return this.metrics.snapshots(this.now());
  }

  /** Only the dashboard's observer socket arrives by fetch (GET /observe, forwarded by the Worker). */
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname !== "/observe") return errorResponse(404, "not_found", `no route for ${request.method} ${url.pathname}`);
    return this.acceptSocket(request, (id) => ({ v: 2, id, role: "observer", joinedAt: this.now() }), ({ ws }) => {
      const now = this.now();
      const { page, rest } = firstPage(this.list());
      send(ws, { type: "directory", agents: page, server_time: now, rest: rest.length });
      // What did not fit follows as one presence frame per agent, so no frame is over the cap plus one entry.
      for (const entry of rest) send(ws, { type: "presence", presence: entry, server_time: now });
    });
  }

  /**
   * An agent's latest presence. A report older than the one stored is
   * dropped; any other reaches every observer. An agent with no connections and no waiting work leaves the list.
   */
  report(entry: PresenceReport): void {
    const stored = this.sql.exec<{ reported_at: number }>(`SELECT reported_at FROM agents WHERE agent = ?`, entry.agent).toArray()[0];
    if (stored && stored.reported_at > entry.reported_at) return;
    const until = confirmedUntil(entry.reported_at, this.config.heartbeatTtlMs);
    const now = this.now();
    if (!listedInDirectory(entry)) {
      if (stored) {
        this.sql.exec(`DELETE FROM agents WHERE agent = ?`, entry.agent);
        this.broadcast({ type: "agent_gone", agent: entry.agent, server_time: now });
      }
      return;
    }
    this.sql.exec(
      `INSERT INTO agents (agent, entry, reported_at, confirmed_until) VALUES (?, ?, ?, ?)
       ON CONFLICT(agent) DO UPDATE SET entry = excluded.entry, reported_at = excluded.reported_at, confirmed_until = excluded.confirmed_until`,
      entry.agent, presenceJson.write(entry), entry.reported_at, until,
    );
    this.broadcast({ type: "presence", presence: agedEntry(entry, until, now), server_time: now });
  }

  /**
   * RPC from an agent object whose presence did not change: it still stands, as of `at`. False
   * when there is nothing here to confirm (the entry was never stored or was lost): the agent then
   * sends its whole report.
   */
  confirm(agent: string, at: number): boolean {
    const until = confirmedUntil(at, this.config.heartbeatTtlMs);
    this.metrics.confirm(agent, until);
    const rows = this.sql.exec(
      `UPDATE agents SET confirmed_until = MAX(COALESCE(confirmed_until, 0), ?) WHERE agent = ? RETURNING agent`, until, agent,
    ).toArray();
    return rows.length > 0;
  }

  /** RPC from the Worker (GET /agents): every agent with connections, as last reported and whether that is still vouched for. Reads storage only. */
  list(): DirectoryEntry[] {
    const now = this.now();
    return this.sql.exec<{ entry: string; reported_at: number; confirmed_until: number | null }>(
      `SELECT entry, reported_at, confirmed_until FROM agents ORDER BY agent`).toArray()
      .flatMap((r) => {
        // A corrupt entry is left out of the list until its agent's next report replaces it.
        const entry = readOr(presenceJson, r.entry, null, "entry left out of the list");
        return entry === null ? [] : [agedEntry(entry, r.confirmed_until ?? confirmedUntil(r.reported_at, this.config.heartbeatTtlMs), now)];
      });
  }

  /**
   * RPC from the Worker (GET /agents): the list as the JSON body itself, so 1,000 entries cross
   * to the Worker as one string instead of being cloned and serialized again. `who` carries only
   * what `baton who` prints (whoEntryOf); `summary` leaves out transitions and recent messages.
   */
  listBody(view: DirectoryView): string {
    const agents = this.list();
    if (view === "who") return JSON.stringify({ agents: agents.map(whoEntryOf) });
    return JSON.stringify({ agents: view === "summary" ? agents.map(({ transitions: _t, recent_messages: _r, ...entry }) => entry) : agents });
  }

  /** Observers may ping; anything else is refused and the socket closed, so nobody claims through here. */
  protected onMessage({ ws }: Socket<ObserverState>, raw: string | ArrayBuffer): void {
    const parsed = parseClientFrame(raw);
    if (parsed.ok && parsed.frame.type === "ping") return send(ws, { type: "pong" });
    send(ws, errorFrame("bad_frame", "observer connections only listen; send nothing but pings"));
    closeQuietly(ws, CLOSE_CODES.policy, "observers only listen");
  }

  protected onClose(): void {
    // Nothing to forget: the observer set is the runtime's socket list.
  }

  private broadcast(frame: ServerFrame): void {
    const text = JSON.stringify(frame);
    for (const { ws } of this.sockets()) {
      try {
        ws.send(text);
      } catch {
        // closing already; its close event needs nothing from us
      }
    }
  }
}
