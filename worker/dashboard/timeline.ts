// The lease timeline of one agent: the last hour as one track, each holder a coloured bar (one
// colour per machine), stretches with no holder hatched, each transition a mark coloured by its
// reason. Drawn by hand with positioned elements instead of a charting library: one track and a
// few dozen boxes do not pay for a dependency. Positions are percentages set through CSSOM (the
// strict CSP forbids style attributes, not element.style), recomputed once a second by
// tickTimelines so the right edge stays "now" and a running bar keeps growing. A track whose
// story began inside the window (a new agent) is zoomed to it, so a new holder is a bar that
// reads, not a sliver at the right edge of an hour; the axis and a caption say the scale. The
// first holder's bar of a new agent is never narrower than a short name.
import { el } from "./dom.ts";
import type { DirectoryEntry, Transition } from "./state.ts";

/** The ranges the page offers; the first is the default. Transitions are kept for the longest. */
export const RANGES = [
  { ms: 60 * 60 * 1000, label: "1 h" },
  { ms: 10 * 60 * 1000, label: "10 min" },
  { ms: 60 * 1000, label: "1 min" },
] as const;
export const WINDOW_MS: number = RANGES[0].ms;
const PALETTE_SIZE = 8;
/** The scales a young track zooms to: the smallest that holds its story with a quarter to spare. */
const ZOOMS = [20, 40, 60, 120, 240, 600, 1200, 2400, 3600].map((s) => s * 1000);
const ZOOM_SPARE = 1.25;
export const REASONS: Record<string, string> = {
  claimed: "claimed", closed: "closed", stale: "went silent", released: "released",
  preferred: "to preferred runner", drained: "holder drained", restored: "restored after restart",
  stopping: "holder stopping",
};
/** What each reason means, for the hover text of the history and the timeline. */
export const REASON_NOTES: Record<string, string> = {
  claimed: "a runner claimed a free lease",
  closed: "the holder's connection closed",
  stale: "the holder's heartbeats stopped for longer than the TTL",
  released: "the holder gave the lease up",
  preferred: "a runner of higher priority was ready and the holder ran nothing",
  drained: "the holder's machine was drained; it handed the lease on after its run",
  restored: "after a coordinator restart the lease went back to its previous holder",
  stopping: "the holder's serve was shutting down; it handed the lease to a runner that is not, after its run",
};

/** One holder's stretch of the track, or a gap (machine null) with nobody holding the lease. */
export interface Span {
  start: number;
  end: number | null;
  machine: string | null;
  claim: number | null;
}

/** One colour class per machine, given in order of first sight and kept for the page's lifetime. */
const colours = new Map<string, string>();
export function colourOf(machine: string): string {
  let colour = colours.get(machine);
  if (colour === undefined) {
    colour = `c${colours.size % PALETTE_SIZE}`;
    colours.set(machine, colour);
  }
  return colour;
}

export function clock(ms: number): string {
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

/**
 * Presence lists only the latest transitions; the page keeps every one it saw since `windowStart`,
 * and the newest older one, which says who held the lease when the window began.
 */
export function keptTransitions(kept: readonly Transition[] | undefined, latest: readonly Transition[], windowStart: number): Transition[] {
  const byKey = new Map((kept ?? []).map((t) => [`${t.fence}:${t.at}:${t.reason}`, t]));
  for (const t of latest) byKey.set(`${t.fence}:${t.at}:${t.reason}`, t);
  const sorted = [...byKey.values()].sort((a, b) => a.at - b.at);
  const firstInside = sorted.findIndex((t) => t.at >= windowStart);
  const keepFrom = firstInside === -1 ? sorted.length - 1 : Math.max(0, firstInside - 1);
  return sorted.slice(Math.max(0, keepFrom));
}

/**
 * Holder spans from transitions (any order): each transition starts a span that lasts until the
 * next one (or until now when it is the last); a span with no holder is a gap. With no recorded
 * transition, the current holder's `since` starts its span.
 */
export function spans(transitions: readonly Transition[], holder: DirectoryEntry["holder"]): Span[] {
  const sorted = transitions.slice().sort((a, b) => a.at - b.at || a.fence - b.fence);
  if (sorted.length === 0) {
    return holder ? [{ start: holder.since, end: null, machine: holder.machine, claim: holder.claim_seq }] : [];
  }
  return sorted.map((t, i) => ({
    start: t.at,
    end: sorted[i + 1]?.at ?? null,
    machine: t.to_claim === null ? null : (t.to_machine ?? "unknown"),
    claim: t.to_claim,
  }));
}

/** `alone`: the only span the track knows (a new agent's first holder), drawn at least as wide as a short name. */
function spanBox(span: Span, alone: boolean): HTMLSpanElement {
  const attrs = { "data-start": span.start, "data-end": span.end ?? undefined, "data-alone": alone || undefined };
  if (span.machine === null) {
    return el("span", { ...attrs, class: "tl-span tl-gap", "data-role": "gap", title: `no holder from ${clock(span.start)}` });
  }
  return el("span", {
    ...attrs,
    class: `tl-span tl-bar ${colourOf(span.machine)}`,
    "data-role": "bar",
    "data-machine": span.machine,
    title: `${span.machine} #${span.claim} from ${clock(span.start)}`,
  }, span.machine);
}

function markBox(t: Transition): HTMLSpanElement {
  const from = t.from_claim === null ? "nobody" : `${t.from_machine ?? "?"} #${t.from_claim}`;
  const to = t.to_claim === null ? "nobody" : `${t.to_machine ?? "?"} #${t.to_claim}`;
  return el("span", {
    class: `tl-mark ${t.reason}`,
    "data-role": "mark",
    "data-reason": t.reason,
    "data-fence": t.fence,
    "data-at": t.at,
    title: `${clock(t.at)} ${REASONS[t.reason] ?? t.reason}: ${from} → ${to}, fence ${t.fence}${REASON_NOTES[t.reason] ? ` (${REASON_NOTES[t.reason]})` : ""}`,
  });
}

function legend(list: readonly Span[], transitions: readonly Transition[]): HTMLUListElement {
  const machines = [...new Set(list.flatMap((s) => (s.machine === null ? [] : [s.machine])))];
  const reasons = [...new Set(transitions.map((t) => t.reason))];
  return el("ul", { class: "legend" },
    machines.map((m) => el("li", {}, el("i", { class: `swatch ${colourOf(m)}` }), m)),
    list.some((s) => s.machine === null) ? el("li", {}, el("i", { class: "swatch tl-gap" }), "no holder") : null,
    reasons.map((r) => el("li", {}, el("i", { class: `dot ${r}` }), REASONS[r] ?? r)));
}

/** "−45s", "−2m", "−2.5m": an axis tick, whole where it can be. */
function axisLabel(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `−${s}s`;
  return `−${Number((s / 60).toFixed(1))}m`;
}

function spanLabel(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`;
}

/** The span a track shows: the chosen window, or less when everything it knows began later. */
export function shownSpan(windowMs: number, storyMs: number): number {
  if (!(storyMs >= 0)) return windowMs;
  return Math.min(windowMs, ZOOMS.find((z) => z >= storyMs * ZOOM_SPARE) ?? windowMs);
}

/** The timeline element of one agent over the last `windowMs`; call tickTimelines to place its boxes. */
export function timeline(entry: DirectoryEntry, transitions: readonly Transition[], windowMs: number): HTMLElement {
  const list = spans(transitions, entry.holder);
  const range = RANGES.find((r) => r.ms === windowMs)?.label ?? `${windowMs / 1000} s`;
  const first = Math.min(...list.map((s) => s.start), ...transitions.map((t) => t.at));
  return el("figure", {
    class: "timeline", "data-role": "timeline", "data-window": windowMs, "data-first": Number.isFinite(first) ? first : undefined,
    "aria-label": `${entry.agent}: who held the lease in the last ${range}`,
  },
    el("div", { class: "track" }, el("div", { class: "lane" },
      list.map((span) => spanBox(span, list.length === 1)),
      transitions.map(markBox))),
    el("div", { class: "axis", "aria-hidden": "true" },
      [4, 3, 2, 1].map((q) => el("span", { "data-quarter": q }, axisLabel((windowMs * q) / 4))), el("span", {}, "now")),
    el("p", { class: "tl-zoom", "data-role": "zoom", hidden: true }),
    legend(list, transitions));
}

/**
 * Places every bar, gap and mark under root for the span ending at `now` (server time). The
 * page's "now" may trail a fresh transition by the clock estimate's error: clamp, never negative.
 */
export function tickTimelines(root: ParentNode, now: number): void {
  for (const figure of root.querySelectorAll<HTMLElement>(".timeline")) {
    const chosen = Number(figure.dataset.window);
    const first = figure.dataset.first ? Number(figure.dataset.first) : NaN;
    const windowMs = shownSpan(chosen, now - first);
    const windowStart = now - windowMs;
    const percent = (ms: number) => `${Math.min(100, Math.max(0, (ms / windowMs) * 100))}%`;
    if (figure.dataset.shown !== String(windowMs)) {
      figure.dataset.shown = String(windowMs);
      for (const label of figure.querySelectorAll<HTMLElement>("[data-quarter]")) label.textContent = axisLabel((windowMs * Number(label.dataset.quarter)) / 4);
      const zoom = figure.querySelector<HTMLElement>('[data-role="zoom"]');
      if (zoom) {
        zoom.hidden = windowMs === chosen;
        zoom.textContent = `zoomed to the last ${spanLabel(windowMs)}: its lease story starts at ${clock(first)}`;
      }
    }
    for (const node of figure.querySelectorAll<HTMLElement>(".tl-span")) {
      const start = Math.max(Number(node.dataset.start), windowStart);
      const end = Math.min(node.dataset.end ? Number(node.dataset.end) : now, now);
      node.hidden = end <= windowStart;
      // The span going on now is anchored at "now", so its minimum width (a name that reads) grows leftwards.
      const ongoing = !node.dataset.end;
      node.style.left = ongoing ? "auto" : percent(start - windowStart);
      node.style.right = ongoing ? "0" : "auto";
      node.style.width = percent(end - start);
    }
    for (const node of figure.querySelectorAll<HTMLElement>(".tl-mark")) {
      const at = Number(node.dataset.at);
      node.hidden = at < windowStart;
      node.style.left = percent(at - windowStart);
    }
  }
}
