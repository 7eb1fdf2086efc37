// Where an agent may run, on its card: a paused agent, drained machines, a lease kept for its
// holder after a coordinator restart, a stored policy that could not be read (the defaults run), each runner's priority, and the line in the order the lease
// would take it (higher priority first, then the oldest claim; drained runners are out of line),
// and for a token that may, the buttons that pause, unpause, drain and undrain it.
import { el, type Child } from "./dom.ts";
import type { Connection, DirectoryEntry, Ui } from "./state.ts";
import { clock } from "./timeline.ts";

/** Whether to show priorities at all: only when some runner of the agent has one other than 0. */
export function usesPriority(entry: DirectoryEntry): boolean {
  return entry.connections.some((c) => (c.priority ?? 0) !== 0);
}

/** A runner's badges: its priority (when the agent uses priorities), its drain, and its stop (serve got SIGTERM). */
export function runnerBadges(entry: DirectoryEntry, conn: Connection): Child[] {
  return [
    usesPriority(entry)
      ? el("span", { class: "chip priority", "data-role": "priority", title: "serve --priority: higher runs the agent by preference" },
        `priority ${conn.priority ?? 0}`)
      : null,
    conn.drained
      ? el("span", { class: "chip drained", "data-role": "drain", title: "its machine is drained: connected, takes no work and no lease" },
        conn.held ? "draining" : "drained")
      : null,
    conn.stopping
      ? el("span", { class: "chip stopping", "data-role": "stopping", title: "its serve is shutting down: takes no new work, and the lease only when no other runner is there" }, "stopping")
      : null,
  ];
}

/** The standby order of the lease: candidates by priority, then claim; stopping runners, drained, then watchers, last. */
export function lineOrder(connections: readonly Connection[]): Connection[] {
  const rank = (c: Connection) => (c.claim_seq === null ? 3 : c.drained ? 2 : c.stopping ? 1 : 0);
  return connections.slice().sort((a, b) => rank(a) - rank(b)
    || (b.priority ?? 0) - (a.priority ?? 0)
    || (a.claim_seq ?? Infinity) - (b.claim_seq ?? Infinity));
}

/** Why a queued message is not handed out now, or null when it should be soon. */
export function waitReason(entry: DirectoryEntry): string | null {
  if (entry.controls?.paused) return "waiting: the agent is paused";
  if (!entry.holder) return "waiting: nobody holds the lease";
  return null;
}

/**
 * The agent's controls as one strip under its header, or null when it runs normally. `age` makes
 * a ticking age from a server timestamp (ages.ts owns the ticking).
 */
export function controlsStrip(entry: DirectoryEntry, age: (since: number) => HTMLElement, now: number): HTMLElement | null {
  const controls = entry.controls;
  if (!controls) return null;
  const connected = new Set(entry.connections.map((c) => c.machine));
  const lines: HTMLElement[] = [];
  if (controls.paused) {
    lines.push(el("p", { class: "control paused", "data-role": "paused-note" },
      el("span", { class: "chip paused" }, "paused"),
      controls.paused_since ? [" since ", clock(controls.paused_since), " (", age(controls.paused_since), ")"] : null,
      ": messages queue and nothing is handed out; the lease stays where it is."));
  }
  if (controls.drained.length) {
    lines.push(el("p", { class: "control drained", "data-role": "drained-note" },
      el("span", { class: "chip drained" }, "drained"), " ",
      controls.drained.flatMap((d, i) => [i ? ", " : null, el("span", { class: "machine", "data-machine": d.machine }, d.machine),
        connected.has(d.machine) ? ` since ${clock(d.since)}` : " (not connected)"]),
      ": takes no work and no lease until undrained."));
  }
  if (controls.reserved_until && controls.reserved_until > now) {
    lines.push(el("p", { class: "control reserved", "data-role": "reserved-note" },
      el("span", { class: "chip" }, "restarted"),
      ` the coordinator restarted: the lease waits for its previous holder until ${clock(controls.reserved_until)}.`));
  }
  const policyProblem = entry.work?.policy_problem;
  if (policyProblem !== undefined) {
    // The mode and limits shown elsewhere are then the defaults in force, not ones anyone set.
    lines.push(el("p", { class: "control policy-problem", "data-role": "policy-problem-note" },
      el("span", { class: "chip" }, "policy unreadable"),
      ` its stored policy could not be read (${policyProblem}): it runs with the default policy until one is saved (baton agent set).`));
  }
  return lines.length ? el("div", { class: "controls", "data-role": "controls" }, lines) : null;
}

/**
 * What a token that may (admin) change on the agent, each behind an in-page confirmation: pause or
 * unpause it, drain or undrain each of its machines (connected or drained). Null for other tokens.
 * A pair (pause/unpause, drain/undrain) shares its key, so the answer shows beside the button that follows.
 */
export function actionsBar(entry: DirectoryEntry, ui: Ui | null): HTMLElement | null {
  if (!ui?.can.admin) return null;
  const agent = entry.agent;
  const c = ui.confirmations;
  const paused = Boolean(entry.controls?.paused);
  const drained = new Set((entry.controls?.drained ?? []).map((d) => d.machine));
  const machines = [...new Set([...entry.connections.map((conn) => conn.machine), ...drained])].sort();
  return el("div", { class: "actions", "data-role": "actions" },
    el("span", { class: "label" }, "Actions"),
    paused
      ? c.control({
        key: `pause:${agent}`, action: "unpause", label: "Unpause", title: "hand messages out again",
        prompt: `Unpause ${agent}? Queued messages are handed out again.`, confirm: "Unpause",
        run: () => ui.act(agent, "unpause", {}, "unpaused"),
      })
      : c.control({
        key: `pause:${agent}`, action: "pause", label: "Pause", title: "hand nothing out; messages queue and the lease stays",
        prompt: `Pause ${agent}? Nothing is handed out until it is unpaused: messages queue, runs already going finish, the lease stays where it is.`, confirm: "Pause",
        run: () => ui.act(agent, "pause", {}, "paused"),
      }),
    machines.map((machine) => (drained.has(machine)
      ? c.control({
        key: `drain:${agent}:${machine}`, action: "undrain", label: `Undrain ${machine}`, title: `let ${machine} take work and the lease again`,
        prompt: `Undrain ${machine}? Its runners take work and the lease again.`, confirm: "Undrain",
        run: () => ui.act(agent, "undrain", { machine }, `undrained ${machine}`),
      })
      : c.control({
        key: `drain:${agent}:${machine}`, action: "drain", label: `Drain ${machine}`, title: `${machine} finishes what it runs and takes no more work`,
        prompt: `Drain ${machine}? Its runners finish what they run, hand the lease on and take no more work until undrained.`, confirm: "Drain",
        run: () => ui.act(agent, "drain", { machine }, `drained ${machine}`),
      }))));
}
