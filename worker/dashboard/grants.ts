// The account's OAuth grants on the dashboard, for an admin token: each remote host a person
// approved (client name as it registered, not verified), its scopes, the agents it is limited to,
// the token that signed in, and a Revoke button that asks first. Loaded when the panel opens and
// after each revocation; GET /grants and DELETE /grants/{grant} are the same routes as `baton grants`.
import type { GrantList, GrantView } from "../wire/grants.ts";
import { el } from "./dom.ts";

export interface GrantsIo {
  list: () => Promise<GrantList | null>;
  revoke: (id: string) => Promise<{ ok: boolean; text: string }>;
}

const when = (t: number | null) => (t === null ? "never" : new Date(t).toLocaleString());

export class GrantsPanel {
  private note = "";

  constructor(private readonly root: HTMLElement, private readonly io: GrantsIo) {}

  /** Opens (and loads) or closes the panel. */
  async toggle(): Promise<void> {
    this.root.hidden = !this.root.hidden;
    if (!this.root.hidden) await this.load();
  }

  async load(): Promise<void> {
    const list = await this.io.list();
    this.render(list);
  }

  private async revoke(grant: GrantView): Promise<void> {
    const who = grant.client_name ?? grant.client_id;
    if (!window.confirm(`Revoke ${who}'s grant ${grant.id}? Its tokens stop working at once.`)) return;
    const answer = await this.io.revoke(grant.id);
    this.note = answer.ok ? `revoked ${who} (${grant.id})` : answer.text;
    await this.load();
  }

  private row(grant: GrantView): HTMLElement {
    const button = el("button", { type: "button", class: "quiet", "data-role": "revoke-grant", "data-grant": grant.id }, "Revoke");
    button.addEventListener("click", () => void this.revoke(grant));
    return el("li", { "data-grant": grant.id },
      el("b", {}, grant.client_name ?? grant.client_id), " ",
      el("span", { class: "hint" }, `${grant.scopes.join(" ")} · ${grant.agents === null ? "every agent" : `only ${grant.agents.join(", ")}`}`
        + ` · signed in with ${grant.signed_in_with} · ${when(grant.created_at)}`), " ",
      button);
  }

  private render(list: GrantList | null): void {
    const body = list === null
      ? el("p", { class: "hint" }, "could not load the grants (an admin token lists them)")
      : list.grants.length === 0
        ? el("p", { class: "hint" }, "No OAuth grants: a remote host gets one when a person approves it on the sign-in page.")
        : el("ul", { class: "grant-list" }, list.grants.map((g) => this.row(g)));
    this.root.replaceChildren(el("h2", {}, "OAuth grants"), ...(this.note ? [el("p", { role: "status" }, this.note)] : []), body);
  }
}
