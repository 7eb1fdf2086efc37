// Turns directory entries into DOM. Every value from the coordinator goes in as text, never as
// HTML. Ages are stored as server-time anchors in data attributes and ticked once a second.

const REASONS = { claimed: "claimed", closed: "closed", stale: "went silent", released: "released" };
const TRANSITIONS_SHOWN = 6;
const MESSAGES_SHOWN = 6;

/** Builds an element: attributes (`class`, `data-*`, others) and children (nodes or text). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function formatAge(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

/** An age that ticks: `data-since` is a server timestamp, `data-ttl` (optional) colours heartbeats. */
function age(sinceServerMs, ttlMs) {
  return el("span", { class: "age", "data-since": Math.round(sinceServerMs), "data-ttl": ttlMs });
}

export function tickAges(root, state) {
  const now = Date.now() + state.clockOffset;
  for (const node of root.querySelectorAll("[data-since]")) {
    const elapsed = now - Number(node.dataset.since);
    node.textContent = formatAge(elapsed);
    if (node.dataset.ttl) {
      const ttl = Number(node.dataset.ttl);
      node.dataset.health = elapsed > ttl ? "stale" : elapsed > ttl / 2 ? "late" : "ok";
    }
  }
}

function heartbeatAt(entry, conn) {
  return entry.reported_at - conn.heartbeat_age_seconds * 1000;
}

/**
 * A claim with its machine: named by the transition itself when it carries `from_machine` /
 * `to_machine`, else by a current connection, else by what this page has seen before.
 */
function claimLabel(entry, claim, known, named) {
  if (claim === null) return "nobody";
  const machine = named ?? entry.connections.find((c) => c.claim_seq === claim)?.machine ?? known?.get(claim);
  return machine ? `${machine} #${claim}` : `#${claim}`;
}

function connectionRow(entry, conn, ttlMs, label) {
  return el("li", { class: `conn ${label}`, "data-role": label, "data-claim": conn.claim_seq ?? undefined },
    el("span", { class: "machine" }, conn.machine),
    el("span", { class: "meta" },
      conn.claim_seq === null ? "not claiming" : `claim #${conn.claim_seq}`,
      " · heartbeat ", age(heartbeatAt(entry, conn), ttlMs), " ago"));
}

function holderBlock(entry, ttlMs) {
  const holder = entry.holder;
  const conn = holder ? entry.connections.find((c) => c.claim_seq === holder.claim_seq) : null;
  if (!holder) {
    return el("div", { class: "holder none", "data-role": "no-holder" },
      el("span", { class: "label" }, "Holder"),
      el("span", { class: "machine" }, "nobody holds the lease"));
  }
  return el("div", { class: "holder", "data-role": "holder" },
    el("span", { class: "label" }, "Holder"),
    el("span", { class: "machine" }, holder.machine),
    el("span", { class: "meta" },
      `claim #${holder.claim_seq} · fence ${entry.fence} · since ${clock(holder.since)} (`, age(holder.since), ")",
      conn ? [" · heartbeat ", age(heartbeatAt(entry, conn), ttlMs), " ago"] : null));
}

function standbyBlock(entry, ttlMs) {
  const waiting = entry.connections.filter((c) => !c.held);
  if (waiting.length === 0) return el("p", { class: "empty-line" }, "No standby: if the holder goes, nobody takes over.");
  return el("div", { class: "standbys" },
    el("span", { class: "label" }, `In line (${entry.serve_standbys})`),
    el("ol", {}, waiting.map((c) => connectionRow(entry, c, ttlMs, c.claim_seq === null ? "watcher" : "standby"))));
}

function transitionsBlock(entry, known) {
  const rows = entry.transitions.slice(0, TRANSITIONS_SHOWN);
  if (rows.length === 0) return null;
  return el("details", { class: "history", open: true },
    el("summary", {}, "Lease history"),
    el("ol", {}, rows.map((t) => el("li", { "data-reason": t.reason },
      el("time", { datetime: new Date(t.at).toISOString() }, clock(t.at)),
      el("span", { class: `reason ${t.reason}` }, REASONS[t.reason] ?? t.reason),
      el("span", { class: "move" }, t.reason === "claimed" && t.from_claim === null
        ? `→ ${claimLabel(entry, t.to_claim, known, t.to_machine)}`
        : `${claimLabel(entry, t.from_claim, known, t.from_machine)} → ${claimLabel(entry, t.to_claim, known, t.to_machine)}`),
      el("span", { class: "fence" }, `fence ${t.fence}`)))));
}

function messagesBlock(entry) {
  const messages = (entry.recent_messages ?? []).slice(0, MESSAGES_SHOWN);
  if (messages.length === 0) return null;
  return el("details", { class: "messages", open: true },
    el("summary", {}, "Recent messages"),
    el("ol", {}, messages.map((m) => el("li", { "data-status": m.status },
      el("span", { class: "id" }, `#${m.id}`),
      el("span", { class: `chip ${m.status}` }, m.status),
      m.attempts > 1 ? el("span", { class: "attempts" }, `attempt ${m.attempts}`) : null,
      el("span", { class: "preview" }, m.preview)))));
}

function agentCard(entry, known) {
  const ttlMs = entry.heartbeat_ttl_seconds * 1000;
  return el("article", { class: "agent", "data-agent": entry.agent },
    el("header", {},
      el("h2", {}, entry.agent),
      el("span", { class: "counts" },
        `${entry.connection_count} connection${entry.connection_count === 1 ? "" : "s"} · fence ${entry.fence}`)),
    holderBlock(entry, ttlMs),
    standbyBlock(entry, ttlMs),
    transitionsBlock(entry, known),
    messagesBlock(entry));
}

function emptyState(signedOut) {
  if (signedOut) return el("section", { class: "empty" }, el("h2", {}, "Sign in to see your agents"), el("p", {}, "Save your token above."));
  return el("section", { class: "empty" },
    el("h2", {}, "No agent is connected"),
    el("p", {}, "Start the same agent on every machine that may run it; one holds the lease, the others wait in line:"),
    el("pre", {}, el("code", {}, "npx baton serve reviewer -- ./run-agent.sh")),
    el("p", { class: "hint" }, "Against a deployed coordinator add ", el("code", {}, "--url https://…"),
      ". Agents appear here the moment they connect."));
}

/** Replaces the list with one card per agent, sorted by name, or the empty state. */
export function renderAgents(root, entries, state) {
  const cards = entries.slice().sort((a, b) => a.agent.localeCompare(b.agent))
    .map((entry) => agentCard(entry, state.machines?.get(entry.agent)));
  if (cards.length === 0 && state.loaded === false && !state.signedOut) {
    root.replaceChildren(el("p", { class: "loading" }, "Loading…"));
  } else {
    root.replaceChildren(...(cards.length ? cards : [emptyState(state.signedOut)]));
  }
  tickAges(root, state);
}
