// The agent directory: one Durable Object per account that knows the latest presence of every
// agent of that account with open connections, and pushes each change to dashboard observers.
// Agent objects report only real changes (DirectoryReporter below). Heartbeats never wake an agent
// object, so fresh heartbeat ages are pulled: by GET /agents, and every few seconds by an alarm
// while observers watch. Nothing is pulled while nobody looks.
import { DurableObject } from "cloudflare:workers";
import { closeQuietly, send } from "./connections.ts";
import type { Env } from "../env.ts";
import type { Presence } from "../wire/presence.ts";
import type { AgentMetrics } from "../rules/metrics.ts";
import { MetricsBoard } from "./metrics-directory.ts";
import { CLOSE_CODES, errorFrame, parseClientFrame, PING_TEXT, PONG_TEXT, type DirectoryEntry, type ServerFrame } from "../wire/protocol.ts";

/** How often the directory refreshes presences while at least one observer is connected. */
export const DIRECTORY_REFRESH_MS = 5_000;
/** Dashboards watching one account at once; more are refused with 429 too_many_connections. */
export const MAX_OBSERVERS = 64;
const OBSERVER_TAG = "observer";
const REPORT_PATH = "/report";

export function directoryId(ns: DurableObjectNamespace<AgentDirectory>, account: string): DurableObjectId {
  return ns.idFromName(`directory:${account}`);
}

/** Presence without what changes on its own (heartbeat ages, the wake counter): equal means nothing to report. */
export function presenceFingerprint(presence: Presence): string {
  const { wakes: _wakes, connections, ...rest } = presence as Presence & { wakes?: number };
  return JSON.stringify({ ...rest, connections: connections.map(({ heartbeat_age_seconds: _age, ...c }) => c) });
}

/** Like the fingerprint, but heartbeat times (to the second) count: used to decide what observers need. */
function observedFingerprint(entry: DirectoryEntry): string {
  const beats = entry.connections.map((c) => Math.round(entry.reported_at / 1000 - c.heartbeat_age_seconds));
  return `${presenceFingerprint(entry)}|${beats.join(",")}`;
}

export class AgentDirectory extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly metrics: MetricsBoard;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS agents (
      agent TEXT PRIMARY KEY, entry TEXT NOT NULL, reported_at INTEGER NOT NULL)`);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING_TEXT, PONG_TEXT));
    this.metrics = new MetricsBoard(this.sql);
  }

  /** RPC from an agent object: its latest metrics snapshot (sent only when it changed). */
  reportMetrics(snapshot: AgentMetrics): void {
    this.metrics.accept(snapshot);
  }

  /** RPC for GET /metrics: every agent's latest snapshot, without calling any agent. */
  metricsSnapshots(): AgentMetrics[] {
    return this.metrics.snapshots(Date.now());
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const account = request.headers.get("x-baton-account");
    if (account && this.account() === null) this.setMeta("account", account);
    if (url.pathname === REPORT_PATH && request.method === "POST") {
      this.acceptReport((await request.json()) as DirectoryEntry);
      return new Response(null, { status: 204 });
    }
    if (url.pathname === "/agents" && request.method === "GET") return Response.json({ agents: await this.refreshAll() });
    if (url.pathname === "/observe") return this.acceptObserver(request);
    return Response.json({ error: "not_found", message: `no route for ${request.method} ${url.pathname}` }, { status: 404 });
  }

  /** Every report that is not older than what is stored reaches the observers, unfiltered. */
  private acceptReport(entry: DirectoryEntry): void {
    const stored = this.entry(entry.agent);
    if (stored && stored.reported_at > entry.reported_at) return;
    this.apply(entry);
  }

  /** Stores or removes one agent and tells every observer. */
  private apply(entry: DirectoryEntry): void {
    const now = Date.now();
    if (entry.connection_count === 0) {
      const existed = this.sql.exec(`DELETE FROM agents WHERE agent = ?`, entry.agent).rowsWritten > 0;
      if (existed) this.broadcast({ type: "agent_gone", agent: entry.agent, server_time: now });
      return;
    }
    this.sql.exec(
      `INSERT INTO agents (agent, entry, reported_at) VALUES (?, ?, ?)
       ON CONFLICT(agent) DO UPDATE SET entry = excluded.entry, reported_at = excluded.reported_at`,
      entry.agent, JSON.stringify(entry), entry.reported_at,
    );
    this.broadcast({ type: "presence", presence: entry, server_time: now });
  }

  private acceptObserver(request: Request): Response {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return Response.json({ error: "bad_request", message: "expected a WebSocket upgrade" }, { status: 426 });
    }
    if (this.observers().length >= MAX_OBSERVERS) {
      return Response.json({ error: "too_many_connections", message: `at most ${MAX_OBSERVERS} observers per account` }, { status: 429 });
    }
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, [OBSERVER_TAG]);
    server.serializeAttachment({ v: 1, role: "observer", joinedAt: Date.now() });
    send(server, { type: "directory", agents: this.entries(), server_time: Date.now() });
    // The snapshot may carry old heartbeat ages; fresh ones follow as presence frames at once.
    this.ctx.waitUntil(this.refreshAll().then(() => this.ensureRefreshAlarm()));
    const offered = request.headers.get("sec-websocket-protocol")?.split(",").map((p) => p.trim()) ?? [];
    const headers: Record<string, string> = offered.includes("baton") ? { "Sec-WebSocket-Protocol": "baton" } : {};
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  /** Observers may ping; anything else is refused and the socket closed, so nobody claims through here. */
  async webSocketMessage(ws: WebSocket, raw: string | ArrayBuffer): Promise<void> {
    const parsed = parseClientFrame(raw);
    if (parsed.ok && parsed.frame.type === "ping") return send(ws, { type: "pong" });
    send(ws, errorFrame("bad_frame", "observer connections only listen; send nothing but pings"));
    closeQuietly(ws, CLOSE_CODES.policy, "observers only listen");
  }

  async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    closeQuietly(ws, code === 1005 || code === 1006 ? CLOSE_CODES.normal : code, "closing");
  }

  /** While observers watch, pulls every listed agent's presence so ages stay true and lost reports heal. */
  async alarm(): Promise<void> {
    if (this.observers().length === 0) return;
    await this.refreshAll();
    await this.ensureRefreshAlarm();
  }

  /**
   * Pulls the presence of every listed agent; observers hear of what changed (heartbeat times to
   * the second included). Returns the fresh entries, so GET /agents shows exact heartbeat ages.
   */
  private async refreshAll(): Promise<DirectoryEntry[]> {
    const account = this.account();
    const stored = this.entries();
    if (account === null) return stored;
    const fresh = await Promise.all(stored.map(async (old) => {
      const pulled = await this.pull(account, old.agent);
      if (pulled && observedFingerprint(pulled) !== observedFingerprint(old)) this.apply(pulled);
      return pulled ?? old;
    }));
    return fresh.filter((e) => e.connection_count > 0);
  }

  private async pull(account: string, agent: string): Promise<DirectoryEntry | null> {
    const reportedAt = Date.now();
    try {
      const stub = this.env.AGENTS.get(this.env.AGENTS.idFromName(`${account}:${agent}`));
      const res = await stub.fetch(`https://agent.internal/agents/${encodeURIComponent(agent)}/presence`, {
        headers: { "x-baton-account": account, "x-baton-agent": agent },
      });
      if (!res.ok) return null;
      const presence = (await res.json()) as Presence;
      const current = this.entry(agent);
      return current && current.reported_at > reportedAt ? null : { ...presence, reported_at: reportedAt };
    } catch {
      return null;
    }
  }

  private async ensureRefreshAlarm(): Promise<void> {
    if (this.observers().length === 0) return;
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + DIRECTORY_REFRESH_MS);
  }

  private observers(): WebSocket[] {
    return this.ctx.getWebSockets(OBSERVER_TAG).filter((ws) => ws.readyState === WebSocket.OPEN);
  }

  private broadcast(frame: ServerFrame): void {
    for (const ws of this.observers()) send(ws, frame);
  }

  private entries(): DirectoryEntry[] {
    return this.sql.exec<{ entry: string }>(`SELECT entry FROM agents ORDER BY agent`).toArray()
      .map((r) => JSON.parse(r.entry) as DirectoryEntry);
  }

  private entry(agent: string): DirectoryEntry | null {
    const rows = this.sql.exec<{ entry: string }>(`SELECT entry FROM agents WHERE agent = ?`, agent).toArray();
    return rows.length ? (JSON.parse(rows[0]!.entry) as DirectoryEntry) : null;
  }

  private account(): string | null {
    return this.meta("account");
  }

  private meta(key: string): string | null {
    const rows = this.sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = ?`, key).toArray();
    return rows.length ? rows[0]!.value : null;
  }

  private setMeta(key: string, value: string): void {
    this.sql.exec(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value);
  }
}

/**
 * The agent object's side: remembers the fingerprint it last reported and sends a report only
 * when it differs. Reports leave one at a time and in order; while one is in flight, newer ones
 * replace each other, so the directory always ends with the latest. A failed report is retried at
 * the next change (and healed by the directory's refresh while someone watches).
 */
export class DirectoryReporter {
  private lastFingerprint: string | null = null;
  private pending: DirectoryEntry | null = null;
  private flushing = false;

  report(ctx: DurableObjectState, directories: DurableObjectNamespace<AgentDirectory>, account: string, presence: Presence): void {
    const fingerprint = presenceFingerprint(presence);
    if (fingerprint === this.lastFingerprint) return;
    this.lastFingerprint = fingerprint;
    this.pending = { ...presence, reported_at: Date.now() };
    if (!this.flushing) ctx.waitUntil(this.flush(directories.get(directoryId(directories, account)), account));
  }

  private async flush(stub: DurableObjectStub<AgentDirectory>, account: string): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending) {
        const entry = this.pending;
        this.pending = null;
        try {
          const res = await stub.fetch(`https://directory.internal${REPORT_PATH}`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-baton-account": account },
            body: JSON.stringify(entry),
          });
          if (!res.ok) this.lastFingerprint = null;
        } catch {
          this.lastFingerprint = null;
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
