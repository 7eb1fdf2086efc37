// The send control of one agent's card: a small "Send a message" button that opens the box in
// place, so a wall of cards is not a wall of text boxes. The box keeps what is typed while its
// card is rebuilt (it is built once per card); Escape or Cancel folds it, a message sent folds it
// and says where it went. Ctrl/Cmd+Enter sends.
import type { Answer } from "./api.ts";
import { el } from "./dom.ts";

/** `send(agent, text)` resolves to `{ ok, text }`, the sentence shown after the attempt. */
export function sendControl(agent: string, send: (agent: string, text: string) => Promise<Answer>): HTMLElement {
  const id = `send-${agent}`;
  const open = el("button", { type: "button", class: "quiet small", "data-role": "open-send", "aria-expanded": "false", "aria-controls": `${id}-form` }, "Send a message");
  const input = el("textarea", { id, name: "text", rows: 3, required: true, placeholder: `A message for ${agent}…` });
  const submit = el("button", { type: "submit" }, "Send");
  const cancel = el("button", { type: "button", class: "quiet", "data-role": "close-send" }, "Cancel");
  const answer = el("p", { class: "hint", role: "status", "aria-live": "polite" });
  const form = el("form", { id: `${id}-form`, class: "composer-form", hidden: true },
    el("label", { class: "label", for: id }, `Send a message to ${agent}`),
    input,
    el("div", { class: "composer-row" }, submit, cancel));
  const root = el("div", { class: "composer", "data-role": "send" }, open, form, answer);

  const show = (on: boolean) => {
    form.hidden = !on;
    open.hidden = on;
    open.setAttribute("aria-expanded", String(on));
    if (on) input.focus();
    else open.focus();
  };
  open.addEventListener("click", () => {
    answer.textContent = "";
    delete answer.dataset.state;
    show(true);
  });
  cancel.addEventListener("click", () => show(false));
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") show(false);
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value;
    if (!text.trim()) return;
    submit.disabled = true;
    answer.dataset.state = "sending";
    answer.textContent = "sending…";
    try {
      const result = await send(agent, text);
      answer.dataset.state = result.ok ? "sent" : "failed";
      answer.textContent = result.text;
      if (result.ok) {
        input.value = "";
        show(false);
      }
    } finally {
      submit.disabled = false;
    }
  });
  return root;
}
