// Ages that tick: an element carries a server timestamp (`data-since`) and, once a second, the
// page writes how long ago that was by the server's clock; a heartbeat's age is coloured against
// its TTL. A card's "unknown" turns on once its agent's object stopped vouching for it.
import { el } from "./dom.ts";

export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** An age that ticks: `data-since` is a server timestamp, `data-ttl` (optional) colours heartbeats. */
export function age(sinceServerMs: number, ttlMs?: number): HTMLSpanElement {
  return el("span", { class: "age", "data-since": Math.round(sinceServerMs), "data-ttl": ttlMs });
}

export function tickAges(root: ParentNode, now: number): void {
  for (const node of root.querySelectorAll<HTMLElement>("[data-since]")) {
    const elapsed = now - Number(node.dataset.since);
    node.textContent = formatAge(elapsed);
    if (node.dataset.ttl) {
      const ttl = Number(node.dataset.ttl);
      node.dataset.health = elapsed > ttl ? "stale" : elapsed > ttl / 2 ? "late" : "ok";
    }
  }
}

/** Turns a card "unknown" once its agent's object stopped vouching for it (checked on every tick). */
export function tickConfirmations(root: ParentNode, now: number): void {
  for (const article of root.querySelectorAll<HTMLElement>("article.agent[data-confirmed-until]")) {
    article.classList.toggle("unconfirmed", now > Number(article.dataset.confirmedUntil));
  }
}
