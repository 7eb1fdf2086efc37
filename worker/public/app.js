// The dashboard's live side: keeps the token in local storage, checks it, holds one observer
// WebSocket to /observe (token in the subprotocol list, never in the URL), applies directory,
// presence and agent_gone frames, and reconnects with backoff. A failed reconnect is shown as
// "coordinator unreachable", never as an empty account. Rendering lives in render.js, the open
// questions in person.js. What the token may do comes from GET /whoami (a coordinator without it,
// 404, grants every scope): a read-only token sees no button that would change anything.
import { Api, currentToken, DEV_TOKEN, TOKEN_KEY, tokenProtocol } from "./api.js";
import { Confirmations } from "./confirm.js";
import { MessageLoader } from "./messages.js";
import { linkTarget, PersonQueue } from "./person.js";
import { AgentList } from "./render.js";
import { clock, keptTransitions, RANGES, WINDOW_MS } from "./timeline.js";

const RANGE_KEY = "baton.range";
const COMPACT_KEY = "baton.compact";
const BACKOFF = { minMs: 500, maxMs: 15_000, factor: 2, jitter: 0.2 };
const PING_EVERY_MS = 20_000;
const SILENCE_LIMIT_MS = 50_000;

const $ = (id) => document.getElementById(id);
const view = {
  status: $("status"), agents: $("agents"), login: $("login"), input: $("token-input"), hint: $("login-hint"),
  toggle: $("token-toggle"), banner: $("link-banner"), ranges: $("ranges"), compact: $("compact-toggle"),
  person: $("person"),
};

const state = {
  agents: new Map(), machines: new Map(), transitions: new Map(), clockOffset: 0, loaded: false,
  signedOut: false, unreachable: false, unreachableSince: 0,
  /** The token's scopes from /whoami; none until it answered, so no button shows before it is known. */
  scopes: [],
  windowMs: RANGES.find((r) => String(r.ms) === localStorage.getItem(RANGE_KEY))?.ms ?? WINDOW_MS,
};
let socket = null;
let attempt = 0;
let retryTimer = 0;
let pingTimer = 0;
let lastFrameAt = 0;

function setStatus(kind, text) {
  view.status.dataset.state = kind;
  view.status.textContent = text;
}

function showLogin(open, message) {
  view.login.hidden = !open;
  view.toggle.setAttribute("aria-expanded", String(open));
  if (message) view.hint.textContent = message;
  if (open) view.input.focus();
}

/** What the token may do: answer questions (answer or admin), change controls and retry (admin), send. */
function can() {
  const has = (scope) => state.scopes.includes(scope) || state.scopes.includes("admin");
  return { answer: has("answer"), admin: has("admin"), send: has("send") };
}

const api = new Api(() => connect());

const confirmations = new Confirmations(() => render());
const fetchJson = (path) => api.json(path);
const loader = new MessageLoader(fetchJson, () => render());
const person = new PersonQueue(view.person, {
  fetchJson,
  can,
  changed: () => render(),
  confirmations,
  decide: (agent, id, route, body) => api.post(agent, `messages/${id}/${route}`, body, "answered"),
  preview: (agent, id) => {
    const full = loader.get(agent)?.find((m) => m.id === id);
    if (full) return full.text;
    const recent = state.agents.get(agent)?.recent_messages?.find((m) => m.id === id);
    return recent ? `${recent.preview}${recent.preview.length >= 80 ? "…" : ""}` : null;
  },
});
window.addEventListener("hashchange", () => {
  person.setTarget(linkTarget(location.hash));
  render();
});
const list = new AgentList(view.agents, {
  ui: () => ({ can: can(), confirmations, act: (...args) => api.post(...args) }),
  send: (agent, text) => api.send(agent, text),
  messages: (agent) => loader.get(agent),
  visible: (agent) => {
    const entry = state.agents.get(agent);
    if (entry) loader.refresh(entry);
  },
});

function render() {
  const entries = [...state.agents.values()];
  list.render(entries, state);
  person.render(entries, state);
  person.tick(Date.now() + state.clockOffset);
  view.agents.setAttribute("aria-busy", String(!state.loaded && !state.unreachable));
  view.banner.hidden = !(state.unreachable && state.agents.size > 0);
  if (!view.banner.hidden) {
    view.banner.textContent = `Coordinator unreachable since ${clock(state.unreachableSince)}: `
      + "the agents below are as last seen; retrying.";
  }
}

function setReachable(reachable) {
  if (reachable === !state.unreachable) return;
  state.unreachable = !reachable;
  state.unreachableSince = reachable ? 0 : Date.now();
  render();
}

function remember(entry) {
  const known = state.machines.get(entry.agent) ?? new Map();
  for (const c of entry.connections) if (c.claim_seq !== null) known.set(c.claim_seq, c.machine);
  if (entry.holder) known.set(entry.holder.claim_seq, entry.holder.machine);
  state.machines.set(entry.agent, known);
  state.transitions.set(entry.agent, keptTransitions(state.transitions.get(entry.agent), entry.transitions, Date.now() + state.clockOffset - WINDOW_MS));
}

function visibleRefresh(entry) {
  if (list.onScreen.has(entry.agent)) loader.refresh(entry);
}

function applyFrame(frame) {
  if (typeof frame.server_time === "number") state.clockOffset = frame.server_time - Date.now();
  if (frame.type === "directory") {
    state.agents = new Map(frame.agents.map((a) => [a.agent, a]));
    state.loaded = true;
    state.signedOut = false;
    for (const entry of state.agents.values()) remember(entry);
  } else if (frame.type === "presence") {
    state.agents.set(frame.presence.agent, frame.presence);
    remember(frame.presence);
  } else if (frame.type === "agent_gone") {
    state.agents.delete(frame.agent);
    state.transitions.delete(frame.agent);
    loader.forget(frame.agent);
  } else {
    return;
  }
  render();
  if (frame.type === "presence") visibleRefresh(frame.presence);
}

function backoffDelay(n) {
  const base = Math.min(BACKOFF.maxMs, BACKOFF.minMs * BACKOFF.factor ** n);
  return Math.round(base * (1 - BACKOFF.jitter + Math.random() * 2 * BACKOFF.jitter));
}

function scheduleReconnect() {
  clearTimeout(retryTimer);
  const delay = backoffDelay(attempt++);
  const until = Date.now() + delay;
  const what = () => (state.unreachable ? "coordinator unreachable · retrying in" : "reconnecting in");
  setStatus("retrying", `${what()} ${Math.ceil(delay / 1000)}s`);
  retryTimer = setTimeout(connect, delay);
  const countdown = setInterval(() => {
    if (view.status.dataset.state !== "retrying") return clearInterval(countdown);
    const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    view.status.textContent = `${what()} ${left}s`;
    if (left === 0) clearInterval(countdown);
  }, 250);
}

function dropSocket() {
  clearInterval(pingTimer);
  if (!socket) return;
  const old = socket;
  socket = null;
  old.onopen = old.onmessage = old.onclose = old.onerror = null;
  try { old.close(1000, "dashboard reconnecting"); } catch { /* already closed */ }
}

/** Checks the token over HTTP first: a WebSocket refused with 401 looks like any network error. */
async function connect() {
  clearTimeout(retryTimer);
  dropSocket();
  const { token, source } = currentToken();
  if (!token) {
    setStatus("signed-out", "token needed");
    showLogin(true, "Paste the bearer token of your account (the one the CLI uses). It stays in this browser.");
    signOut();
    return;
  }
  setStatus("connecting", "connecting…");
  let res;
  try {
    res = await fetch("/agents", { headers: { authorization: `Bearer ${token}` }, cache: "no-store" });
  } catch {
    setReachable(false);
    return scheduleReconnect();
  }
  if (res.status === 401) {
    setReachable(true);
    signOut();
    setStatus("signed-out", "token refused");
    showLogin(true, source === "dev"
      ? "This coordinator does not accept the local dev token. Paste your account's token."
      : "The coordinator refused this token. Paste the token of your account.");
    return;
  }
  if (!res.ok) {
    setReachable(false);
    return scheduleReconnect();
  }
  const body = await res.json();
  state.scopes = (await api.scopes(token)) ?? state.scopes;
  state.unreachable = false;
  applyFrame({ type: "directory", agents: body.agents });
  for (const entry of state.agents.values()) visibleRefresh(entry);
  openSocket(token, source);
}

function signOut() {
  state.agents.clear();
  state.scopes = [];
  state.signedOut = true;
  // The form is where a token goes: open it, whatever state it was left in.
  showLogin(true);
  render();
}

function openSocket(token, source) {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/observe`;
  const ws = new WebSocket(url, ["baton", tokenProtocol(token)]);
  socket = ws;
  lastFrameAt = Date.now();
  ws.onopen = () => {
    attempt = 0;
    const readOnly = !Object.values(can()).some(Boolean);
    setStatus("live", ["live", source === "dev" ? "local dev token" : null, readOnly ? "read-only token" : null].filter(Boolean).join(" · "));
    pingTimer = setInterval(() => {
      if (Date.now() - lastFrameAt > SILENCE_LIMIT_MS) {
        dropSocket();
        return scheduleReconnect();
      }
      ws.send('{"type":"ping"}');
    }, PING_EVERY_MS);
  };
  ws.onmessage = (event) => {
    lastFrameAt = Date.now();
    try {
      applyFrame(JSON.parse(event.data));
    } catch {
      // a frame this page does not understand changes nothing
    }
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    dropSocket();
    scheduleReconnect();
  };
}

for (const range of RANGES) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "quiet";
  button.textContent = range.label;
  button.dataset.range = String(range.ms);
  button.setAttribute("aria-pressed", String(range.ms === state.windowMs));
  button.addEventListener("click", () => {
    state.windowMs = range.ms;
    localStorage.setItem(RANGE_KEY, String(range.ms));
    for (const b of view.ranges.children) b.setAttribute("aria-pressed", String(b === button));
    render();
  });
  view.ranges.append(button);
}

/** Compact: a line per agent, for accounts with many; each card still opens on its own. */
function showCompact(on) {
  view.agents.classList.toggle("compact", on);
  view.compact.setAttribute("aria-pressed", String(on));
  if (on) localStorage.setItem(COMPACT_KEY, "1");
  else localStorage.removeItem(COMPACT_KEY);
}
view.compact.addEventListener("click", () => showCompact(!view.agents.classList.contains("compact")));
showCompact(localStorage.getItem(COMPACT_KEY) === "1");

view.toggle.addEventListener("click", () => showLogin(view.login.hidden));
view.login.addEventListener("submit", (event) => {
  event.preventDefault();
  const token = view.input.value.trim();
  if (!token) return;
  localStorage.setItem(TOKEN_KEY, token);
  view.input.value = "";
  showLogin(false);
  attempt = 0;
  connect();
});
$("token-forget").addEventListener("click", () => {
  localStorage.removeItem(TOKEN_KEY);
  view.input.value = "";
  attempt = 0;
  connect();
});
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible" && !socket && view.status.dataset.state === "retrying") {
    attempt = 0;
    connect();
  }
});
setInterval(() => {
  list.tick(state);
  person.tick(Date.now() + state.clockOffset);
  // A running message's heartbeats and steps come with no frame: cards on screen fetch them now and then.
  for (const agent of list.onScreen) {
    const entry = state.agents.get(agent);
    if (entry && !state.unreachable) loader.poll(entry, Date.now());
  }
}, 1000);

if (currentToken().source === "dev") view.hint.textContent = `No token saved: using the local dev token "${DEV_TOKEN}" because this coordinator runs on loopback.`;
connect();
