// Turns directory entries into agent cards. A card is kept per agent and only its header and body
// are rebuilt on a change, so the send box (send.ts) keeps what is being typed and its focus. Ages are
// server-time anchors in data attributes, ticked once a second with the timelines (ages.ts).
import type { Answer } from "./api.ts";
import { age, tickAges, tickConfirmations } from "./ages.ts";
import { emptyState, holderBlock, pool, standbyBlock, summaryLine, transitionsBlock, type EmptyKind } from "./card-blocks.ts";
import { actionsBar, controlsStrip, waitReason } from "./controls.ts";
import { el } from "./dom.ts";
import { messagesBlock } from "./messages.ts";
import { sendControl } from "./send.ts";
import { schedulesBlock, type ScheduleView } from "./schedules.ts";
import type { DirectoryEntry, MessageView, PageState, Ui } from "./state.ts";
import { tickTimelines, timeline } from "./timeline.ts";

/** What the list needs from the page. */
export interface ListHooks {
  send: (agent: string, text: string) => Promise<Answer>;
  /** A card came on screen: its full messages are wanted. */
  visible: (agent: string) => void;
  /** The agent's full messages as loaded, or null. */
  messages: (agent: string) => MessageView[] | null;
  /** The actions the token may take (without `pool`, which is the card's). */
  ui: () => Ui;
  /** The agent's schedules as loaded (schedules.ts), or null. */
  schedules?: (agent: string) => ScheduleView[] | null;
}

interface Card {
  article: HTMLElement;
  header: HTMLElement;
  body: HTMLElement;
  composer: HTMLElement;
}

/**
 * The action control (confirm.ts) that has the focus inside `root`, by its key and role: a card's
 * body is rebuilt on every presence frame, and a person confirming must not lose their place.
 */
function focusedControl(root: HTMLElement): { key: string; role: string | null } | null {
  const active = document.activeElement;
  if (!(active instanceof HTMLElement) || !root.contains(active)) return null;
  const holder = active.closest<HTMLElement>("[data-confirm-key]");
  if (!holder) return null;
  return { key: holder.dataset.confirmKey ?? "", role: active === holder ? null : active.dataset.role ?? null };
}

function refocus(root: HTMLElement, focused: { key: string; role: string | null } | null): void {
  if (!focused) return;
  const holder = [...root.querySelectorAll<HTMLElement>("[data-confirm-key]")].find((n) => n.dataset.confirmKey === focused.key);
  const target = focused.role ? holder?.querySelector<HTMLElement>(`[data-role="${focused.role}"]`) : holder;
  target?.focus();
}

/** The list of agent cards under one root. */
export class AgentList {
  private readonly cards = new Map<string, Card>();
  /** Details elements (`agent:key`) a person closed: rebuilt closed. */
  private readonly closed = new Set<string>();
  /** Agents whose card is on screen: only those fetch their full messages. */
  readonly onScreen = new Set<string>();
  private readonly watcher: IntersectionObserver;

  constructor(private readonly root: HTMLElement, private readonly hooks: ListHooks) {
    this.watcher = new IntersectionObserver((seen) => {
      for (const e of seen) {
        const agent = e.target instanceof HTMLElement ? e.target.dataset.agent : undefined;
        if (agent === undefined) continue;
        if (!e.isIntersecting) this.onScreen.delete(agent);
        else if (!this.onScreen.has(agent)) {
          this.onScreen.add(agent);
          hooks.visible(agent);
        }
      }
    });
  }

  private card(agent: string): Card {
    let card = this.cards.get(agent);
    if (card) return card;
    const article = el("article", { class: "agent", "data-agent": agent });
    card = { article, header: el("header"), body: el("div", { class: "body" }), composer: sendControl(agent, this.hooks.send) };
    article.append(card.header, card.body, card.composer);
    // In the compact view the name opens or closes this one card; in the full view it does nothing.
    card.header.addEventListener("click", (event) => {
      const button = event.target instanceof Element ? event.target.closest('[data-role="open-card"]') : null;
      if (!button) return;
      const open = article.classList.toggle("open");
      button.setAttribute("aria-expanded", String(open));
    });
    article.addEventListener("toggle", (event) => {
      if (!(event.target instanceof HTMLDetailsElement)) return;
      const key = `${agent}:${event.target.dataset.key}`;
      if (event.target.open) this.closed.delete(key);
      else this.closed.add(key);
    }, true);
    this.cards.set(agent, card);
    this.watcher.observe(article);
    return card;
  }

  private fill(entry: DirectoryEntry, state: PageState): HTMLElement {
    const card = this.card(entry.agent);
    const ttlMs = entry.heartbeat_ttl_seconds * 1000;
    const transitions = state.transitions.get(entry.agent) ?? entry.transitions;
    const paused = Boolean(entry.controls?.paused);
    card.article.classList.toggle("paused", paused);
    // Only an entry with connections claims something live that can go stale; one without is always confirmed.
    if (entry.confirmed_until && entry.connection_count > 0) card.article.dataset.confirmedUntil = String(entry.confirmed_until);
    else delete card.article.dataset.confirmedUntil;
    card.article.classList.toggle("unconfirmed", entry.confirmed === false);
    const ui: Ui = { ...this.hooks.ui(), pool: pool(entry) };
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
        messagesBlock(entry, this.hooks.messages(entry.agent), waitReason(entry), ui),
        schedulesBlock(entry.agent, this.hooks.schedules?.(entry.agent) ?? null, !this.closed.has(`${entry.agent}:schedules`))].filter((n): n is HTMLElement => n !== null));
    refocus(card.body, focused);
    return card.article;
  }

  /** Shows one card per agent (sorted by name), or the state that explains why there is none. */
  render(entries: readonly DirectoryEntry[], state: PageState): void {
    const sorted = entries.slice().sort((a, b) => a.agent.localeCompare(b.agent));
    for (const [agent, card] of this.cards) {
      if (sorted.some((e) => e.agent === agent)) continue;
      this.watcher.unobserve(card.article);
      this.cards.delete(agent);
      this.onScreen.delete(agent);
    }
    const nodes = sorted.map((entry) => this.fill(entry, state));
    let kind: EmptyKind | null = null;
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
  private place(nodes: readonly HTMLElement[]): void {
    const current = [...this.root.children];
    if (current.length === nodes.length && current.every((n, i) => n === nodes[i])) return;
    for (const n of current) if (!nodes.some((node) => node === n)) n.remove();
    nodes.forEach((node, i) => {
      if (this.root.children[i] !== node) this.root.insertBefore(node, this.root.children[i] ?? null);
    });
  }

  tick(state: PageState): void {
    const now = Date.now() + state.clockOffset;
    tickAges(this.root, now);
    tickConfirmations(this.root, now);
    tickTimelines(this.root, now);
  }
}
