// The dashboard's live side, apart from any rendering: checks the token over HTTP, holds one
// observer WebSocket to /observe (token in the subprotocol list, never in the URL), applies
// directory, presence and agent_gone frames to the page state, pings, and reconnects with backoff.
// A failed reconnect is shown as "coordinator unreachable", never as an empty account. What the
// token may do comes from GET /whoami (api.ts); what the page shows is the hooks' business.
import { currentToken, tokenProtocol, type Api } from "./api.ts";
import { abilities, type DirectoryEntry, type ObserverFrame, type PageState } from "./state.ts";
import { keptTransitions, WINDOW_MS } from "./timeline.ts";

const BACKOFF = { minMs: 500, maxMs: 15_000, factor: 2, jitter: 0.2 };
const PING_EVERY_MS = 20_000;
const SILENCE_LIMIT_MS = 50_000;

export type StatusKind = "connecting" | "live" | "retrying" | "signed-out";

export interface FeedHooks {
  /** The status line: what the link is doing. */
  status: (kind: StatusKind, text: string) => void;
  /** Opens (or closes) the token form, with a hint when there is something to say. */
  login: (open: boolean, message?: string) => void;
  /** The state changed: draw it. */
  render: () => void;
  /** An agent's entry arrived (directory or presence): its card may want its messages again. */
  arrived: (entry: DirectoryEntry) => void;
  /** An agent left the directory. */
  gone: (agent: string) => void;
}

function backoffDelay(n: number): number {
  const base = Math.min(BACKOFF.maxMs, BACKOFF.minMs * BACKOFF.factor ** n);
  return Math.round(base * (1 - BACKOFF.jitter + Math.random() * 2 * BACKOFF.jitter));
}

/** The observer feed of one page: writes `state`, tells the hooks. */
export class Feed {
  private socket: WebSocket | null = null;
  private attempt = 0;
  private retryTimer = 0;
  private pingTimer = 0;
  private lastFrameAt = 0;
  private statusKind: StatusKind = "connecting";

  constructor(private readonly state: PageState, private readonly api: Api, private readonly hooks: FeedHooks) {}

  private setStatus(kind: StatusKind, text: string): void {
    this.statusKind = kind;
    this.hooks.status(kind, text);
  }

  /** Starts over at once (a new token, or the page came back while retrying). */
  restart(): void {
    this.attempt = 0;
    void this.connect();
  }

  /** The page became visible again: a link waiting out its backoff tries now. */
  visible(): void {
    if (!this.socket && this.statusKind === "retrying") this.restart();
  }

  private setReachable(reachable: boolean): void {
    if (reachable === !this.state.unreachable) return;
    this.state.unreachable = !reachable;
    this.state.unreachableSince = reachable ? 0 : Date.now();
    this.hooks.render();
  }

  private remember(entry: DirectoryEntry): void {
    const { state } = this;
    const known = state.machines.get(entry.agent) ?? new Map<number, string>();
    for (const c of entry.connections) if (c.claim_seq !== null) known.set(c.claim_seq, c.machine);
    if (entry.holder) known.set(entry.holder.claim_seq, entry.holder.machine);
    state.machines.set(entry.agent, known);
    state.transitions.set(entry.agent, keptTransitions(state.transitions.get(entry.agent), entry.transitions, Date.now() + state.clockOffset - WINDOW_MS));
  }

  private applyFrame(frame: ObserverFrame | { type: "directory"; agents: DirectoryEntry[]; server_time?: number }): void {
    const { state } = this;
    if (typeof frame.server_time === "number") state.clockOffset = frame.server_time - Date.now();
    if (frame.type === "directory") {
      state.agents = new Map(frame.agents.map((a) => [a.agent, a]));
      state.loaded = true;
      state.signedOut = false;
      for (const entry of state.agents.values()) this.remember(entry);
    } else if (frame.type === "presence") {
      state.agents.set(frame.presence.agent, frame.presence);
      this.remember(frame.presence);
    } else if (frame.type === "agent_gone") {
      state.agents.delete(frame.agent);
      state.transitions.delete(frame.agent);
      this.hooks.gone(frame.agent);
    } else {
      return;
    }
    this.hooks.render();
    if (frame.type === "presence") this.hooks.arrived(frame.presence);
  }

  private scheduleReconnect(): void {
    clearTimeout(this.retryTimer);
    const delay = backoffDelay(this.attempt++);
    const until = Date.now() + delay;
    const what = () => (this.state.unreachable ? "coordinator unreachable · retrying in" : "reconnecting in");
    this.setStatus("retrying", `${what()} ${Math.ceil(delay / 1000)}s`);
    this.retryTimer = window.setTimeout(() => void this.connect(), delay);
    const countdown = window.setInterval(() => {
      if (this.statusKind !== "retrying") return clearInterval(countdown);
      const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
      this.setStatus("retrying", `${what()} ${left}s`);
      if (left === 0) clearInterval(countdown);
    }, 250);
  }

  private dropSocket(): void {
    clearInterval(this.pingTimer);
    if (!this.socket) return;
    const old = this.socket;
    this.socket = null;
    old.onopen = old.onmessage = old.onclose = old.onerror = null;
    try { old.close(1000, "dashboard reconnecting"); } catch { /* already closed */ }
  }

  /** Checks the token over HTTP first: a WebSocket refused with 401 looks like any network error. */
  async connect(): Promise<void> {
    clearTimeout(this.retryTimer);
    this.dropSocket();
    const { token, source } = currentToken();
    if (!token) {
      this.setStatus("signed-out", "token needed");
      this.hooks.login(true, "Paste the bearer token of your account (the one the CLI uses). It stays in this browser.");
      this.signOut();
      return;
    }
    this.setStatus("connecting", "connecting…");
    let res: Response;
    try {
      res = await fetch("/agents", { headers: { authorization: `Bearer ${token}` }, cache: "no-store" });
    } catch {
      this.setReachable(false);
      return this.scheduleReconnect();
    }
    if (res.status === 401) {
      this.setReachable(true);
      this.signOut();
      this.setStatus("signed-out", "token refused");
      this.hooks.login(true, source === "dev"
        ? "This coordinator does not accept the local dev token. Paste your account's token."
        : "The coordinator refused this token. Paste the token of your account.");
      return;
    }
    if (!res.ok) {
      this.setReachable(false);
      return this.scheduleReconnect();
    }
    // GET /agents answers the wire's agent list (http-responses.ts agentListSchema).
    const body = (await res.json()) as { agents: DirectoryEntry[] };
    this.state.scopes = (await this.api.scopes(token)) ?? this.state.scopes;
    this.state.unreachable = false;
    this.applyFrame({ type: "directory", agents: body.agents });
    for (const entry of this.state.agents.values()) this.hooks.arrived(entry);
    this.openSocket(token, source);
  }

  private signOut(): void {
    this.state.agents.clear();
    this.state.scopes = [];
    this.state.signedOut = true;
    // The form is where a token goes: open it, whatever state it was left in.
    this.hooks.login(true);
    this.hooks.render();
  }

  private openSocket(token: string, source: string): void {
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/observe`;
    const ws = new WebSocket(url, ["baton", tokenProtocol(token)]);
    this.socket = ws;
    this.lastFrameAt = Date.now();
    ws.onopen = () => {
      this.attempt = 0;
      const readOnly = !Object.values(abilities(this.state.scopes)).some(Boolean);
      this.setStatus("live", ["live", source === "dev" ? "local dev token" : null, readOnly ? "read-only token" : null].filter(Boolean).join(" · "));
      this.pingTimer = window.setInterval(() => {
        if (Date.now() - this.lastFrameAt > SILENCE_LIMIT_MS) {
          this.dropSocket();
          return this.scheduleReconnect();
        }
        ws.send('{"type":"ping"}');
      }, PING_EVERY_MS);
    };
    ws.onmessage = (event: MessageEvent<string>) => {
      this.lastFrameAt = Date.now();
      try {
        // The observer socket carries the wire's observer frames (server-frames.ts); anything else changes nothing.
        this.applyFrame(JSON.parse(event.data) as ObserverFrame);
      } catch {
        // a frame this page does not understand changes nothing
      }
    };
    ws.onclose = () => {
      if (this.socket !== ws) return;
      this.dropSocket();
      this.scheduleReconnect();
    };
  }
}
