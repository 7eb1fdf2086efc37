// In-page confirmations for the actions that change what runs or cannot be undone (pause, drain,
// retry, stop, reject): the action's
// button opens a short question beside it with the action's own button and Cancel, never
// window.confirm. What is open, in flight and answered lives here, keyed by action, so a card
// rebuilt by a presence frame shows it again; the coordinator's answer shows under it for a while.
import { el, type Attrs } from "./dom.ts";

/** How long an action's answer stays beside its button. */
const RESULT_MS = 10_000;

/** How an action went: whether it did and the sentence shown beside its button. */
export interface Outcome {
  ok: boolean;
  text: string;
}

/**
 * One confirmable action. key (unique on the page), action (its `data-action`), label, title
 * (hover text), prompt (the question), confirm (the confirming button's label), run(), and
 * optionally `class` (the button's, "quiet small" by default) and `attrs` (more attributes of the button).
 */
export interface ControlSpec {
  key: string;
  action: string;
  label: string;
  title: string;
  prompt: string;
  confirm: string;
  run: () => Promise<Outcome>;
  class?: string;
  attrs?: Attrs;
}

export class Confirmations {
  private readonly open = new Set<string>();
  private readonly busy = new Set<string>();
  private readonly results = new Map<string, Outcome>();

  /** `onChange()` re-renders the page (the state of a control changed). */
  constructor(private readonly onChange: () => void) {}

  /** What a control shows now (closed, open, sending, answered): a view that caches its nodes rebuilds them when it changes. */
  signature(key: string): string {
    return `${this.open.has(key)}|${this.busy.has(key)}|${this.results.get(key)?.text ?? ""}`;
  }

  private changed(key: string, focus?: string): void {
    this.onChange();
    if (!focus) return;
    const scope = [...document.querySelectorAll<HTMLElement>("[data-confirm-key]")].find((n) => n.dataset.confirmKey === key);
    const target = scope?.matches(focus) ? scope : scope?.querySelector<HTMLElement>(focus);
    target?.focus();
  }

  control(spec: ControlSpec): HTMLElement {
    const { key } = spec;
    const result = this.results.get(key);
    const note = result
      ? el("span", { class: "action-result", role: "status", "data-role": "action-result", "data-state": result.ok ? "ok" : "failed" }, result.text)
      : null;
    if (!this.open.has(key)) {
      const button = el("button", { type: "button", class: spec.class ?? "quiet small", ...spec.attrs, "data-action": spec.action, "data-confirm-key": key, title: spec.title }, spec.label);
      button.addEventListener("click", () => {
        this.open.add(key);
        this.results.delete(key);
        this.changed(key, '[data-role="confirm-no"]');
      });
      return el("span", { class: "action" }, button, note);
    }
    const busy = this.busy.has(key);
    const yes = el("button", { type: "button", class: "small danger", "data-role": "confirm-yes", disabled: busy }, busy ? `${spec.confirm}…` : spec.confirm);
    const no = el("button", { type: "button", class: "quiet small", "data-role": "confirm-no", disabled: busy }, "Cancel");
    const cancel = () => {
      this.open.delete(key);
      this.changed(key, `[data-action="${spec.action}"]`);
    };
    yes.addEventListener("click", async () => {
      this.busy.add(key);
      this.changed(key);
      let answer: Outcome;
      try {
        answer = await spec.run();
      } catch (err) {
        answer = { ok: false, text: err instanceof Error ? err.message : String(err) };
      }
      this.busy.delete(key);
      this.open.delete(key);
      this.results.set(key, answer);
      setTimeout(() => {
        if (this.results.get(key) !== answer) return;
        this.results.delete(key);
        this.onChange();
      }, RESULT_MS);
      this.changed(key);
    });
    no.addEventListener("click", cancel);
    const group = el("span", { class: "confirm", role: "group", "data-role": "confirm", "data-confirm-key": key, "data-for": spec.action, "aria-label": spec.prompt },
      el("span", { class: "prompt" }, spec.prompt), yes, no);
    group.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && !busy) cancel();
    });
    return group;
  }
}
