// The parts of an agent's card that say who runs it: the holder, the line of standbys, the card
// in one line (compact view), the lease history, and the page's empty states. Pure builders from
// a directory entry; render.ts assembles them.
import { age, formatAge } from "./ages.ts";
import { lineOrder, runnerBadges } from "./controls.ts";
import { el, type Child } from "./dom.ts";
import type { Connection, DirectoryEntry, PageState, Transition } from "./state.ts";
import { clock, REASON_NOTES, REASONS } from "./timeline.ts";

const TRANSITIONS_SHOWN = 6;

/** A measured age ticks on from the report; the directory measures none, so only its true bound is shown. */
function heartbeat(entry: DirectoryEntry, conn: Connection, ttlMs: number): Child[] {
  if (conn.heartbeat_age_seconds === null || conn.heartbeat_age_seconds === undefined) {
    return [" · heard within the last ", formatAge(ttlMs)];
  }
  return [" · heartbeat ", age(entry.reported_at - conn.heartbeat_age_seconds * 1000, ttlMs), " ago"];
}

/**
 * A claim with its machine: named by the transition itself when it carries `from_machine` /
 * `to_machine`, else by a current connection, else by what this page has seen before.
 */
function claimLabel(entry: DirectoryEntry, claim: number | null, known: ReadonlyMap<number, string> | undefined, named: string | null): string {
  if (claim === null) return "nobody";
  const machine = named ?? entry.connections.find((c) => c.claim_seq === claim)?.machine ?? known?.get(claim);
  return machine ? `${machine} #${claim}` : `#${claim}`;
}

function connectionRow(entry: DirectoryEntry, conn: Connection, ttlMs: number, label: string): HTMLLIElement {
  return el("li", { class: `conn ${label}`, "data-role": label, "data-claim": conn.claim_seq ?? undefined, "data-drained": conn.drained || undefined },
    el("span", { class: "machine" }, conn.machine),
    runnerBadges(entry, conn),
    el("span", { class: "meta" },
      conn.claim_seq === null ? "not claiming" : `claim #${conn.claim_seq}`,
      heartbeat(entry, conn, ttlMs)));
}

export function pool(entry: DirectoryEntry): boolean {
  return entry.work?.mode === "pool";
}

/**
 * An agent no runner has ever served and with nothing waiting to run: one an MCP host only asks
 * people through, by design. Its card says so calmly; "nobody holds the lease" is for agents whose
 * work waits for a runner, or whose runners went.
 */
function runnerless(entry: DirectoryEntry): boolean {
  const counts = entry.work?.counts;
  return entry.fence === 0 && entry.connections.length === 0 && !counts?.queued && !counts?.running;
}

const RUNNERLESS = "no runner: none has ever served it, and nothing waits to run";

function noHolderText(entry: DirectoryEntry): string {
  const claiming = entry.connections.filter((c) => c.claim_seq !== null);
  if (claiming.length > 0 && claiming.every((c) => c.drained)) return "nobody holds the lease: every runner is drained";
  return "nobody holds the lease";
}

export function holderBlock(entry: DirectoryEntry, ttlMs: number): HTMLElement {
  const holder = entry.holder;
  const conn = holder ? entry.connections.find((c) => c.claim_seq === holder.claim_seq) : null;
  if (!holder && runnerless(entry)) {
    return el("div", { class: "holder runnerless", "data-role": "no-runner" },
      el("span", { class: "label" }, "Holder"),
      el("span", { class: "machine" }, RUNNERLESS));
  }
  if (!holder) {
    return el("div", { class: "holder none", "data-role": "no-holder" },
      el("span", { class: "label" }, "Holder"),
      el("span", { class: "machine" }, noHolderText(entry)));
  }
  return el("div", { class: `holder${conn?.drained ? " draining" : ""}`, "data-role": "holder", "data-drained": conn?.drained || undefined },
    el("span", { class: "label" }, pool(entry) ? "Holder (serve lease; in pool mode every runner takes messages)" : "Holder"),
    el("span", { class: "machine" }, holder.machine),
    conn ? runnerBadges(entry, conn) : null,
    el("span", { class: "meta" },
      `claim #${holder.claim_seq} · fence ${entry.fence} · since ${clock(holder.since)} (`, age(holder.since), ")",
      conn ? heartbeat(entry, conn, ttlMs) : null,
      conn?.drained || conn?.stopping ? " · hands the lease on when its run ends" : null));
}

function rowLabel(conn: Connection): "watcher" | "drained" | "standby" {
  return conn.claim_seq === null ? "watcher" : conn.drained ? "drained" : "standby";
}

/**
 * Who waits for the lease. "No standby" is said only while someone holds it: with nobody holding
 * it the holder block already says so, and "if the holder goes" would speak of nobody.
 */
export function standbyBlock(entry: DirectoryEntry, ttlMs: number): HTMLElement | null {
  const waiting = lineOrder(entry.connections.filter((c) => !c.held));
  const inLine = waiting.filter((c) => rowLabel(c) === "standby").length;
  const none = inLine === 0 && entry.holder ? el("p", { class: "empty-line", "data-role": "no-standby" }, "No standby: if the holder goes, nobody takes over.") : null;
  if (waiting.length === 0) return none;
  const label = pool(entry) ? `Other runners, taking messages too (${entry.serve_standbys})`
    : entry.holder ? `In line (${entry.serve_standbys})` : `Connected runners (${waiting.length})`;
  return el("div", { class: "standbys" },
    // In pool mode every runner takes messages; only the serve lease has a line.
    el("span", { class: "label" }, label),
    none,
    el("ol", {}, waiting.map((c) => connectionRow(entry, c, ttlMs, rowLabel(c)))));
}

/** The card in one line, shown in the compact view: who holds it, who waits, what work waits. */
export function summaryLine(entry: DirectoryEntry): HTMLElement {
  const inLine = entry.connections.filter((c) => !c.held && rowLabel(c) === "standby").length;
  const counts = Object.entries(entry.work?.counts ?? {}).filter(([, n]) => n !== undefined && n > 0).map(([status, n]) => `${n} ${status}`);
  const parts = [
    entry.holder ? `held by ${entry.holder.machine}` : runnerless(entry) ? RUNNERLESS : noHolderText(entry),
    entry.holder || inLine > 0 ? `${inLine} in line` : null,
    ...counts,
  ].filter(Boolean);
  return el("p", { class: "summary", "data-role": "summary" }, parts.join(" · "));
}

export function transitionsBlock(entry: DirectoryEntry, transitions: readonly Transition[], known: ReadonlyMap<number, string> | undefined, open: boolean): HTMLElement | null {
  const rows = transitions.slice().sort((a, b) => b.at - a.at || b.fence - a.fence).slice(0, TRANSITIONS_SHOWN);
  if (rows.length === 0) return null;
  return el("details", { class: "history", open, "data-key": "history" },
    el("summary", {}, "Lease history"),
    el("ol", {}, rows.map((t) => el("li", { "data-reason": t.reason },
      el("time", { datetime: new Date(t.at).toISOString() }, clock(t.at)),
      el("span", { class: `reason ${t.reason}`, title: REASON_NOTES[t.reason] }, REASONS[t.reason] ?? t.reason),
      el("span", { class: "move" }, t.reason === "claimed" && t.from_claim === null
        ? `→ ${claimLabel(entry, t.to_claim, known, t.to_machine)}`
        : `${claimLabel(entry, t.from_claim, known, t.from_machine)} → ${claimLabel(entry, t.to_claim, known, t.to_machine)}`),
      el("span", { class: "fence" }, `fence ${t.fence}`)))));
}

export type EmptyKind = "signed-out" | "unreachable" | "no-agents";

export function emptyState(kind: EmptyKind, state: PageState): HTMLElement {
  if (kind === "signed-out") {
    return el("section", { class: "empty", "data-role": "signed-out" }, el("h2", {}, "Sign in to see your agents"), el("p", {}, "Paste your token in the form at the top of the page and save it."));
  }
  if (kind === "unreachable") {
    return el("section", { class: "empty unreachable", "data-role": "unreachable" },
      el("h2", {}, "Coordinator unreachable"),
      el("p", {}, `This page cannot reach the coordinator at ${location.host}`,
        state.unreachableSince ? ` (since ${clock(state.unreachableSince)})` : "", "; it keeps retrying."),
      el("p", { class: "hint" }, "Agents may still be running: this says nothing about them, only about the link to the coordinator."));
  }
  return el("section", { class: "empty", "data-role": "no-agents" },
    el("h2", {}, "No agent is connected"),
    el("p", {}, "Start the same agent on every machine that may run it; one holds the lease, the others wait in line:"),
    el("pre", {}, el("code", {}, "npx baton serve reviewer -- ./run-agent.sh")),
    el("p", { class: "hint" }, "Against a deployed coordinator add ", el("code", {}, "--url https://…"),
      ". Agents appear here the moment they connect."));
}
