// Renders an agent's presence report (GET /agents/{agent}/presence) as a small text table.
import type { DirectoryWhoEntry } from "../../worker/wire/server-frames.ts";
import { unknownOutcomeReason } from "../../worker/wire/step-keys.ts";

/**
 * What the table shows: presence from the agent itself, or a directory entry (which says whether
 * its agent still vouches for it); `GET /agents?view=who` carries exactly this.
 */
export type PresenceReport = Omit<DirectoryWhoEntry, "confirmed" | "confirmed_until"> & { confirmed?: boolean; confirmed_until?: number };

function age(seconds: number): string {
  return seconds < 60 ? `${seconds.toFixed(1)}s` : `${Math.floor(seconds / 60)}m${Math.round(seconds % 60)}s`;
}

function since(ms: number, now: number): string {
  return `${age(Math.max(0, (now - ms) / 1000))} ago`;
}

/** A heading line with holder, fence and standby count, then one row per connection. */
export function renderPresence(p: PresenceReport, now: number = Date.now()): string {
  const holder = p.holder
    ? `holder claim ${p.holder.claim_seq} on ${p.holder.machine} (fence ${p.fence}, since ${since(p.holder.since, now)})`
    : `no holder (fence ${p.fence})`;
  const standbys = `${p.serve_standbys} standby${p.serve_standbys === 1 ? "" : "s"}`;
  if (p.confirmed === false) {
    const since = p.confirmed_until === undefined ? "" : ` since ${new Date(p.confirmed_until).toISOString()}`;
    return `${p.agent}: unknown: its coordinator object has not confirmed this${since}; last known: ${holder}, ${standbys}\n`;
  }
  const lines = [`${p.agent}: ${holder}, ${standbys}, heartbeat TTL ${p.heartbeat_ttl_seconds}s`, workLine(p), ...policyProblemLines(p), ...unknownOutcomeLines(p)];
  if (p.controls.paused) lines.push(`  paused${p.controls.paused_since ? ` since ${since(p.controls.paused_since, now)}` : ""}: messages queue, nothing is handed out`);
  if (p.controls.drained.length) lines.push(`  drained: ${p.controls.drained.map((d) => d.machine).join(", ")}`);
  if (p.controls.reserved_until && p.controls.reserved_until > now) lines.push("  coordinator restarted: the lease waits for its previous holder");
  if (p.connections.length === 0) return `${lines.join("\n")}\n  no connections\n`;
  const rows = [["", "CLAIM", "MACHINE", "PRIORITY", "ROLE", "HEARTBEAT", "JOINED", "CURSOR", "RUNNING"]];
  for (const c of inLineOrder(p.connections)) {
    rows.push([
      c.held ? "*" : "",
      c.claim_seq === null ? "-" : String(c.claim_seq),
      c.machine,
      String(c.priority),
      c.stopping ? (c.held ? "holder, stopping" : "stopping") : c.held ? (c.drained ? "holder, draining" : "holder") : c.claim_seq === null ? "not claiming" : c.drained ? "drained" : "standby",
      c.heartbeat_age_seconds === null ? `within ${p.heartbeat_ttl_seconds}s` : `${age(c.heartbeat_age_seconds)} ago`,
      since(c.joined_at, now),
      String(c.cursor),
      `${c.running}/${c.slots}`,
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) lines.push(`  ${r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()}`);
  return `${lines.join("\n")}\n`;
}

/**
 * Connections in the order the lease would take them: the holder, then candidates by priority
 * (higher first) and claim (older first), then stopping runners, then drained runners, then
 * connections that do not claim.
 */
export function inLineOrder(conns: PresenceReport["connections"]): PresenceReport["connections"] {
  const rank = (c: PresenceReport["connections"][number]) => (c.held ? 0 : c.claim_seq === null ? 4 : c.drained ? 3 : c.stopping ? 2 : 1);
  return [...conns].sort((a, b) => rank(a) - rank(b) || b.priority - a.priority || (a.claim_seq ?? Infinity) - (b.claim_seq ?? Infinity));
}

/**
 * Messages: the policy, how many wait, and which run, are parked or failed. Presence lists the
 * newest of each (20 parked) and counts them all: what it does not list is said as "and K more".
 */
function workLine(p: PresenceReport): string {
  const w = p.work;
  const ids = (list: { id: number }[], total: number) => {
    if (list.length === 0) return "";
    const more = total - list.length;
    return ` (${list.map((m) => m.id).join(", ")}${more > 0 ? ` and ${more} more` : ""})`;
  };
  return `  messages (${w.mode}): ${w.counts.queued} queued, ${w.counts.running} running${ids(w.running, w.counts.running)}, ` +
    `${w.counts.parked} parked${ids(w.parked, w.counts.parked)}, ${w.counts.failed} failed${ids(w.failed, w.counts.failed)}`;
}

/** The stored policy could not be read: the mode shown is the default in force, not one anyone set. */
function policyProblemLines(p: PresenceReport): string[] {
  const problem = p.work.policy_problem;
  return problem === undefined ? [] : [`  policy: could not be read (${problem}); the defaults run until \`baton agent set ${p.agent}\` saves one`];
}

/** A line per parked message waiting on an effect's unknown outcome: the step, and the two answers. */
function unknownOutcomeLines(p: PresenceReport): string[] {
  return p.work.parked.flatMap(({ id, waiting_on }) => (waiting_on === null || waiting_on === undefined
    ? []
    : [`  parked ${id}: ${unknownOutcomeReason(waiting_on)}: baton resume ${p.agent} ${id} --done | --redo`]));
}
