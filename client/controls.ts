// Where an agent may run, for scripts: pause and unpause an agent, drain and undrain a machine.
// Each call answers with the agent's controls after it (paused, drained machines) and whether
// anything changed; calling twice is harmless.
import { agentControlsSchema, type AgentControls } from "../worker/wire/http-responses.ts";
import { requestJson, type Connection } from "./http.ts";
import { routePath } from "../worker/wire/routes.ts";

export type { AgentControls };

function control(conn: Connection, agent: string, route: "pause" | "unpause" | "drain" | "undrain", body?: unknown): Promise<AgentControls> {
  return requestJson(conn, "POST", routePath(`/agents/{agent}/${route}` as const, { agent }), agentControlsSchema, { body });
}

/** Nothing is handed out while paused: messages queue, the lease stays where it is. */
export function pause(agent: string, conn: Connection): Promise<AgentControls> {
  return control(conn, agent, "pause");
}

export function unpause(agent: string, conn: Connection): Promise<AgentControls> {
  return control(conn, agent, "unpause");
}

/**
 * Drains `machine` (default: the holder's): its runners finish what they run, hand the lease on
 * (reason `drained`) and stay connected without taking work. Refused with `no_holder` when no
 * machine is named and nobody holds the lease.
 */
export function drain(agent: string, conn: Connection, machine?: string): Promise<AgentControls> {
  return control(conn, agent, "drain", machine === undefined ? {} : { machine });
}

/** Undrains `machine`, or every drained machine of the agent when none is named. */
export function undrain(agent: string, conn: Connection, machine?: string): Promise<AgentControls> {
  return control(conn, agent, "undrain", machine === undefined ? {} : { machine });
}
