// The "Needs a person" section: every open question of the account in one place, soonest deadline
// first. Presence lists each agent's parked messages (with their question, choices, deadline and
// the step whose outcome is unknown); each shown one's message view is fetched for its text and
// checkpoint. An item answers from the page: Approve / Reject, or one button per choice and Reject
// (which asks first, as Pause and Stop do), with a text sent along; an effect whose outcome is
// unknown gets Done and Redo (resume with that outcome). Items are kept per message, so a presence
// frame rebuilds what changed and never what is being typed. A refusal (answered already, past its
// deadline) shows the coordinator's own sentence. What each item says is person-ask.ts.
import type { Answer } from "./api.ts";
import { formatAge } from "./ages.ts";
import type { Confirmations, Outcome } from "./confirm.ts";
import { el } from "./dom.ts";
import {
  acceptedText, askKind, checkpointBlock, choicesOf, commandsLine, deadlineLine, linkTarget, questionLine, quorumBlock, recordedText, type AskItem, type AskKind, type Choice,
} from "./person-ask.ts";
import type { Abilities, DirectoryEntry, MessageView, PageState, ParkedItem } from "./state.ts";
import { clock } from "./timeline.ts";

export { linkTarget };

/** What the section needs from the page. */
export interface PersonHooks {
  fetchJson: (path: string) => Promise<MessageView | null>;
  /** Posts one answer: `{ ok, text }`. */
  decide: (agent: string, id: number, route: Choice["route"], body: object) => Promise<Answer>;
  can: () => Abilities;
  /** The message's text as far as the page knows it without its view (a loaded text or presence's preview). */
  preview: (agent: string, id: number) => string | null;
  /** Re-renders the page (a view arrived). */
  changed: () => void;
  /** Behind which Reject waits. */
  confirmations: Confirmations;
}

function rejectKey(agent: string, id: number): string {
  return `reject:${agent}:${id}`;
}

export class PersonQueue {
  private readonly items = new Map<string, AskItem>();
  private readonly count = el("span", { class: "count", "data-role": "person-count" });
  private readonly list = el("ol", { class: "asks" });
  private readonly empty = el("p", { class: "empty-line quiet", "data-role": "nobody-waiting" }, "Nobody is waiting for a person.");
  // The question a webhook's link points at: marked and scrolled to once, or said to be answered.
  private target = linkTarget(location.hash);
  private scrolledTo: string | null = null;
  private readonly gone = el("p", { class: "hint", "data-role": "target-gone" });
  /** Presence lists each agent's newest 20 parked messages and counts them all: the rest are said, not hidden. */
  private readonly more = el("p", { class: "hint", "data-role": "person-more" });

  /** `root`: the section. */
  constructor(private readonly root: HTMLElement, private readonly hooks: PersonHooks) {
    this.gone.hidden = true;
    this.more.hidden = true;
    root.replaceChildren(el("h2", {}, "Needs a person ", this.count), this.gone, this.empty, this.list, this.more);
  }

  /** Follows a new link (the page's hash changed). */
  setTarget(target: { agent: string; id: number } | null): void {
    this.target = target;
    this.scrolledTo = null;
  }

  render(entries: readonly DirectoryEntry[], state: PageState): void {
    // Unreachable with nothing seen yet, the page cannot say whether anyone waits: no section then.
    this.root.hidden = state.signedOut || !state.loaded || (state.unreachable && entries.length === 0);
    if (this.root.hidden) return;
    const open: { agent: string; p: ParkedItem }[] = [];
    for (const entry of entries) for (const p of entry.work?.parked ?? []) open.push({ agent: entry.agent, p });
    open.sort((a, b) => (a.p.deadline ?? Infinity) - (b.p.deadline ?? Infinity) || a.agent.localeCompare(b.agent) || a.p.id - b.p.id);
    const can = this.hooks.can();
    const keep = new Set<string>();
    const nodes = open.map(({ agent, p }) => {
      const key = `${agent}:${p.id}`;
      keep.add(key);
      return this.fill(key, agent, p, can);
    });
    for (const [key, item] of this.items) {
      if (!keep.has(key)) {
        item.li.remove();
        this.items.delete(key);
      }
    }
    nodes.forEach((node, i) => {
      if (this.list.children[i] !== node) this.list.insertBefore(node, this.list.children[i] ?? null);
    });
    const unlisted = entries.filter((e) => (e.work?.counts.parked ?? 0) > (e.work?.parked.length ?? 0))
      .map((e) => ({ agent: e.agent, n: e.work!.counts.parked - e.work!.parked.length }));
    const total = open.length + unlisted.reduce((sum, u) => sum + u.n, 0);
    this.count.textContent = total ? `(${total})` : "";
    this.more.hidden = unlisted.length === 0;
    this.more.textContent = unlisted.length === 0 ? "" : `and ${total - open.length} more, older, not listed here: ` +
      `${unlisted.map((u) => `${u.n} of ${u.agent} (baton history ${u.agent})`).join(", ")}`;
    this.empty.hidden = open.length > 0;
    this.empty.textContent = state.unreachable
      ? "Nobody was waiting for a person when the coordinator was last reached."
      : "Nobody is waiting for a person.";
    this.root.classList.toggle("stale", Boolean(state.unreachable));
    this.root.dataset.open = String(open.length);
    this.showTarget(state);
  }

  private showTarget(state: PageState): void {
    const target = this.target;
    const key = target && `${target.agent}:${target.id}`;
    for (const [k, item] of this.items) item.li.toggleAttribute("data-targeted", k === key);
    const hit = key ? this.items.get(key) : undefined;
    if (hit && key && this.scrolledTo !== key) {
      this.scrolledTo = key;
      hit.li.scrollIntoView({ block: "center" });
    }
    // Said only while the page knows the account's open questions (connected, loaded).
    this.gone.hidden = !target || Boolean(hit) || Boolean(state.unreachable);
    if (target && !this.gone.hidden) this.gone.textContent = `Message #${target.id} of ${target.agent} is not waiting for a person any more.`;
  }

  private item(key: string, agent: string, p: ParkedItem): AskItem {
    let item = this.items.get(key);
    if (item) return item;
    item = {
      li: el("li", { class: "ask", "data-role": "ask", "data-agent": agent, "data-id": p.id }),
      info: el("div", { class: "ask-info" }),
      form: el("div", { class: "ask-form" }),
      status: el("p", { class: "hint", role: "status", "aria-live": "polite", "data-role": "answer-status" }),
      input: null, view: null, viewSig: null, loading: false, infoSig: null, formSig: null, checkpointOpen: false, busy: false,
    };
    item.li.append(item.info, item.form, item.status);
    this.items.set(key, item);
    return item;
  }

  private fill(key: string, agent: string, p: ParkedItem, can: Abilities): HTMLLIElement {
    const item = this.item(key, agent, p);
    const kind = askKind(p);
    item.li.dataset.kind = kind;
    const sig = JSON.stringify(p);
    if (item.viewSig !== sig && !item.loading) void this.load(key, agent, p, sig);
    const infoSig = `${sig}|${item.view ? item.viewSig : ""}|${can.answer}`;
    if (item.infoSig !== infoSig) {
      item.infoSig = infoSig;
      item.info.replaceChildren(...this.info(kind, agent, p, item, can).filter((n): n is HTMLElement => n !== null));
    }
    const formSig = `${kind}|${JSON.stringify(p.choices ?? [])}|${can.answer}|${this.hooks.confirmations.signature(rejectKey(agent, p.id))}`;
    if (item.formSig !== formSig) {
      item.formSig = formSig;
      item.form.replaceChildren(...(can.answer ? this.form(kind, agent, p, item) : []));
    }
    return item.li;
  }

  private info(kind: AskKind, agent: string, p: ParkedItem, item: AskItem, can: Abilities): (HTMLElement | null)[] {
    const view = item.view?.id === p.id ? item.view : null;
    const shown = view?.text ?? this.hooks.preview(agent, p.id);
    // A question asked on its own (an MCP host's ask) is its message's text: say it once, as the question.
    const text = kind === "question" && shown !== null && p.question && (shown === p.question || p.question.startsWith(shown.replace(/…$/, ""))) ? null : shown;
    return [
      el("div", { class: "ask-head" },
        el("span", { class: "agent-name", "data-role": "ask-agent" }, agent),
        el("span", { class: "id" }, `#${p.id}`),
        el("span", { class: "chip", "data-kind": kind }, kind === "unknown" ? "outcome unknown" : kind),
        p.attempt > 1 ? el("span", { class: "attempts" }, `attempt ${p.attempt}`) : null,
        view?.question?.asked_at ? el("span", { class: "meta" }, "asked ", clock(view.question.asked_at)) : null),
      text === null ? null : el("p", { class: "text", "data-role": "ask-text" }, text),
      questionLine(kind, p, view),
      view ? checkpointBlock(view, item) : null,
      quorumBlock(view),
      deadlineLine(p, view),
      can.answer ? null : commandsLine(kind, agent, p),
    ];
  }

  private form(kind: AskKind, agent: string, p: ParkedItem, item: AskItem): HTMLElement[] {
    const id = `answer-${agent}-${p.id}`;
    const input = item.input ??= el("input", { id, type: "text", autocomplete: "off", "data-role": "answer-text", maxlength: 4096 });
    input.placeholder = kind === "unknown" ? "its outcome (Done) or a note (optional)" : "text for the agent (optional)";
    const buttons = choicesOf(kind, p).map((c) => {
      if (c.choice === "reject") return this.rejectControl(agent, p, item);
      const button = el("button", { type: "button", class: c.cls || undefined, "data-action": "answer", "data-choice": c.choice }, c.label);
      button.addEventListener("click", () => void this.decide(agent, p, item, c));
      return button;
    });
    return [
      el("label", { class: "label", for: id }, kind === "unknown" ? "Outcome or note" : "Answer text"),
      el("div", { class: "ask-row", "data-role": "answer-form" }, input, el("span", { class: "ask-buttons", "data-role": "answer-buttons" }, buttons)),
    ];
  }

  /** Reject ends the message for good: like Pause and Stop, it asks first, in place. */
  private rejectControl(agent: string, p: ParkedItem, item: AskItem): HTMLElement {
    return this.hooks.confirmations.control({
      key: rejectKey(agent, p.id), action: "reject", class: "danger", attrs: { "data-choice": "reject" },
      label: "Reject", title: "end this message: it never runs again",
      prompt: `Reject #${p.id} of ${agent}? The message ends and never runs again; this cannot be undone.`, confirm: "Reject it",
      run: () => this.decide(agent, p, item, { label: "Reject", route: "reject", extra: {}, cls: "danger", choice: "reject" }, false),
    });
  }

  /** Sends one answer. `report`: whether the item's own status line says how it went (a confirmation says it itself). */
  private async decide(agent: string, p: ParkedItem, item: AskItem, c: Choice, report = true): Promise<Outcome> {
    if (item.busy) return { ok: false, text: "another answer is being sent" };
    item.busy = true;
    const buttons = [...item.form.querySelectorAll("button")];
    for (const b of buttons) b.disabled = true;
    if (report) {
      item.status.dataset.state = "sending";
      item.status.textContent = "sending…";
    }
    const text = item.input?.value.trim() ?? "";
    const body = c.route === "resume" ? { ...c.extra, ...(text ? { input: text } : {}) } : { ...c.extra, ...(text ? { text } : {}) };
    try {
      const answer = await this.hooks.decide(agent, p.id, c.route, body);
      // A question several people decide keeps waiting after this answer: say how many more it needs.
      const view = answer.ok ? answer.body as MessageView : null;
      const said = answer.ok ? (view && recordedText(view)) ?? acceptedText(c.choice) : answer.text;
      if (report) {
        item.status.dataset.state = answer.ok ? "answered" : "refused";
        item.status.textContent = said;
      }
      if (answer.ok && item.input) item.input.value = "";
      return { ok: answer.ok, text: said };
    } finally {
      item.busy = false;
      for (const b of buttons) b.disabled = false;
    }
  }

  private async load(key: string, agent: string, p: ParkedItem, sig: string): Promise<void> {
    const item = this.items.get(key);
    if (!item) return;
    item.loading = true;
    try {
      const view = await this.hooks.fetchJson(`/agents/${encodeURIComponent(agent)}/messages/${p.id}`);
      if (!view) return; // the next presence change tries again
      item.view = view;
      item.viewSig = sig;
    } finally {
      item.loading = false;
    }
    const now = this.items.get(key);
    if (now === item) this.hooks.changed();
  }

  tick(now: number): void {
    for (const node of this.root.querySelectorAll<HTMLElement>("[data-until]")) {
      const left = Number(node.dataset.until) - now;
      node.textContent = left > 0 ? `in ${formatAge(left)}` : "passed";
    }
  }
}
