// A message's live output on its card (GET …/messages/{id}/output?format=json&wait=25, a long
// poll: the page's requests carry the token in a header, which EventSource cannot). Each pane is
// kept across the card's re-renders and follows the tail until the person scrolls up, again once
// back at the bottom. A failed request is retried from the last event seen, so nothing is lost or
// repeated. Attempts, takeovers, attempt ends and dropped bytes are said in place. Output goes in
// as text nodes only, with control and format characters replaced (worker/wire/printable.ts, as the CLI does).
import { chunkBytes, type OutputEvent, type OutputPage } from "../wire/output.ts";
import { el } from "./dom.ts";
import { printable } from "../wire/printable.ts";

/** Characters of output a pane keeps; past it the oldest go (the CLI's `baton logs` has all that is stored). */
export const PANE_CHARS = 256 * 1024;
/** How long a failed read waits before it asks again from its last event. */
const RETRY_MS = 1000;
/** Within this many pixels of the bottom counts as at the bottom (following). */
const AT_BOTTOM_PX = 24;

const ENDED: Record<string, string> = {
  replied: "replied", failed: "failed", parked: "parked for a person", cancelled: "was cancelled",
  lease_lost: "lost the message (its runner left or went silent)", timed_out: "ran out of time",
  declined: "was given back unstarted (its runner was stopping; not counted)",
};

type Fetch = (path: string) => Promise<OutputPage | null>;

class Pane {
  readonly root: HTMLElement;
  private readonly body: HTMLPreElement;
  private readonly state: HTMLElement;
  private readonly decoders = { out: new TextDecoder(), err: new TextDecoder() };
  private cursor = 0;
  private chars = 0;
  private attempts = 0;
  following = true;
  private scrollTop = 0;
  done = false;

  constructor(private readonly path: string) {
    this.state = el("span", { class: "meta", "data-role": "output-state" }, "waiting for output…");
    this.body = el("pre", { class: "output", "data-role": "output-text", tabindex: 0 });
    this.root = el("div", { class: "live-output", "data-role": "output" },
      el("span", { class: "label" }, "Output "), this.state, this.body);
    this.body.addEventListener("scroll", () => {
      if (!this.body.isConnected) return;
      this.scrollTop = this.body.scrollTop;
      this.following = this.body.scrollHeight - this.body.clientHeight - this.body.scrollTop <= AT_BOTTOM_PX;
      this.root.dataset.following = String(this.following);
    });
    this.root.dataset.following = "true";
  }

  async run(fetchPage: Fetch): Promise<void> {
    while (!this.done) {
      const page = await fetchPage(`${this.path}?format=json&from=${this.cursor}&wait=25`);
      if (!page) {
        this.setState("reconnecting…", "retrying");
        await new Promise((r) => setTimeout(r, RETRY_MS));
        continue;
      }
      for (const e of page.events) this.show(e);
      this.cursor = page.cursor;
      if (page.final && !page.more) {
        this.done = true;
        this.setState(`final: ${page.status}`, "final");
      } else if (this.root.dataset.state !== "live") this.setState("live", "live");
    }
  }

  /** After the card was rebuilt: the pane's scroll (lost when its node moved) is put back, at the tail when following. */
  restoreScroll(): void {
    this.body.scrollTop = this.following ? this.body.scrollHeight : this.scrollTop;
  }

  private setState(text: string, state: string): void {
    this.state.textContent = text;
    this.root.dataset.state = state;
  }

  private show(e: OutputEvent): void {
    switch (e.type) {
      case "chunk": {
        const to = e.stream === "stderr" ? "err" : "out";
        const text = printable(this.decoders[to].decode(chunkBytes(e), { stream: true }));
        if (text) this.add(e.stream === "stderr" ? el("span", { class: "stderr" }, text) : document.createTextNode(text), text.length);
        return;
      }
      case "attempt":
        // The first attempt needs no announcement; a later one is a takeover or a retry, said in place.
        if (this.attempts++ > 0 || e.attempt > 1) this.note(`attempt ${e.attempt} on ${printable(e.machine)} took over`, "attempt");
        return;
      case "attempt_end":
        this.note(`attempt ${e.attempt} ${ENDED[e.reason] ?? e.reason}`, "attempt-end");
        return;
      case "dropped":
        this.note(`${e.bytes} bytes of the oldest output were dropped (past the message's output budget)`, "dropped");
        return;
      case "end":
        return;
    }
  }

  private note(text: string, kind: string): void {
    const last = this.body.lastChild?.textContent ?? "\n";
    const line = `${last.endsWith("\n") ? "" : "\n"}— ${text}\n`;
    this.add(el("span", { class: "output-note", "data-role": "output-note", "data-kind": kind }, line), line.length);
  }

  private add(node: Node, length: number): void {
    this.body.append(node);
    this.chars += length;
    while (this.chars > PANE_CHARS && this.body.firstChild && this.body.firstChild !== node) {
      this.chars -= this.body.firstChild.textContent?.length ?? 0;
      this.body.firstChild.remove();
      this.root.dataset.trimmed = "";
    }
    if (this.following) this.body.scrollTop = this.body.scrollHeight;
  }
}

/** The panes of the messages on screen, by agent and id; each follows its message until it is final. */
export class LiveOutputs {
  private readonly panes = new Map<string, Pane>();

  constructor(private readonly fetchPage: Fetch) {}

  /** The pane of a message: started when a running message is first shown, kept (final) once it has been. */
  pane(agent: string, id: number, status: string): HTMLElement | null {
    const key = `${agent}\n${id}`;
    let pane = this.panes.get(key);
    if (!pane) {
      if (status !== "running") return null;
      pane = new Pane(`/agents/${encodeURIComponent(agent)}/messages/${id}/output`);
      this.panes.set(key, pane);
      void pane.run(this.fetchPage);
    }
    return pane.root;
  }

  /** After a render: every pane on the page gets its scroll back. */
  restore(): void {
    for (const pane of this.panes.values()) if (pane.root.isConnected) pane.restoreScroll();
  }
}
