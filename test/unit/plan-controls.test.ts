// A control in the plan's event phase (worker/rules/plan/controls.ts): what pause, unpause, drain
// and undrain change, what they refuse, and the controls this very plan elects under.
import { describe, expect, it } from "vitest";
import { decideControl, withControl, type ControlRoute } from "../../worker/rules/plan/controls.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import type { ControlsSnapshot } from "../../worker/rules/agent-plan.ts";
import { CONTROLS, NOW } from "./plan-fixtures.ts";

const drained = (...machines: string[]): ControlsSnapshot => ({ ...CONTROLS, drained: new Set(machines) });
const RESERVED: ControlsSnapshot = { ...CONTROLS, reserved: { runner: "r1", until: NOW + 5000 }, reservedMachine: "m1" };

describe("decideControl", () => {
  const cases: { name: string; route: ControlRoute; body?: unknown; controls?: ControlsSnapshot; holder?: string | null; outcome: object; change: object | null; after?: Partial<Record<"paused" | "drained" | "reserved", unknown>> }[] = [
    { name: "pause pauses since now", route: "pause", outcome: { ok: true, changed: true }, change: { pausedSince: NOW }, after: { paused: true } },
    { name: "pause while paused changes nothing", route: "pause", controls: { ...CONTROLS, paused: true }, outcome: { ok: true, changed: false }, change: null },
    { name: "unpause while paused unpauses", route: "unpause", controls: { ...CONTROLS, paused: true }, outcome: { ok: true, changed: true }, change: { pausedSince: null }, after: { paused: false } },
    { name: "drain without a machine drains the holder's", route: "drain", holder: "m1", outcome: { ok: true, changed: true }, change: { drain: { machine: "m1", since: NOW } }, after: { drained: new Set(["m1"]) } },
    { name: "drain with nobody holding and no machine is refused", route: "drain", holder: null, outcome: { ok: false, status: 409, code: "no_holder" }, change: null },
    { name: "drain with a body that is not {machine} is refused", route: "drain", body: { machine: 7 }, outcome: { ok: false, status: 400, code: "bad_request" }, change: null },
    { name: "drain of a drained machine changes nothing", route: "drain", body: { machine: "m2" }, controls: drained("m2"), outcome: { ok: true, changed: false }, change: null },
    { name: "drain past the limit is refused", route: "drain", body: { machine: "new" },
      controls: drained(...Array.from({ length: LIMITS.drainedMachines }, (_, i) => `d${i}`)), outcome: { ok: false, status: 409, code: "bad_request" }, change: null },
    { name: "drain of the restarted holder's machine ends the wait for its runner", route: "drain", body: { machine: "m1" }, controls: RESERVED,
      outcome: { ok: true, changed: true }, change: { drain: { machine: "m1", since: NOW }, endReservation: true }, after: { reserved: null } },
    { name: "drain of another machine keeps the wait", route: "drain", body: { machine: "m2" }, controls: RESERVED,
      outcome: { ok: true, changed: true }, change: { drain: { machine: "m2", since: NOW } }, after: { reserved: RESERVED.reserved } },
    { name: "undrain of one machine", route: "undrain", body: { machine: "m2" }, controls: drained("m2", "m3"), outcome: { ok: true, changed: true }, change: { undrain: "m2" },
      after: { drained: new Set(["m3"]) } },
    { name: "undrain without a machine undrains every one", route: "undrain", controls: drained("m2", "m3"), outcome: { ok: true, changed: true }, change: { undrain: null },
      after: { drained: new Set() } },
    { name: "undrain of a machine not drained changes nothing", route: "undrain", body: { machine: "m9" }, controls: drained("m2"), outcome: { ok: true, changed: false }, change: null },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const controls = c.controls ?? CONTROLS;
      const out = decideControl(c.route, c.body, controls, c.holder === undefined ? "m1" : c.holder, NOW);
      expect(out.outcome).toMatchObject(c.outcome);
      expect(out.change).toEqual(c.change);
      expect(withControl(controls, out.change)).toMatchObject(c.after ?? controls);
    });
  }
});
