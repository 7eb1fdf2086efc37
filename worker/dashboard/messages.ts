// Messages on an agent's card: the newest ones with full text, reply, timestamps, status and
// attempts (the send control is send.ts; the full texts come from message-loader.ts, presence
// carrying only previews). Statuses are shown as they come (queued, delivered, acknowledged,
// parked, failed, or any later one); the stylesheet colours the ones it knows. A loaded message
// also shows its durable steps, an effect whose outcome is unknown and a running attempt's
// heartbeat (steps.ts). Each message shows who answered it (account, token name, from where,
// when, what), and a failed one a Retry behind an in-page confirmation for a token that may retry
// (admin). A queued, running or parked one has a Stop (cancel) behind its confirmation for a token
// that may answer; a cancelled one says who stopped it, why, and which effects were left with an
// unknown outcome.
import { unknownOutcomeReason } from "../wire/step-keys.ts";
import { el, type Child } from "./dom.ts";
import type { DirectoryEntry, MessageView, ParkedItem, RecentMessage, RunningItem, Ui } from "./state.ts";
import { ago, resumeCommands, stepsBlock } from "./steps.ts";
import { clock } from "./timeline.ts";

function when(ms: number): HTMLTimeElement {
  return el("time", { datetime: new Date(ms).toISOString(), title: new Date(ms).toString() }, clock(ms));
}

/** Who answered a message, newest last: when, the choice, the text, the account and token, and from where. */
export function answersBlock(m: Pick<MessageView, "answers">): HTMLElement | null {
  const answers = Array.isArray(m.answers) ? m.answers : [];
  if (answers.length === 0) return null;
  return el("div", { class: "answers", "data-role": "answers" },
    el("span", { class: "label" }, `Answered (${answers.length})`),
    el("ol", {}, answers.map((a) => el("li", { "data-role": "answer-record", "data-choice": a.choice, "data-via": a.via },
      when(a.at),
      el("span", { class: "chip", "data-role": "answer-choice" }, a.choice),
      a.text === null || a.text === undefined ? null : el("q", { class: "answer-text", "data-role": "answer-text" }, a.text),
      el("span", { class: "meta" },
        "by ", el("span", { "data-role": "answer-account" }, a.account),
        ", token ", el("span", { "data-role": "answer-token" }, a.token),
        ", via ", el("span", { "data-role": "answer-via" }, a.via)),
      a.question ? el("span", { class: "meta asked", title: a.question }, ` · to: ${a.question}`) : null))));
}

/** Retry of a failed message (a fresh set of tries), behind its confirmation; null for a token that may not. */
function retryControl(agent: string, id: number, ui: Ui | null): HTMLElement | null {
  if (!ui?.can.admin) return null;
  return ui.confirmations.control({
    key: `retry:${agent}:${id}`, action: "retry", label: "Retry", title: "queue it again with a fresh set of tries (its attempt numbers go on)",
    prompt: `Retry #${id}? It is queued again with a fresh set of tries; its attempt numbers go on.`, confirm: "Retry",
    run: () => ui.act(agent, `messages/${id}/retry`, {}, "queued again"),
  });
}

/** Stop (cancel) of a message still to run, running or parked, behind its confirmation; null for a token that may not answer. */
function stopControl(agent: string, m: { id: number; status: string }, ui: Ui | null): HTMLElement | null {
  if (!ui?.can.answer || !["queued", "running", "parked"].includes(m.status)) return null;
  const what = m.status === "running" ? "Its run is stopped now" : "It never runs";
  return ui.confirmations.control({
    key: `cancel:${agent}:${m.id}`, action: "cancel", label: "Stop", title: "cancel this message: final, it never runs (again)",
    prompt: `Stop #${m.id}? ${what}, and it cannot be retried.`, confirm: "Stop it",
    run: () => ui.act(agent, `messages/${m.id}/cancel`, { reason: "stopped from the dashboard" }, "cancelled"),
  });
}

/** Who cancelled a message, when, why, and the effects it left with an unknown outcome. */
function cancelledBlock(m: MessageView): HTMLElement | null {
  const c = m.cancelled;
  if (!c) return null;
  return el("div", { class: "cancelled", "data-role": "cancelled" },
    el("span", { class: "label" }, "Cancelled ", when(c.at)),
    el("span", { class: "meta" }, "by ", el("span", { "data-role": "cancel-token" }, c.token), ` (${c.account}), via ${c.via}`),
    c.reason ? el("q", { class: "answer-text", "data-role": "cancel-reason" }, c.reason) : null,
    c.unknown_effects?.length ? el("p", { class: "why", "data-role": "cancel-unknown" },
      `outcome unknown (begun, never recorded as done; not run again): ${c.unknown_effects.join(", ")}`) : null);
}

/** What a loaded message shows below its text: its steps, cancel, supersession, answers and reply. */
function fullParts(agent: string, m: MessageView, ui: Ui | null): Child[] {
  return [
    stepsBlock(agent, m, ui?.pool ?? false),
    cancelledBlock(m),
    m.superseded_by ? el("p", { class: "meta", "data-role": "superseded" }, `superseded by #${m.superseded_by} before it started (on_busy replace)`) : null,
    answersBlock(m.cancelled ? { answers: (m.answers ?? []).filter((a) => a.choice !== "cancel") } : m),
    m.reply === null || m.reply === undefined ? null : el("div", { class: "reply", "data-role": "reply" },
      el("span", { class: "label" }, "Reply",
        m.acked_at ? [" · ", when(m.acked_at)] : null,
        m.acked_fence !== null && m.acked_fence !== undefined ? ` · fence ${m.acked_fence}` : null),
      el("p", { class: "text" }, m.reply)),
    m.reply_blob ? el("div", { class: "reply", "data-role": "reply" },
      el("span", { class: "label" }, "Reply", m.acked_at ? [" · ", when(m.acked_at)] : null),
      el("p", { class: "text" }, `${m.reply_blob.bytes} bytes, kept in R2: `, el("code", {}, `baton show ${agent} ${m.id}`))) : null,
  ];
}

/** " (retried after 3; 1 declined, not counted)": the attempts before a person's latest retry, and those since given back unstarted; null: neither. */
function attemptNotes(m: Pick<MessageView, "retried_after" | "declined">): string | null {
  const said = [m.retried_after ? `retried after ${m.retried_after}` : "", m.declined ? `${m.declined} declined, not counted` : ""].filter(Boolean);
  return said.length === 0 ? null : ` (${said.join("; ")})`;
}

/** One message: a loaded one (`full`) in full, else presence's preview of it. */
function messageItem(agent: string, shown: { full: MessageView } | { recent: RecentMessage }, waiting: string | null, ui: Ui | null): HTMLLIElement {
  const full = "full" in shown ? shown.full : null;
  const m = "full" in shown ? shown.full : shown.recent;
  const text = "full" in shown ? shown.full.text : `${shown.recent.preview}${shown.recent.preview.length >= 80 ? "…" : ""}`;
  const held = m.status === "queued" ? waiting : null;
  return el("li", { class: "message", "data-status": m.status, "data-id": m.id, "data-waiting": held ? "" : undefined, "data-waiting-on": full?.waiting_on ?? undefined },
    el("div", { class: "msg-head" },
      el("span", { class: "id" }, `#${m.id}`),
      el("span", { class: "chip", "data-status": m.status }, m.status),
      held ? el("span", { class: "waiting", "data-role": "waiting" }, held) : null,
      m.attempts > 1 ? el("span", { class: "attempts" }, `attempt ${m.attempts}`, full ? attemptNotes(full) : null) : null,
      when(m.created_at),
      m.status === "failed" ? retryControl(agent, m.id, ui) : stopControl(agent, m, ui)),
    el("p", { class: "text", "data-role": "text" }, text),
    ui?.output?.(agent, m.id, m.status) ?? null,
    full ? fullParts(agent, full, ui) : null);
}

/** A parked message in the summary: its id and what it waits on (the step whose outcome is unknown). */
function parkedItem(agent: string, p: ParkedItem, asked: ReadonlySet<number>): HTMLElement {
  const cmd = resumeCommands(agent, p.id);
  const step = p.waiting_on ?? null;
  return el("span", { class: "parked-item", "data-role": "parked-item", "data-id": p.id },
    `#${p.id}`,
    step === null ? null : [" (", el("span", { class: "why", "data-role": "park-reason" }, unknownOutcomeReason(step)), ")"],
    // A loaded row below carries the question and both answers; any other needs them here.
    step !== null && !asked.has(p.id) ? [": ", el("code", {}, cmd.done), " or ", el("code", {}, cmd.redo)] : null);
}

/**
 * A running message in the summary: where, and its last heartbeat (the fresher of presence and the
 * loaded view). In pool mode every runner takes messages, so it also names the runner's claim.
 */
function runningItem(r: RunningItem, loaded: MessageView | undefined, pool: boolean): HTMLElement {
  const beat = Math.max(r.heartbeat_at ?? 0, loaded?.token === r.token ? loaded.heartbeat_at ?? 0 : 0);
  return el("span", { class: "running-item", "data-role": "running-item", "data-id": r.id, "data-claim": r.claim_seq ?? undefined },
    `#${r.id}`, r.machine ? ` on ${r.machine}` : null,
    pool && r.claim_seq !== null && r.claim_seq !== undefined ? el("span", { "data-role": "runner-claim" }, ` (claim #${r.claim_seq})`) : null,
    r.attempt > 1 ? ` (attempt ${r.attempt})` : null,
    beat ? el("span", { "data-role": "heartbeat" }, ", heartbeat ", ago(beat)) : null);
}

/**
 * How many messages are in each status (whatever statuses presence reports), which ones run and
 * when they last sent a heartbeat, and which wait for a person (parked, with why) or gave up
 * (failed), also when they are older than the newest few.
 */
function workSummary(entry: DirectoryEntry, full: readonly MessageView[] | null, waiting: string | null, ui: Ui | null, failedShown: ReadonlySet<number>): HTMLElement | null {
  const work = entry.work;
  const counts = Object.entries(work?.counts ?? {}).filter(([, n]) => n !== undefined && n > 0);
  if (counts.length === 0) return null;
  const byId = new Map((full ?? []).map((m) => [m.id, m]));
  // Loaded rows that ask their question (with both answers) themselves.
  const asked = new Set((full ?? []).filter((m) => m.status === "parked" && m.waiting_on).map((m) => m.id));
  const list = (items: readonly Child[]): Child[] => items.map((node, i) => [i ? ", " : "", node]);
  return el("p", { class: "work", "data-role": "work" },
    counts.map(([status, n]) => el("span", { class: "chip", "data-status": status }, `${n} ${status}`)),
    waiting && work.counts.queued > 0 ? el("span", { class: "waiting", "data-role": "queued-waiting" }, waiting) : null,
    work.running?.length ? el("span", { class: "meta", "data-role": "running" }, "running: ",
      list(work.running.map((r) => runningItem(r, byId.get(r.id), ui?.pool ?? false)))) : null,
    work.parked?.length ? el("span", { class: "meta", "data-role": "parked" }, "waiting for a person: ",
      list(work.parked.map((p) => parkedItem(entry.agent, p, asked)))) : null,
    work.failed?.length ? el("span", { class: "meta", "data-role": "failed" }, "failed: ",
      work.failed.map((m, i) => [i ? ", " : "", el("span", { class: "failed-item", "data-role": "failed-item", "data-id": m.id },
        `#${m.id}`, m.error ? el("span", { class: "why", "data-role": "fail-reason" }, ` (${m.error})`) : null,
        // Failed rows below carry their own Retry.
        failedShown.has(m.id) ? null : [" ", retryControl(entry.agent, m.id, ui)])])) : null);
}

/**
 * The newest messages, newest first: full texts when loaded, else the previews from presence.
 * `waiting` (or null) says why queued ones are not handed out now, e.g. the agent is paused. `ui`
 * (optional): `{ can, confirmations, act, pool }` for the actions a token may take.
 */
export function messagesBlock(entry: DirectoryEntry, full: readonly MessageView[] | null, waiting: string | null = null, ui: Ui | null = null): HTMLElement {
  const recent = entry.recent_messages ?? [];
  if (recent.length === 0 && !full?.length) return el("p", { class: "empty-line quiet" }, "No messages yet.");
  const shown = full?.length
    ? full.slice().sort((a, b) => b.id - a.id).map((m) => ({ full: m }))
    : recent.map((m) => ({ recent: m }));
  const failedShown = new Set(shown.flatMap((s) => {
    const m = "full" in s ? s.full : s.recent;
    return m.status === "failed" ? [m.id] : [];
  }));
  return el("section", { class: "messages", "data-role": "messages" },
    el("span", { class: "label" }, "Messages"),
    workSummary(entry, full, waiting, ui, failedShown),
    el("ol", {}, shown.map((s) => messageItem(entry.agent, s, waiting, ui))));
}
