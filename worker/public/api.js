// The dashboard's HTTP side: which token the page uses (the one saved in this browser, or the
// local dev token on loopback), the observer socket's subprotocol that carries it (never the URL),
// and the requests the page makes with it. Every call answers `{ ok, text }` or null, never
// throws: a coordinator out of reach is an answer like any other.

export const TOKEN_KEY = "baton.token";
export const DEV_TOKEN = "baton-dev-token";
/** Every scope a token may have; a coordinator without GET /whoami grants them all. */
const ALL_SCOPES = ["serve", "send", "answer", "admin", "read"];

function isLoopback() {
  return ["localhost", "127.0.0.1", "[::1]"].includes(location.hostname);
}

/** The stored token, or the local dev token when this page is served by a coordinator on loopback. */
export function currentToken() {
  const stored = localStorage.getItem(TOKEN_KEY);
  if (stored) return { token: stored, source: "stored" };
  return isLoopback() ? { token: DEV_TOKEN, source: "dev" } : { token: null, source: "none" };
}

export function tokenProtocol(token) {
  const bytes = new TextEncoder().encode(token);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return "baton.token." + btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The coordinator's requests, with the token; `refused()` runs when it answers 401 (the page checks its token again). */
export class Api {
  constructor(refused) {
    this.refused = refused;
  }

  /** GET with the token; null on any failure (the caller simply tries again at the next change). */
  async json(path) {
    const { token } = currentToken();
    if (!token) return null;
    try {
      const res = await fetch(path, { headers: { authorization: `Bearer ${token}` }, cache: "no-store" });
      return res.ok ? await res.json() : null;
    } catch {
      return null;
    }
  }

  /** What this token may do, from GET /whoami: all scopes on a coordinator without it (404), null when it cannot tell. */
  async scopes(token) {
    let res;
    try {
      res = await fetch("/whoami", { headers: { authorization: `Bearer ${token}` }, cache: "no-store" });
    } catch {
      return null;
    }
    if (res.status === 404) return ALL_SCOPES;
    if (!res.ok) return null;
    const body = await res.json().catch(() => null);
    return Array.isArray(body?.scopes) ? body.scopes : [];
  }

  async send(agent, text) {
    const { token } = currentToken();
    let res;
    try {
      res = await fetch(`/agents/${encodeURIComponent(agent)}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ text }),
      });
    } catch {
      return { ok: false, text: "not sent: the coordinator is unreachable" };
    }
    const body = await res.json().catch(() => ({}));
    // Its status changes at once (handed out, run, parked): the card shows it live, so no stale status here.
    if (res.status === 201) return { ok: true, text: `sent as #${body.id}; follow it on the card` };
    if (res.status === 401) this.refused();
    return { ok: false, text: `not sent: ${body.message ?? `HTTP ${res.status}`}` };
  }

  /** POST to one of the agent's routes (`x-baton-via: page`); `{ ok, text }`, text the coordinator's sentence on refusal. */
  async post(agent, route, body, done) {
    const { token } = currentToken();
    let res;
    try {
      res = await fetch(`/agents/${encodeURIComponent(agent)}/${route}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-baton-via": "page" },
        body: JSON.stringify(body),
      });
    } catch {
      return { ok: false, text: "not sent: the coordinator is unreachable" };
    }
    const answer = await res.json().catch(() => ({}));
    if (res.status === 401) this.refused();
    return res.ok ? { ok: true, text: done, body: answer } : { ok: false, status: res.status, text: answer.message ?? `refused: HTTP ${res.status}` };
  }
}
