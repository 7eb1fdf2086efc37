// "Needs a person": every open question of the account at the top of the page, across agents.
// Presence lists each agent's parked messages (with their question, choices and deadline); each
// shown one's message view is fetched for its text and checkpoint. An item answers from the page:
// Approve / Reject, or one button per choice and Reject (which asks first, as Pause and Stop
// do), with a text sent along; an effect whose outcome is unknown gets Done and Redo (resume with that outcome). Items are kept per message, so
// a presence frame rebuilds what changed and never what is being typed. A refusal (answered
// already, past its deadline) shows the coordinator's own sentence.
import { el } from "./dom.js";
import { formatAge } from "./render.js";
import { resumeCommands } from "./steps.js";
import { clock } from "./timeline.js";

/** A checkpoint longer than this (pretty JSON) is folded behind its summary line. */
const CHECKPOINT_LINES = 8;
const CHECKPOINT_CHARS = 400;

/** What a question's deadline does, as a sentence's end. */
export const ON_DEADLINE = {
  fail: "then the message fails",
  approve: "then it is approved by itself",
  reject: "then it is rejected by itself",
  escalate: "then it waits again (escalated)",
};

/** What an open parked message asks: an unknown outcome, a question, or plain approval. */
export function askKind(p) {
  if (p.reason && p.reason.startsWith("outcome unknown")) return "unknown";
  return p.question ? "question" : "approval";
}

/** The step of "outcome unknown: step NAME". */
function unknownStep(p, view) {
  return view?.waiting_on ?? /step (.+)$/.exec(p.reason ?? "")?.[1] ?? "?";
}

function checkpointBlock(view, item) {
  if (view.checkpoint_blob) {
    return el("p", { class: "checkpoint", "data-role": "checkpoint" },
      el("span", { class: "label" }, "Checkpoint"), `${view.checkpoint_blob.bytes} bytes, kept in R2`);
  }
  if (view.checkpoint === null || view.checkpoint === undefined) return null;
  const pretty = JSON.stringify(view.checkpoint, null, 2);
  const lines = pretty.split("\n").length;
  const pre = el("pre", { class: "json", "data-role": "checkpoint-json" }, pretty);
  if (lines <= CHECKPOINT_LINES && pretty.length <= CHECKPOINT_CHARS) {
    return el("div", { class: "checkpoint", "data-role": "checkpoint" }, el("span", { class: "label" }, "Checkpoint"), pre);
  }
  const details = el("details", { class: "checkpoint", "data-role": "checkpoint", open: item.checkpointOpen },
    el("summary", {}, `Checkpoint (${lines} lines)`), pre);
  details.addEventListener("toggle", () => (item.checkpointOpen = details.open));
  return details;
}

function deadlineLine(p, view) {
  const deadline = view?.question?.deadline ?? p.deadline;
  const then = ON_DEADLINE[view?.question?.on_deadline ?? p.on_deadline ?? "fail"] ?? "then its deadline decides";
  if (!deadline) return el("p", { class: "deadline", "data-role": "deadline" }, "No deadline: it waits until someone answers.");
  return el("p", { class: "deadline", "data-role": "deadline" },
    "Deadline ", el("time", { datetime: new Date(deadline).toISOString() }, clock(deadline)),
    " (", el("span", { class: "until", "data-until": Math.round(deadline) }), "), ", then, ".");
}

/** What a person is asked, in words. */
function questionLine(kind, p, view) {
  if (kind === "unknown") {
    return el("p", { class: "question", "data-role": "question" },
      el("strong", {}, "Did ", el("code", {}, unknownStep(p, view)), " happen?"),
      " It was begun and nothing recorded its outcome. Done: it happened (the text is recorded as its outcome). Redo: the next attempt runs it again.");
  }
  if (kind === "question") return el("p", { class: "question", "data-role": "question" }, el("strong", {}, p.question));
  return el("p", { class: "question", "data-role": "question" }, el("strong", {}, "Approval"), ": approve to run it on, or reject to end it.");
}

/** The commands that answer it, for a token that may not answer from here. */
function commandsLine(kind, agent, p) {
  const cmds = kind === "unknown"
    ? Object.values(resumeCommands(agent, p.id))
    : [kind === "question" && p.choices?.length ? `baton answer ${agent} ${p.id} CHOICE [TEXT]` : `baton approve ${agent} ${p.id} [TEXT]`, `baton reject ${agent} ${p.id} [REASON]`];
  return el("p", { class: "hint", "data-role": "answer-commands" },
    "This token cannot answer (it lacks the answer scope); a person who may answers with ",
    cmds.map((c, i) => [i ? " or " : "", el("code", {}, c)]), ".");
}

/** The buttons of one kind of question: [label, route, body extra, class]. */
function choicesOf(kind, p) {
  if (kind === "unknown") return [["Done", "resume", { outcome: "done" }, "", "done"], ["Redo", "resume", { outcome: "redo" }, "quiet", "redo"]];
  const choices = kind === "question" && p.choices?.length
    ? p.choices.map((c) => [c, "answer", { choice: c }, "", c])
    : [["Approve", "approve", {}, "", "approve"]];
  return [...choices, ["Reject", "reject", {}, "danger", "reject"]];
}

/** What the page says after the coordinator accepted an answer (the item goes at the next presence frame). */
function acceptedText(choice) {
  if (choice === "reject") return "rejected: it will not run";
  if (choice === "redo") return "redo: the next attempt runs the step again";
  if (choice === "done") return "done: recorded; the message runs on";
  return `answered ${choice}: the message runs again`;
}

function rejectKey(agent, id) {
  return `reject:${agent}:${id}`;
}

/** A webhook event's link, `#agent=A&message=N`: the question it is about, or null. */
export function linkTarget(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const agent = params.get("agent");
  const id = Number(params.get("message"));
  return agent && Number.isInteger(id) && id > 0 ? { agent, id } : null;
}

export class PersonQueue {
  /**
   * `root`: the section. `hooks`: fetchJson(path), decide(agent, id, route, body) resolving to
   * `{ ok, text }`, can() giving `{ answer }`, preview(agent, id) (presence's short text), and
   * confirmations (confirm.js) behind which Reject waits.
   */
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.items = new Map();
    this.count = el("span", { class: "count", "data-role": "person-count" });
    this.list = el("ol", { class: "asks" });
    this.empty = el("p", { class: "empty-line quiet", "data-role": "nobody-waiting" }, "Nobody is waiting for a person.");
    // The question a webhook's link points at: marked and scrolled to once, or said to be answered.
    this.target = linkTarget(location.hash);
    this.scrolledTo = null;
    this.gone = el("p", { class: "hint", "data-role": "target-gone" });
    this.gone.hidden = true;
    root.replaceChildren(el("h2", {}, "Needs a person ", this.count), this.gone, this.empty, this.list);
  }

  /** Follows a new link (the page's hash changed). */
  setTarget(target) {
    this.target = target;
    this.scrolledTo = null;
  }

  render(entries, state) {
    // Unreachable with nothing seen yet, the page cannot say whether anyone waits: no section then.
    this.root.hidden = state.signedOut || !state.loaded || (state.unreachable && entries.length === 0);
    if (this.root.hidden) return;
    const open = [];
    for (const entry of entries) for (const p of entry.work?.parked ?? []) open.push({ agent: entry.agent, p });
    open.sort((a, b) => (a.p.deadline ?? Infinity) - (b.p.deadline ?? Infinity) || a.agent.localeCompare(b.agent) || a.p.id - b.p.id);
    const can = this.hooks.can();
    const keep = new Set();
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
    this.count.textContent = open.length ? `(${open.length})` : "";
    this.empty.hidden = open.length > 0;
    this.empty.textContent = state.unreachable
      ? "Nobody was waiting for a person when the coordinator was last reached."
      : "Nobody is waiting for a person.";
    this.root.classList.toggle("stale", Boolean(state.unreachable));
    this.root.dataset.open = String(open.length);
    this.showTarget(state);
  }

  showTarget(state) {
    const key = this.target && `${this.target.agent}:${this.target.id}`;
    for (const [k, item] of this.items) item.li.toggleAttribute("data-targeted", k === key);
    const hit = key ? this.items.get(key) : undefined;
    if (hit && this.scrolledTo !== key) {
      this.scrolledTo = key;
      hit.li.scrollIntoView({ block: "center" });
    }
    // Said only while the page knows the account's open questions (connected, loaded).
    this.gone.hidden = !this.target || Boolean(hit) || Boolean(state.unreachable);
    if (!this.gone.hidden) this.gone.textContent = `Message #${this.target.id} of ${this.target.agent} is not waiting for a person any more.`;
  }

  item(key, agent, p) {
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

  fill(key, agent, p, can) {
    const item = this.item(key, agent, p);
    const kind = askKind(p);
    item.li.dataset.kind = kind;
    const sig = JSON.stringify(p);
    if (item.viewSig !== sig && !item.loading) void this.load(key, agent, p, sig);
    const infoSig = `${sig}|${item.view ? item.viewSig : ""}|${can.answer}`;
    if (item.infoSig !== infoSig) {
      item.infoSig = infoSig;
      item.info.replaceChildren(...this.info(kind, agent, p, item, can).filter(Boolean));
    }
    const formSig = `${kind}|${JSON.stringify(p.choices ?? [])}|${can.answer}|${this.hooks.confirmations.signature(rejectKey(agent, p.id))}`;
    if (item.formSig !== formSig) {
      item.formSig = formSig;
      item.form.replaceChildren(...(can.answer ? this.form(kind, agent, p, item) : []));
    }
    return item.li;
  }

  info(kind, agent, p, item, can) {
    const view = item.view?.id === p.id ? item.view : null;
    const text = view?.text ?? this.hooks.preview(agent, p.id);
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
      deadlineLine(p, view),
      can.answer ? null : commandsLine(kind, agent, p),
    ];
  }

  form(kind, agent, p, item) {
    const id = `answer-${agent}-${p.id}`;
    item.input ??= el("input", { id, type: "text", autocomplete: "off", "data-role": "answer-text", maxlength: 4096 });
    item.input.placeholder = kind === "unknown" ? "its outcome (Done) or a note (optional)" : "text for the agent (optional)";
    const buttons = choicesOf(kind, p).map(([label, route, extra, cls, choice]) => {
      if (choice === "reject") return this.rejectControl(agent, p, item);
      const button = el("button", { type: "button", class: cls || undefined, "data-action": "answer", "data-choice": choice }, label);
      button.addEventListener("click", () => this.decide(agent, p, item, route, extra, choice));
      return button;
    });
    return [
      el("label", { class: "label", for: id }, kind === "unknown" ? "Outcome or note" : "Answer text"),
      el("div", { class: "ask-row", "data-role": "answer-form" }, item.input, el("span", { class: "ask-buttons", "data-role": "answer-buttons" }, buttons)),
    ];
  }

  /** Reject ends the message for good: like Pause and Stop, it asks first, in place. */
  rejectControl(agent, p, item) {
    return this.hooks.confirmations.control({
      key: rejectKey(agent, p.id), action: "reject", class: "danger", attrs: { "data-choice": "reject" },
      label: "Reject", title: "end this message: it never runs again",
      prompt: `Reject #${p.id} of ${agent}? The message ends and never runs again; this cannot be undone.`, confirm: "Reject it",
      run: () => this.decide(agent, p, item, "reject", {}, "reject", false),
    });
  }

  /** Sends one answer; `{ ok, text }`. `report`: whether the item's own status line says how it went (a confirmation says it itself). */
  async decide(agent, p, item, route, extra, choice, report = true) {
    if (item.busy) return { ok: false, text: "another answer is being sent" };
    item.busy = true;
    const buttons = [...item.form.querySelectorAll("button")];
    for (const b of buttons) b.disabled = true;
    if (report) {
      item.status.dataset.state = "sending";
      item.status.textContent = "sending…";
    }
    const text = item.input?.value.trim() ?? "";
    const body = route === "resume" ? { ...extra, ...(text ? { input: text } : {}) } : { ...extra, ...(text ? { text } : {}) };
    try {
      const answer = await this.hooks.decide(agent, p.id, route, body);
      const said = answer.ok ? acceptedText(choice) : answer.text;
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

  async load(key, agent, p, sig) {
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

  tick(now) {
    for (const node of this.root.querySelectorAll("[data-until]")) {
      const left = Number(node.dataset.until) - now;
      node.textContent = left > 0 ? `in ${formatAge(left)}` : "passed";
    }
  }
}
