// What one open question of the "Needs a person" section says, from presence's parked entry and,
// once fetched, the message's view: its kind (an effect's unknown outcome, a question with
// choices, or plain approval, told apart by the entry's data: `waiting_on`, `question`), the
// question in words, its checkpoint, its deadline, the buttons that answer it and the commands
// for a token that may not answer here.
import { el, type Child } from "./dom.ts";
import type { MessageView, ParkedItem } from "./state.ts";
import { resumeCommands } from "./steps.ts";
import { clock } from "./timeline.ts";
import { quorumTally } from "../wire/quorum-tally.ts";

/** A checkpoint longer than this (pretty JSON) is folded behind its summary line. */
const CHECKPOINT_LINES = 8;
const CHECKPOINT_CHARS = 400;

export type AskKind = "unknown" | "question" | "approval";
type OnDeadline = NonNullable<ParkedItem["on_deadline"]>;

/** What a question's deadline does, as a sentence's end. */
export const ON_DEADLINE: Record<OnDeadline, string> = {
  fail: "then the message fails",
  approve: "then it is approved by itself",
  reject: "then it is rejected by itself",
  escalate: "then it waits again (escalated)",
};

/** What an open parked message asks: whether an effect's outcome (`waiting_on`), a question, or plain approval. */
export function askKind(p: Pick<ParkedItem, "waiting_on" | "question" | "reason">): AskKind {
  if ((p.waiting_on ?? null) !== null) return "unknown";
  // An older coordinator's entry has no waiting_on; it set reason exactly when an outcome was unknown.
  if (p.waiting_on === undefined && (p.reason ?? null) !== null) return "unknown";
  return p.question ? "question" : "approval";
}

/** The step whose outcome is unknown. */
function unknownStep(p: ParkedItem, view: MessageView | null): string {
  return view?.waiting_on ?? p.waiting_on ?? "?";
}

/** What the section keeps of one open question across renders. */
export interface AskItem {
  li: HTMLLIElement;
  info: HTMLDivElement;
  form: HTMLDivElement;
  status: HTMLParagraphElement;
  input: HTMLInputElement | null;
  view: MessageView | null;
  viewSig: string | null;
  loading: boolean;
  infoSig: string | null;
  formSig: string | null;
  checkpointOpen: boolean;
  busy: boolean;
}

export function checkpointBlock(view: MessageView, item: AskItem): HTMLElement | null {
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

export function deadlineLine(p: ParkedItem, view: MessageView | null): HTMLElement {
  const deadline = view?.question?.deadline ?? p.deadline;
  const then = ON_DEADLINE[view?.question?.on_deadline ?? p.on_deadline ?? "fail"] ?? "then its deadline decides";
  if (!deadline) return el("p", { class: "deadline", "data-role": "deadline" }, "No deadline: it waits until someone answers.");
  return el("p", { class: "deadline", "data-role": "deadline" },
    "Deadline ", el("time", { datetime: new Date(deadline).toISOString() }, clock(deadline)),
    " (", el("span", { class: "until", "data-until": Math.round(deadline) }), "), ", then, ".");
}

/** For an effect's approval: what approving permits, once (the effect, its arguments as canonical JSON and their SHA-256). */
function approvedAction(view: MessageView | null): HTMLElement | null {
  const a = view?.question?.approve;
  if (!a) return null;
  return el("span", { class: "approves", "data-role": "approves" },
    " Approving runs ", el("code", {}, a.effect), " once, with ", el("code", {}, a.args), ` (sha256 ${a.digest}).`);
}

/** What a person is asked, in words. */
export function questionLine(kind: AskKind, p: ParkedItem, view: MessageView | null): HTMLElement {
  if (kind === "unknown") {
    return el("p", { class: "question", "data-role": "question" },
      el("strong", {}, "Did ", el("code", {}, unknownStep(p, view)), " happen?"),
      " It was begun and nothing recorded its outcome. Done: it happened (the text is recorded as its outcome). Redo: the next attempt runs it again.");
  }
  if (kind === "question") return el("p", { class: "question", "data-role": "question" }, el("strong", {}, p.question ?? ""), approvedAction(view));
  return el("p", { class: "question", "data-role": "question" }, el("strong", {}, "Approval"), ": approve to run it on, or reject to end it.");
}

/** A question several people decide: how many approvals it needs, who has answered (and how), who has not. */
export function quorumBlock(view: MessageView | null): HTMLElement | null {
  const q = view?.question?.quorum;
  if (!q) return null;
  const rejects = q.reject_needs > 1 ? `${q.reject_needs} rejects reject it` : "any one reject rejects it";
  return el("div", { class: "quorum", "data-role": "quorum" },
    el("p", { "data-role": "quorum-count" }, el("strong", {}, `${q.approvals} of ${q.needs} approvals`), ` from distinct people; ${rejects}.`),
    el("ul", { class: "quorum-people" },
      q.answered.map((a) => el("li", { "data-role": "answered", "data-token": a.token, "data-choice": a.choice }, `${a.token}: ${a.choice}`, " ", clock(a.at))),
      (q.waiting_for ?? []).map((name) => el("li", { "data-role": "not-answered", "data-token": name }, `${name}: not yet`))));
}

/** What the page says after an answer to a question several people decide that did not decide it. */
export function recordedText(view: MessageView): string | null {
  return view.status === "parked" && view.question?.quorum ? quorumTally(view.question.quorum) : null;
}

/** The commands that answer it, for a token that may not answer from here. */
export function commandsLine(kind: AskKind, agent: string, p: ParkedItem): HTMLElement {
  const cmds = kind === "unknown"
    ? Object.values(resumeCommands(agent, p.id))
    : [kind === "question" && p.choices?.length ? `baton answer ${agent} ${p.id} CHOICE [TEXT]` : `baton approve ${agent} ${p.id} [TEXT]`, `baton reject ${agent} ${p.id} [REASON]`];
  return el("p", { class: "hint", "data-role": "answer-commands" },
    "This token cannot answer (it lacks the answer scope); a person who may answers with ",
    cmds.map((c, i): Child => [i ? " or " : "", el("code", {}, c)]), ".");
}

/** One button of a question: its label, the route it posts to, what the body adds, its class, and the choice it stands for. */
export interface Choice {
  label: string;
  route: "resume" | "answer" | "approve" | "reject";
  extra: Record<string, string>;
  cls: string;
  choice: string;
}

/** The buttons of one kind of question. */
export function choicesOf(kind: AskKind, p: ParkedItem): Choice[] {
  if (kind === "unknown") {
    return [
      { label: "Done", route: "resume", extra: { outcome: "done" }, cls: "", choice: "done" },
      { label: "Redo", route: "resume", extra: { outcome: "redo" }, cls: "quiet", choice: "redo" },
    ];
  }
  const choices: Choice[] = kind === "question" && p.choices?.length
    ? p.choices.map((c) => ({ label: c, route: "answer", extra: { choice: c }, cls: "", choice: c }))
    : [{ label: "Approve", route: "approve", extra: {}, cls: "", choice: "approve" }];
  return [...choices, { label: "Reject", route: "reject", extra: {}, cls: "danger", choice: "reject" }];
}

/** What the page says after the coordinator accepted an answer (the item goes at the next presence frame). */
export function acceptedText(choice: string): string {
  if (choice === "reject") return "rejected: it will not run";
  if (choice === "redo") return "redo: the next attempt runs the step again";
  if (choice === "done") return "done: recorded; the message runs on";
  return `answered ${choice}: the message runs again`;
}

/** A webhook event's link, `#agent=A&message=N`: the question it is about, or null. */
export function linkTarget(hash: string): { agent: string; id: number } | null {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const agent = params.get("agent");
  const id = Number(params.get("message"));
  return agent && Number.isInteger(id) && id > 0 ? { agent, id } : null;
}
