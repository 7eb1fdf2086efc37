// A control (pause, unpause, drain, undrain) or a policy update, decided in the plan's event phase:
// what it changes of the stored settings, laid over the snapshot so that this very plan elects and
// dispatches under it (a pause holds hand-outs, a drain may move the lease at its safe point).
// The object stores the change (objects/agent-controls.ts, run-policy-store.ts); refusals change nothing.
import type { MessagePolicy } from "../message-lease.ts";
import { drainSchema, LIMITS } from "../../wire/protocol.ts";
import type { ErrorCode } from "../../wire/error-codes.ts";
import type { ControlsSnapshot } from "./types.ts";

export type ControlRoute = "pause" | "unpause" | "drain" | "undrain";

export type ControlOutcome = { ok: true; changed: boolean } | { ok: false; status: number; code: ErrorCode; message: string };

/** What a control changes of the stored controls (absent: unchanged). */
export interface ControlChange {
  /** Paused since then, or unpaused (null). */
  pausedSince?: number | null;
  drain?: { machine: string; since: number };
  /** One machine undrained, or every one (null). */
  undrain?: string | null;
  /** The lease no longer waits for the restarted holder's runner: its machine was drained. */
  endReservation?: boolean;
}

export interface ControlPlan {
  outcome: ControlOutcome;
  change: ControlChange | null;
}

const unchanged: ControlPlan = { outcome: { ok: true, changed: false }, change: null };
const refused = (status: number, code: ErrorCode, message: string): ControlPlan => ({ outcome: { ok: false, status, code, message }, change: null });

/**
 * Pause, unpause, drain or undrain over the controls as stored. Drain without a machine drains the
 * holder's (`holderMachine`); undrain without one undrains every machine.
 */
export function decideControl(route: ControlRoute, body: unknown, controls: ControlsSnapshot, holderMachine: string | null, now: number): ControlPlan {
  if (route === "pause" || route === "unpause") {
    const on = route === "pause";
    return on === controls.paused ? unchanged : { outcome: { ok: true, changed: true }, change: { pausedSince: on ? now : null } };
  }
  const parsed = drainSchema.safeParse(body ?? {});
  if (!parsed.success) return refused(400, "bad_request", 'body must be {} or {"machine": "<label>"}');
  const machine = parsed.data.machine;
  const drained = controls.drained;
  if (route === "undrain") {
    const changed = machine === undefined ? drained.size > 0 : drained.has(machine);
    return changed ? { outcome: { ok: true, changed }, change: { undrain: machine ?? null } } : unchanged;
  }
  const target = machine ?? holderMachine;
  if (target === null) return refused(409, "no_holder", "nobody holds the lease; name the machine to drain");
  if (drained.has(target)) return unchanged;
  if (drained.size >= LIMITS.drainedMachines) return refused(409, "bad_request", `at most ${LIMITS.drainedMachines} machines may be drained at once`);
  // A drained machine takes no lease, so the lease no longer waits for its runner after a restart.
  const endReservation = controls.reservedMachine !== undefined && controls.reservedMachine !== null && controls.reservedMachine === target;
  return { outcome: { ok: true, changed: true }, change: { drain: { machine: target, since: now }, ...(endReservation ? { endReservation } : {}) } };
}

/** The controls as the change leaves them. */
export function withControl(controls: ControlsSnapshot, change: ControlChange | null): ControlsSnapshot {
  if (change === null) return controls;
  const drained = new Set(controls.drained);
  if (change.drain) drained.add(change.drain.machine);
  if (change.undrain === null) drained.clear();
  else if (change.undrain !== undefined) drained.delete(change.undrain);
  return {
    ...controls,
    paused: change.pausedSince === undefined ? controls.paused : change.pausedSince !== null,
    drained,
    reserved: change.endReservation ? null : controls.reserved,
    ...(change.endReservation ? { reservedMachine: null } : {}),
  };
}

/** A policy update laid over the stored policy, or why it is refused (nothing is stored then). */
export type PolicyDecision = { ok: true; policy: MessagePolicy } | { ok: false; message: string };

/**
 * A debounce holds a message back only under on_busy replace: asked for anywhere else it would be
 * stored and do nothing, so it is refused; moving on_busy away from replace drops a debounce that
 * no longer applies, so the policy shown is the policy that acts.
 */
export function decidePolicy(policy: MessagePolicy, update: Partial<MessagePolicy>): PolicyDecision {
  const next = { ...policy, ...update };
  if (next.onBusy === "replace") return { ok: true, policy: next };
  if (update.debounceMs !== undefined && update.debounceMs !== null && update.debounceMs > 0) {
    return { ok: false, message: `debounce_ms only applies with on_busy replace (this agent's would be ${next.onBusy}); nothing was changed` };
  }
  if (update.debounceMaxMs !== undefined && update.debounceMaxMs !== null && update.debounceMaxMs > 0) {
    return { ok: false, message: `debounce_max_ms only applies with on_busy replace (this agent's would be ${next.onBusy}); nothing was changed` };
  }
  return { ok: true, policy: { ...next, debounceMs: null, debounceMaxMs: null } };
}
