// A message's durable steps on its card: each record of its step journal (name, kind, done or only
// begun, the attempt that recorded it, its size; a person's answer as "question N" with what was
// asked), the effect whose outcome nobody knows with the two commands a person answers it with,
// and a running attempt's last heartbeat and progress.
// Everything from the coordinator goes in as text (dom.ts), never as HTML.
import { el, type Child } from "./dom.ts";
import type { AnswerRecord, MessageView, Step } from "./state.ts";

/** Progress is the runner's own JSON (a few KiB at most): the card shows its start, the hover text all of it. */
const PROGRESS_SHOWN = 240;

/** A ticking age from a server timestamp: ages.ts fills every `[data-since]` once a second. */
export function ago(serverMs: number): Child[] {
  return [el("span", { class: "age", "data-since": Math.round(serverMs) }), " ago"];
}

/** The two answers to an unknown outcome, exactly as a person types them. */
export function resumeCommands(agent: string, id: number): { done: string; redo: string } {
  return { done: `baton resume ${agent} ${id} --done`, redo: `baton resume ${agent} ${id} --redo` };
}

function progressText(progress: unknown): string {
  return typeof progress === "string" ? progress : JSON.stringify(progress);
}

/** Whether this record is the effect a parked message waits on a person for. */
function waitsOnPerson(m: MessageView, s: Step): boolean {
  return m.status === "parked" && s.status === "intent" && m.waiting_on === s.name;
}

/** What a record says: done, begun by the attempt running now, or begun with its outcome unknown. */
function stepState(m: MessageView, s: Step): { state: string; text: string } {
  if (s.status === "done") return { state: "done", text: `done by attempt ${s.attempt}` };
  if (waitsOnPerson(m, s)) return { state: "unknown", text: `begun by attempt ${s.attempt} · outcome unknown — waiting for a person` };
  if (m.status === "running" && s.attempt === m.attempts) return { state: "begun", text: `begun by attempt ${s.attempt}, running now` };
  const retry = s.on_unknown === "retry" ? ": it runs again under the same idempotency key" : "";
  return { state: "unknown", text: `begun by attempt ${s.attempt} · outcome unknown${retry}` };
}

/** A question's text is shown up to this long beside its step; the hover text has all of it. */
const QUESTION_SHOWN = 80;

/**
 * How a step reads on the card. A person's answer is kept under a name made for machines
 * (`ask:1`, or the CLI's `ask:616081462b828596`): it reads "question N" with the question asked,
 * matched by the time the answer was recorded; the raw name stays in the hover text.
 */
export function stepLabel(m: MessageView, s: Step): { text: string; title: string | null; answer: AnswerRecord | null } {
  if (s.kind !== "answer") return { text: s.name, title: null, answer: null };
  const answers = (m.steps ?? []).filter((r) => r.kind === "answer");
  const n = answers.indexOf(s) + 1;
  const answer = (m.answers ?? []).find((a) => a.at === s.at) ?? null;
  const question = answer?.question ?? null;
  const shown = question && question.length > QUESTION_SHOWN ? `${question.slice(0, QUESTION_SHOWN)}…` : question;
  return {
    text: shown ? `question ${n}: ${shown}` : `question ${n}`,
    title: `kept in the journal as ${s.name}${question ? `; asked: ${question}` : ""}`,
    answer,
  };
}

function stepRow(m: MessageView, s: Step): HTMLLIElement {
  const { state, text } = stepState(m, s);
  const label = stepLabel(m, s);
  const said = label.answer ? `answered ${label.answer.choice} by ${label.answer.token} (${label.answer.via})` : text;
  return el("li", { class: "step", "data-role": "step", "data-name": s.name, "data-kind": s.kind, "data-status": s.status, "data-state": state, "data-attempt": s.attempt },
    el(s.kind === "answer" ? "span" : "code", { class: "step-name", "data-role": "step-name", title: label.title ?? undefined }, label.text),
    el("span", { class: "chip kind", "data-kind": s.kind }, s.kind),
    el("span", { class: "step-status", "data-role": "step-status" }, said),
    s.status === "done" ? el("span", { class: "bytes", "data-role": "bytes" }, `${s.bytes} B`) : null);
}

/** The question a parked message asks when an effect was begun and nothing recorded its outcome. */
function unknownOutcome(agent: string, m: MessageView, step: string): HTMLElement {
  const cmd = resumeCommands(agent, m.id);
  return el("div", { class: "unknown-outcome", "data-role": "unknown-outcome", "data-step": step },
    el("p", {}, el("strong", {}, "Did ", el("code", {}, step), " happen?"),
      " It was begun and nothing recorded its outcome, so baton does not run it again by itself. A person answers with one of:"),
    el("ul", { class: "resume" },
      el("li", {}, el("code", { "data-role": "resume-done" }, cmd.done), " it happened: recorded done, not run again (append TEXT to record its outcome)"),
      el("li", {}, el("code", { "data-role": "resume-redo" }, cmd.redo), " it did not: the next attempt runs it again")));
}

/** A running message: where (in pool mode with the runner's claim), which attempt, its last heartbeat and progress (polled while on screen). */
function runLine(m: MessageView, pool: boolean): HTMLElement {
  const progress = m.progress === null || m.progress === undefined ? null : progressText(m.progress);
  return el("p", { class: "run", "data-role": "run" },
    "running", m.machine ? [" on ", el("span", { class: "machine" }, m.machine)] : null,
    pool && m.claim_seq !== null && m.claim_seq !== undefined ? el("span", { "data-role": "runner-claim" }, `, claim #${m.claim_seq}`) : null,
    ` · attempt ${m.attempts}`,
    m.heartbeat_at ? el("span", { "data-role": "heartbeat" }, " · heartbeat ", ago(m.heartbeat_at)) : el("span", { "data-role": "heartbeat" }, " · no heartbeat yet"),
    progress === null ? null : [" · progress ", el("code", { class: "progress", "data-role": "progress", title: progress },
      progress.length > PROGRESS_SHOWN ? `${progress.slice(0, PROGRESS_SHOWN)}…` : progress)]);
}

/** What a loaded message adds to its row: its run, its steps and an unknown outcome; null when none. */
export function stepsBlock(agent: string, m: MessageView, pool = false): HTMLElement[] | null {
  const steps = Array.isArray(m.steps) ? m.steps : [];
  const parts = [
    m.status === "running" ? runLine(m, pool) : null,
    steps.length ? el("div", { class: "steps", "data-role": "steps" },
      el("span", { class: "label" }, `Steps (${steps.length})`),
      el("ol", {}, steps.map((s) => stepRow(m, s)))) : null,
    m.status === "parked" && m.waiting_on ? unknownOutcome(agent, m, m.waiting_on) : null,
  ].filter((part): part is HTMLElement => part !== null);
  return parts.length ? parts : null;
}
