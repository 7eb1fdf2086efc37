// The dashboard's HTTP side: which token the page uses (the one saved in this browser, or the
// local dev token on loopback), the observer socket's subprotocol that carries it (never the URL),
// and the requests the page makes with it. Every call answers `{ ok, text }` or null, never
// throws: a coordinator out of reach is an answer like any other.
import type { Scope } from "../wire/token-scopes.ts";

export const TOKEN_KEY = "baton.token";
export const DEV_TOKEN = "baton-dev-token";
/** Every scope a token may have; a coordinator without GET /whoami grants them all. */
const ALL_SCOPES: Scope[] = ["serve", "send", "answer", "admin", "read"];

/** What the page says after a request: whether it went through and the sentence to show. */
export interface Answer {
  ok: boolean;
  text: string;
  status?: number;
  body?: unknown;
}

export interface CurrentToken {
  token: string | null;
  source: "stored" | "dev" | "none";
}

function isLoopback(): boolean {
  return ["localhost", "127.0.0.1", "[::1]"].includes(location.hostname);
}

/** The stored token, or the local dev token when this page is served by a coordinator on loopback. */
export function currentToken(): CurrentToken {
  const stored = localStorage.getItem(TOKEN_KEY);
  if (stored) return { token: stored, source: "stored" };
  return isLoopback() ? { token: DEV_TOKEN, source: "dev" } : { token: null, source: "none" };
}

export function tokenProtocol(token: string): string {
  const bytes = new TextEncoder().encode(token);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return "baton.token." + btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A refusal's sentence from the coordinator's error body, if it has one. */
function messageOf(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || !("message" in body)) return undefined;
  return typeof body.message === "string" ? body.message : undefined;
}

/** The coordinator's requests, with the token; `refused()` runs when it answers 401 (the page checks its token again). */
export class Api {
  constructor(private readonly refused: () => void) {}

  /**
   * GET with the token; null on any failure (the caller simply tries again at the next change).
   * The body is what the coordinator's wire says the path answers (worker/wire/http-responses.ts):
   * the page trusts the coordinator that served it, and checks no schema at run time.
   */
  async json<T>(path: string): Promise<T | null> {
    const { token } = currentToken();
    if (!token) return null;
    try {
      const res = await fetch(path, { headers: { authorization: `Bearer ${token}` }, cache: "no-store" });
      return res.ok ? ((await res.json()) as T) : null;
    } catch {
      return null;
    }
  }

  /** What this token may do, from GET /whoami: all scopes on a coordinator without it (404), null when it cannot tell. */
  async scopes(token: string): Promise<string[] | null> {
    let res: Response;
    try {
      res = await fetch("/whoami", { headers: { authorization: `Bearer ${token}` }, cache: "no-store" });
    } catch {
      return null;
    }
    if (res.status === 404) return ALL_SCOPES;
    if (!res.ok) return null;
    const body: unknown = await res.json().catch(() => null);
    const scopes = typeof body === "object" && body !== null && "scopes" in body ? body.scopes : undefined;
    return Array.isArray(scopes) ? scopes.filter((s): s is string => typeof s === "string") : [];
  }

  async send(agent: string, text: string): Promise<Answer> {
    const { token } = currentToken();
    let res: Response;
    try {
      res = await fetch(`/agents/${encodeURIComponent(agent)}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ text }),
      });
    } catch {
      return { ok: false, text: "not sent: the coordinator is unreachable" };
    }
    const body: unknown = await res.json().catch(() => ({}));
    // Its status changes at once (handed out, run, parked): the card shows it live, so no stale status here.
    if (res.status === 201) {
      const id = typeof body === "object" && body !== null && "id" in body ? body.id : undefined;
      return { ok: true, text: `sent as #${id}; follow it on the card` };
    }
    if (res.status === 401) this.refused();
    return { ok: false, text: `not sent: ${messageOf(body) ?? `HTTP ${res.status}`}` };
  }

  /** DELETE a path with the token (revoking a grant): `{ ok, text }` as post() answers. */
  async remove(path: string, done: string): Promise<Answer> {
    const { token } = currentToken();
    let res: Response;
    try {
      res = await fetch(path, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
    } catch {
      return { ok: false, text: "not sent: the coordinator is unreachable" };
    }
    const answer: unknown = await res.json().catch(() => ({}));
    if (res.status === 401) this.refused();
    return res.ok ? { ok: true, text: done } : { ok: false, status: res.status, text: messageOf(answer) ?? `refused: HTTP ${res.status}` };
  }

  /** POST to one of the agent's routes (`x-baton-via: page`); `{ ok, text }`, text the coordinator's sentence on refusal. */
  async post(agent: string, route: string, body: object, done: string): Promise<Answer> {
    const { token } = currentToken();
    let res: Response;
    try {
      res = await fetch(`/agents/${encodeURIComponent(agent)}/${route}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-baton-via": "page" },
        body: JSON.stringify(body),
      });
    } catch {
      return { ok: false, text: "not sent: the coordinator is unreachable" };
    }
    const answer: unknown = await res.json().catch(() => ({}));
    if (res.status === 401) this.refused();
    return res.ok ? { ok: true, text: done, body: answer } : { ok: false, status: res.status, text: messageOf(answer) ?? `refused: HTTP ${res.status}` };
  }
}
