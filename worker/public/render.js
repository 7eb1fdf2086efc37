// Turns directory entries into agent cards. A card is kept per agent and only its header and body
// are rebuilt on a change, so the send box (send.js) keeps what is being typed and its focus. Ages are
// server-time anchors in data attributes, ticked once a second with the timelines.
import { el } from "./dom.js";
import { actionsBar, controlsStrip, lineOrder, runnerBadges, waitReason } from "./controls.js";
import { messagesBlock } from "./messages.js";
import { sendControl } from "./send.js";
import { clock, REASON_NOTES, REASONS, tickTimelines, timeline } from "./timeline.js";

const TRANSITIONS_SHOWN = 6;

export function formatAge(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** An age that ticks: `data-since` is a server timestamp, `data-ttl` (optional) colours heartbeats. */
function age(sinceServerMs, ttlMs) {
  return el("span", { class: "age", "data-since": Math.round(sinceServerMs), "data-ttl": ttlMs });
}

function tickAges(root, now) {
  for (const node of root.querySelectorAll("[data-since]")) {
    const elapsed = now - Number(node.dataset.since);
    node.textContent = formatAge(elapsed);
    if (node.dataset.ttl) {
      const ttl = Number(node.dataset.ttl);
      node.dataset.health = elapsed > ttl ? "stale" : elapsed > ttl / 2 ? "late" : "ok";
    }
  }
}

/** A measured age ticks on from the report; the directory measures none, so only its true bound is shown. */
function heartbeat(entry, conn, ttlMs) {
  if (conn.heartbeat_age_seconds === null || conn.heartbeat_age_seconds === undefined) {
    return [" · heard within the last ", formatAge(ttlMs)];
  }
  return [" · heartbeat ", age(entry.reported_at - conn.heartbeat_age_seconds * 1000, ttlMs), " ago"];
}

/** Turns a card "unknown" once its agent's object stopped vouching for it (checked on every tick). */
function tickConfirmations(root, now) {
  for (const article of root.querySelectorAll("article.agent[data-confirmed-until]")) {
    article.classList.toggle("unconfirmed", now > Number(article.dataset.confirmedUntil));
  }
}

/**
 * A claim with its machine: named by the transition itself when it carries `from_machine` /
 * `to_machine`, else by a current connection, else by what this page has seen before.
 */
function claimLabel(entry, claim, known, named) {
  if (claim === null) return "nobody";
  const machine = named ?? entry.connections.find((c) => c.claim_seq === claim)?.machine ?? known?.get(claim);
  return machine ? `${machine} #${claim}` : `#${claim}`;
}

function connectionRow(entry, conn, ttlMs, label) {
  return el("li", { class: `conn ${label}`, "data-role": label, "data-claim": conn.claim_seq ?? undefined, "data-drained": conn.drained || undefined },
    el("span", { class: "machine" }, conn.machine),
    runnerBadges(entry, conn),
    el("span", { class: "meta" },
      conn.claim_seq === null ? "not claiming" : `claim #${conn.claim_seq}`,
      heartbeat(entry, conn, ttlMs)));
}

function pool(entry) {
  return entry.work?.mode === "pool";
}

function noHolderText(entry) {
  const claiming = entry.connections.filter((c) => c.claim_seq !== null);
  if (claiming.length > 0 && claiming.every((c) => c.drained)) return "nobody holds the lease: every runner is drained";
  return "nobody holds the lease";
}

function holderBlock(entry, ttlMs) {
  const holder = entry.holder;
  const conn = holder ? entry.connections.find((c) => c.claim_seq === holder.claim_seq) : null;
  if (!holder) {
    return el("div", { class: "holder none", "data-role": "no-holder" },
      el("span", { class: "label" }, "Holder"),
      el("span", { class: "machine" }, noHolderText(entry)));
  }
  return el("div", { class: `holder${conn?.drained ? " draining" : ""}`, "data-role": "holder", "data-drained": conn?.drained || undefined },
    el("span", { class: "label" }, pool(entry) ? "Holder (serve lease; in pool mode every runner takes messages)" : "Holder"),
    el("span", { class: "machine" }, holder.machine),
    conn ? runnerBadges(entry, conn) : null,
    el("span", { class: "meta" },
      `claim #${holder.claim_seq} · fence ${entry.fence} · since ${clock(holder.since)} (`, age(holder.since), ")",
      conn ? heartbeat(entry, conn, ttlMs) : null,
      conn?.drained ? " · hands the lease on when its run ends" : null));
}

function rowLabel(conn) {
  return conn.claim_seq === null ? "watcher" : conn.drained ? "drained" : "standby";
}

/**
 * Who waits for the lease. "No standby" is said only while someone holds it: with nobody holding
 * it the holder block already says so, and "if the holder goes" would speak of nobody.
 */
function standbyBlock(entry, ttlMs) {
  const waiting = lineOrder(entry.connections.filter((c) => !c.held));
  const inLine = waiting.filter((c) => rowLabel(c) === "standby").length;
  const none = inLine === 0 && entry.holder ? el("p", { class: "empty-line", "data-role": "no-standby" }, "No standby: if the holder goes, nobody takes over.") : null;
  if (waiting.length === 0) return none;
  const label = pool(entry) ? `Other runners, taking messages too (${entry.serve_standbys})`
    : entry.holder ? `In line (${entry.serve_standbys})` : `Connected runners (${waiting.length})`;
  return el("div", { class: "standbys" },
    // In pool mode every runner takes messages; only the serve lease has a line.
    el("span", { class: "label" }, label),
    none,
    el("ol", {}, waiting.map((c) => connectionRow(entry, c, ttlMs, rowLabel(c)))));
}

/** The card in one line, shown in the compact view: who holds it, who waits, what work waits. */
function summaryLine(entry) {
  const inLine = entry.connections.filter((c) => !c.held && rowLabel(c) === "standby").length;
  const counts = Object.entries(entry.work?.counts ?? {}).filter(([, n]) => n > 0).map(([status, n]) => `${n} ${status}`);
  const parts = [
    entry.holder ? `held by ${entry.holder.machine}` : noHolderText(entry),
    entry.holder || inLine > 0 ? `${inLine} in line` : null,
    ...counts,
  ].filter(Boolean);
  return el("p", { class: "summary", "data-role": "summary" }, parts.join(" · "));
}

function transitionsBlock(entry, transitions, known, open) {
  const rows = transitions.slice().sort((a, b) => b.at - a.at || b.fence - a.fence).slice(0, TRANSITIONS_SHOWN);
  if (rows.length === 0) return null;
  return el("details", { class: "history", open, "data-key": "history" },
    el("summary", {}, "Lease history"),
    el("ol", {}, rows.map((t) => el("li", { "data-reason": t.reason },
      el("time", { datetime: new Date(t.at).toISOString() }, clock(t.at)),
      el("span", { class: `reason ${t.reason}`, title: REASON_NOTES[t.reason] }, REASONS[t.reason] ?? t.reason),
      el("span", { class: "move" }, t.reason === "claimed" && t.from_claim === null
        ? `→ ${claimLabel(entry, t.to_claim, known, t.to_machine)}`
        : `${claimLabel(entry, t.from_claim, known, t.from_machine)} → ${claimLabel(entry, t.to_claim, known, t.to_machine)}`),
      el("span", { class: "fence" }, `fence ${t.fence}`)))));
}

function emptyState(kind, state) {
  if (kind === "signed-out") {
    return el("section", { class: "empty", "data-role": "signed-out" }, el("h2", {}, "Sign in to see your agents"), el("p", {}, "Paste your token in the form at the top of the page and save it."));
  }
  if (kind === "unreachable") {
    return el("section", { class: "empty unreachable", "data-role": "unreachable" },
      el("h2", {}, "Coordinator unreachable"),
      el("p", {}, `This page cannot reach the coordinator at ${location.host}`,
        state.unreachableSince ? ` (since ${clock(state.unreachableSince)})` : "", "; it keeps retrying."),
      el("p", { class: "hint" }, "Agents may still be running: this says nothing about them, only about the link to the coordinator."));
  }
  return el("section", { class: "empty", "data-role": "no-agents" },
    el("h2", {}, "No agent is connected"),
    el("p", {}, "Start the same agent on every machine that may run it; one holds the lease, the others wait in line:"),
    el("pre", {}, el("code", {}, "npx baton serve reviewer -- ./run-agent.sh")),
    el("p", { class: "hint" }, "Against a deployed coordinator add ", el("code", {}, "--url https://…"),
      ". Agents appear here the moment they connect."));
}

/**
 * The action control (confirm.js) that has the focus inside `root`, by its key and role: a card's
 * body is rebuilt on every presence frame, and a person confirming must not lose their place.
 */
function focusedControl(root) {
  const active = document.activeElement;
  const holder = active && root.contains(active) ? active.closest("[data-confirm-key]") : null;
  return holder ? { key: holder.dataset.confirmKey, role: active === holder ? null : active.dataset.role ?? null } : null;
}

function refocus(root, focused) {
  if (!focused) return;
  const holder = [...root.querySelectorAll("[data-confirm-key]")].find((n) => n.dataset.confirmKey === focused.key);
  const target = focused.role ? holder?.querySelector(`[data-role="${focused.role}"]`) : holder;
  target?.focus();
}

/**
 * The list of agent cards under one root. `hooks`: send(agent, text), visible(agent), messages(agent),
 * and ui() giving `{ can, confirmations, act }` for the actions the token may take.
 */
export class AgentList {
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.cards = new Map();
    this.closed = new Set();
    /** Agents whose card is on screen: only those fetch their full messages. */
    this.onScreen = new Set();
    this.watcher = new IntersectionObserver((seen) => {
      for (const e of seen) {
        const agent = e.target.dataset.agent;
        if (!e.isIntersecting) this.onScreen.delete(agent);
        else if (!this.onScreen.has(agent)) {
          this.onScreen.add(agent);
          hooks.visible(agent);
        }
      }
    });
  }

  card(agent) {
    let card = this.cards.get(agent);
    if (card) return card;
    const article = el("article", { class: "agent", "data-agent": agent });
    card = { article, header: el("header"), body: el("div", { class: "body" }), composer: sendControl(agent, this.hooks.send) };
    article.append(card.header, card.body, card.composer);
    // In the compact view the name opens or closes this one card; in the full view it does nothing.
    card.header.addEventListener("click", (event) => {
      const button = event.target.closest('[data-role="open-card"]');
      if (!button) return;
      const open = article.classList.toggle("open");
      button.setAttribute("aria-expanded", String(open));
    });
    article.addEventListener("toggle", (event) => {
      const key = `${agent}:${event.target.dataset.key}`;
      if (event.target.open) this.closed.delete(key);
      else this.closed.add(key);
    }, true);
    this.cards.set(agent, card);
    this.watcher.observe(article);
    return card;
  }

  fill(entry, state) {
    const card = this.card(entry.agent);
    const ttlMs = entry.heartbeat_ttl_seconds * 1000;
    const transitions = state.transitions.get(entry.agent) ?? entry.transitions;
    const paused = Boolean(entry.controls?.paused);
    card.article.classList.toggle("paused", paused);
    // Only an entry with connections claims something live that can go stale; one without is always confirmed.
    if (entry.confirmed_until && entry.connection_count > 0) card.article.dataset.confirmedUntil = String(entry.confirmed_until);
    else delete card.article.dataset.confirmedUntil;
    card.article.classList.toggle("unconfirmed", entry.confirmed === false);
    const ui = { ...this.hooks.ui(), pool: pool(entry) };
    // A token that may not send sees no send box.
    card.composer.hidden = !ui.can.send;
    card.header.replaceChildren(
      el("div", { class: "title" },
        el("h2", {}, el("button", { type: "button", class: "name", "data-role": "open-card", "aria-expanded": String(card.article.classList.contains("open")) }, entry.agent)),
        paused ? el("span", { class: "chip paused", "data-role": "paused" }, "paused") : null,
        el("span", { class: "chip unknown", "data-role": "unknown", title: "the agent's coordinator object has not confirmed this within 3 heartbeat TTLs: it is the last known state, not the current one" }, "unknown")),
      el("span", { class: "counts" },
        `${entry.connection_count} connection${entry.connection_count === 1 ? "" : "s"} · fence ${entry.fence}`),
      summaryLine(entry));
    const focused = focusedControl(card.body);
    card.body.replaceChildren(
      ...[controlsStrip(entry, (since) => age(since), Date.now() + state.clockOffset),
        holderBlock(entry, ttlMs),
        standbyBlock(entry, ttlMs),
        actionsBar(entry, ui),
        timeline(entry, transitions, state.windowMs),
        transitionsBlock(entry, transitions, state.machines.get(entry.agent), !this.closed.has(`${entry.agent}:history`)),
        messagesBlock(entry, this.hooks.messages(entry.agent), waitReason(entry), ui)].filter(Boolean));
    refocus(card.body, focused);
    return card.article;
  }

  /** Shows one card per agent (sorted by name), or the state that explains why there is none. */
  render(entries, state) {
    const sorted = entries.slice().sort((a, b) => a.agent.localeCompare(b.agent));
    for (const [agent, card] of this.cards) {
      if (sorted.some((e) => e.agent === agent)) continue;
      this.watcher.unobserve(card.article);
      this.cards.delete(agent);
      this.onScreen.delete(agent);
    }
    const nodes = sorted.map((entry) => this.fill(entry, state));
    let kind = null;
    if (state.signedOut) kind = "signed-out";
    else if (state.unreachable && nodes.length === 0) kind = "unreachable";
    else if (nodes.length === 0 && state.loaded) kind = "no-agents";
    if (kind) this.root.replaceChildren(emptyState(kind, state));
    else if (nodes.length === 0) this.root.replaceChildren(el("p", { class: "loading" }, "Loading…"));
    else this.place(nodes);
    this.root.classList.toggle("stale", Boolean(state.unreachable));
    this.tick(state);
  }

  /** Moves nodes only where the order differs: moving a card would drop the focus of its send box. */
  place(nodes) {
    const current = [...this.root.children];
    if (current.length === nodes.length && current.every((n, i) => n === nodes[i])) return;
    for (const n of current) if (!nodes.includes(n)) n.remove();
    nodes.forEach((node, i) => {
      if (this.root.children[i] !== node) this.root.insertBefore(node, this.root.children[i] ?? null);
    });
  }

  tick(state) {
    const now = Date.now() + state.clockOffset;
    tickAges(this.root, now);
    tickConfirmations(this.root, now);
    tickTimelines(this.root, now);
  }
}
