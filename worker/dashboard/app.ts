// The dashboard's entry: finds the page's elements, keeps the token in local storage, and wires
// the feed (session.ts: token check, observer socket, reconnects) to the views: the agent cards
// (render.ts), the open questions (person.ts), the status line and the token form, the timeline's
// range and the compact view. A read-only token sees no button that would change anything.
import { Api, currentToken, DEV_TOKEN, TOKEN_KEY } from "./api.ts";
import { Confirmations } from "./confirm.ts";
import { byId } from "./dom.ts";
import { GrantsPanel } from "./grants.ts";
import type { GrantList } from "../wire/grants.ts";
import { MessageLoader } from "./message-loader.ts";
import { ScheduleLoader } from "./schedules.ts";
import type { ScheduleList } from "../wire/schedules.ts";
import { LiveOutputs } from "./output-view.ts";
import { linkTarget, PersonQueue } from "./person.ts";
import { AgentList } from "./render.ts";
import { Feed, type StatusKind } from "./session.ts";
import { abilities, type DirectoryEntry, type PageState } from "./state.ts";
import { clock, RANGES, WINDOW_MS } from "./timeline.ts";
import type { MessagePage, MessageView } from "../wire/http-responses.ts";
import type { OutputPage } from "../wire/output.ts";

const RANGE_KEY = "baton.range";
const COMPACT_KEY = "baton.compact";

const view = {
  status: byId("status"), agents: byId("agents"), login: byId<HTMLFormElement>("login"), input: byId<HTMLInputElement>("token-input"),
  hint: byId("login-hint"), toggle: byId("token-toggle"), banner: byId("link-banner"), ranges: byId("ranges"), compact: byId("compact-toggle"),
  person: byId("person"), forget: byId("token-forget"), grantsToggle: byId("grants-toggle"), grants: byId("grants"),
};

const state: PageState = {
  agents: new Map(), machines: new Map(), transitions: new Map(), clockOffset: 0, loaded: false,
  signedOut: false, unreachable: false, unreachableSince: 0,
  scopes: [],
  windowMs: RANGES.find((r) => String(r.ms) === localStorage.getItem(RANGE_KEY))?.ms ?? WINDOW_MS,
};

function setStatus(kind: StatusKind, text: string): void {
  view.status.dataset.state = kind;
  view.status.textContent = text;
}

function showLogin(open: boolean, message?: string): void {
  view.login.hidden = !open;
  view.toggle.setAttribute("aria-expanded", String(open));
  if (message) view.hint.textContent = message;
  if (open) view.input.focus();
}

const can = () => abilities(state.scopes);
const api = new Api(() => void feed.connect());
const confirmations = new Confirmations(() => render());
const loader = new MessageLoader((path) => api.json<MessagePage>(path), () => render());
const schedules = new ScheduleLoader((path) => api.json<ScheduleList>(path), () => render());
const person = new PersonQueue(view.person, {
  fetchJson: (path) => api.json<MessageView>(path),
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
const grants = new GrantsPanel(view.grants, {
  list: () => api.json<GrantList>("/grants"),
  revoke: (id) => api.remove(`/grants/${encodeURIComponent(id)}`, "revoked"),
});
view.grantsToggle.addEventListener("click", () => void grants.toggle());
const outputs = new LiveOutputs((path) => api.json<OutputPage>(path));
const list = new AgentList(view.agents, {
  ui: () => ({
    can: can(), confirmations, act: (agent, route, body, done) => api.post(agent, route, body, done),
    output: (agent, id, status) => outputs.pane(agent, id, status),
  }),
  send: (agent, text) => api.send(agent, text),
  messages: (agent) => loader.get(agent),
  schedules: (agent) => schedules.get(agent),
  visible: (agent) => {
    const entry = state.agents.get(agent);
    if (entry) visibleRefresh(entry);
  },
});

function visibleRefresh(entry: DirectoryEntry): void {
  if (!list.onScreen.has(entry.agent)) return;
  loader.refresh(entry);
  schedules.refresh(entry, Date.now());
}

const feed = new Feed(state, api, {
  status: setStatus,
  login: showLogin,
  render: () => render(),
  arrived: visibleRefresh,
  gone: (agent) => {
    loader.forget(agent);
    schedules.forget(agent);
  },
});

function render(): void {
  const entries = [...state.agents.values()];
  list.render(entries, state);
  outputs.restore();
  person.render(entries, state);
  person.tick(Date.now() + state.clockOffset);
  // Only an admin token lists and revokes grants.
  view.grantsToggle.hidden = !can().admin;
  if (!can().admin) view.grants.hidden = true;
  view.agents.setAttribute("aria-busy", String(!state.loaded && !state.unreachable));
  view.banner.hidden = !(state.unreachable && state.agents.size > 0);
  if (!view.banner.hidden) {
    view.banner.textContent = `Coordinator unreachable since ${clock(state.unreachableSince)}: `
      + "the agents below are as last seen; retrying.";
  }
}

window.addEventListener("hashchange", () => {
  person.setTarget(linkTarget(location.hash));
  render();
});

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
function showCompact(on: boolean): void {
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
  feed.restart();
});
view.forget.addEventListener("click", () => {
  localStorage.removeItem(TOKEN_KEY);
  view.input.value = "";
  feed.restart();
});
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") feed.visible();
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
void feed.connect();
