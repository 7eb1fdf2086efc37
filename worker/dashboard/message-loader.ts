// The full texts of an agent's newest messages. Presence carries only 80-character previews, so
// the full messages come from GET /agents/{agent}/messages, fetched only for cards on screen and
// only when their messages changed; heartbeats and steps change no presence, so running ones are
// polled (POLL_RUNNING_MS).
import type { MessagePage } from "../wire/http-responses.ts";
import type { DirectoryEntry, MessageView } from "./state.ts";

/** How often the full messages of a card on screen are fetched again while one of them runs. */
export const POLL_RUNNING_MS = 5000;

/** What identifies the state of an agent's newest messages; a change means the full texts are stale. */
export function messagesFingerprint(entry: DirectoryEntry): string {
  return (entry.recent_messages ?? []).map((m) => `${m.id}:${m.status}:${m.attempts}`).join(",");
}

/** Keeps the full newest messages per agent, one request per agent at a time, refetching on change. */
export class MessageLoader {
  private readonly loaded = new Map<string, { fp: string; list: MessageView[] }>();
  private readonly wanted = new Map<string, { fp: string; after: number; count: number }>();
  private readonly inflight = new Set<string>();
  /** Per agent: how many times its running messages were polled, and when last. */
  private readonly polls = new Map<string, { n: number; at: number }>();

  /** `fetchJson(path)` answers the body or null; `onLoaded(agent)` re-renders. */
  constructor(
    private readonly fetchJson: (path: string) => Promise<MessagePage | null>,
    private readonly onLoaded: (agent: string) => void,
  ) {}

  /** Full messages of the agent as last loaded (maybe older than its presence), or null. */
  get(agent: string): MessageView[] | null {
    return this.loaded.get(agent)?.list ?? null;
  }

  refresh(entry: DirectoryEntry): void {
    const recent = entry.recent_messages ?? [];
    if (recent.length === 0) return;
    const fp = `${messagesFingerprint(entry)}#${this.polls.get(entry.agent)?.n ?? 0}`;
    const after = Math.min(...recent.map((m) => m.id)) - 1;
    this.wanted.set(entry.agent, { fp, after, count: recent.length });
    if (this.loaded.get(entry.agent)?.fp !== fp && !this.inflight.has(entry.agent)) void this.load(entry.agent);
  }

  /**
   * A run's heartbeats, progress and new steps arrive with no presence frame: while one of the
   * agent's newest messages runs, its messages are fetched again every POLL_RUNNING_MS.
   */
  poll(entry: DirectoryEntry, now: number): void {
    if (!(entry.recent_messages ?? []).some((m) => m.status === "running")) return;
    const last = this.polls.get(entry.agent);
    if (last && now - last.at < POLL_RUNNING_MS) return;
    this.polls.set(entry.agent, { n: (last?.n ?? 0) + 1, at: now });
    this.refresh(entry);
  }

  forget(agent: string): void {
    this.loaded.delete(agent);
    this.wanted.delete(agent);
    this.polls.delete(agent);
  }

  private async load(agent: string): Promise<void> {
    this.inflight.add(agent);
    try {
      for (;;) {
        const want = this.wanted.get(agent);
        if (!want || this.loaded.get(agent)?.fp === want.fp) return;
        const body = await this.fetchJson(`/agents/${encodeURIComponent(agent)}/messages?after=${want.after}&limit=${want.count}`);
        if (!body || !Array.isArray(body.messages)) return; // the next change tries again
        this.loaded.set(agent, { fp: want.fp, list: body.messages });
        this.onLoaded(agent);
      }
    } finally {
      this.inflight.delete(agent);
    }
  }
}
