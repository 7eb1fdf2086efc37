// An agent's schedules on its card: each with its cadence, its next fire, and its latest fires,
// a posted one linked to the message it made (`#agent=A&message=N`, as webhook links are), a
// skipped one with why. Fetched from GET /agents/{agent}/schedules only for cards on screen: when
// the card comes on screen, when its newest messages change (a fire posts one), and otherwise at a
// presence change once a minute has passed (a skip posts nothing).
import type { ScheduleList, ScheduleView } from "../wire/schedules.ts";
import { el } from "./dom.ts";
import { messagesFingerprint } from "./message-loader.ts";
import type { DirectoryEntry } from "./state.ts";

export type { ScheduleView };

/** How often schedules of a card on screen are fetched again when nothing else changed. */
export const SCHEDULES_POLL_MS = 60_000;

export class ScheduleLoader {
  private readonly loaded = new Map<string, { fp: string; at: number; list: ScheduleView[] }>();
  private readonly inflight = new Set<string>();

  constructor(
    private readonly fetchJson: (path: string) => Promise<ScheduleList | null>,
    private readonly onLoaded: (agent: string) => void,
  ) {}

  get(agent: string): ScheduleView[] | null {
    return this.loaded.get(agent)?.list ?? null;
  }

  refresh(entry: DirectoryEntry, now: number): void {
    const fp = messagesFingerprint(entry);
    const last = this.loaded.get(entry.agent);
    if (last && last.fp === fp && now - last.at < SCHEDULES_POLL_MS) return;
    if (this.inflight.has(entry.agent)) return;
    void this.load(entry.agent, fp, now);
  }

  forget(agent: string): void {
    this.loaded.delete(agent);
  }

  private async load(agent: string, fp: string, now: number): Promise<void> {
    this.inflight.add(agent);
    try {
      const body = await this.fetchJson(`/agents/${encodeURIComponent(agent)}/schedules`);
      if (!body || !Array.isArray(body.schedules)) return;
      this.loaded.set(agent, { fp, at: now, list: body.schedules });
      this.onLoaded(agent);
    } finally {
      this.inflight.delete(agent);
    }
  }
}

const when = (t: number | null) => (t === null ? "none" : new Date(t).toISOString().replace(".000Z", "Z"));

function cadence(s: ScheduleView): string {
  if (s.cron !== null) return `cron ${s.cron} (${s.tz})`;
  if (s.every_seconds !== null) return `every ${s.every_seconds} s`;
  return `once at ${when(s.at)}`;
}

function fireLine(agent: string, f: ScheduleView["fires"][number]): HTMLElement {
  if (f.outcome === "posted") {
    return el("li", { "data-role": "fire", "data-outcome": "posted" },
      `${when(f.slot)} · `,
      el("a", { href: `#agent=${encodeURIComponent(agent)}&message=${f.message_id}`, "data-role": "fire-message" }, `message ${f.message_id}`),
      ` · ${Math.max(0, Math.round((f.at - f.slot) / 1000))} s late`);
  }
  const span = f.count_at_least ? ` (at least ${f.count} slots to ${when(f.last_slot)})` : f.count > 1 ? ` (${f.count} slots to ${when(f.last_slot)})` : "";
  return el("li", { "data-role": "fire", "data-outcome": "skipped" }, `${when(f.slot)} · skipped: ${f.reason}${span}`);
}

/** The card's schedules block, or null when the agent has none (or they are not loaded yet). */
export function schedulesBlock(agent: string, list: readonly ScheduleView[] | null, open: boolean): HTMLElement | null {
  if (!list || list.length === 0) return null;
  return el("details", { class: "schedules", "data-key": "schedules", "data-role": "schedules", open },
    el("summary", {}, `Schedules (${list.length})`),
    el("ul", {}, list.map((s) => el("li", { "data-role": "schedule", "data-schedule": s.id },
      el("div", { class: "schedule-head" },
        el("strong", {}, `#${s.id} ${cadence(s)}`),
        s.paused ? el("span", { class: "chip paused" }, "paused") : null,
        el("span", { "data-role": "next-fire" }, ` · next ${when(s.next_fire)}`)),
      el("div", { class: "schedule-text" }, s.text.length > 120 ? `${s.text.slice(0, 120)}…` : s.text),
      s.fires.length === 0 ? null : el("ul", { class: "fires" }, s.fires.slice(0, 5).map((f) => fireLine(agent, f)))))));
}
