// The schedule routes of an agent (/agents/{agent}/schedules...), answered in the Worker: the body
// is read within its budget and parsed by the wire schema, then one RPC on the agent's object,
// which checks the cadence (rules/schedules.ts: a bad cron names its field) and stores nothing
// it refuses.
import type { AgentHandler } from "./agents.ts";
import { addHoldingPlace } from "./account-place.ts";
import { readJsonBody } from "./objects/http.ts";
import { directoryObjectName } from "./objects/names.ts";
import { errorResponse, LIMITS, parseBody } from "./wire/protocol.ts";
import type { RouteKey } from "./wire/routes.ts";
import { scheduleBodySchema, type ScheduleList, type ScheduleRemoved } from "./wire/schedules.ts";
import type { ScheduleAnswer } from "./objects/agent-schedules.ts";

type ScheduleRoute = Extract<RouteKey, `${string} /agents/{agent}/schedules${string}`>;

/** Room for the text's JSON escapes and the other fields. */
const BODY_BYTES = LIMITS.scheduleTextBytes * 2 + 4096;

function answered(a: ScheduleAnswer, status = 200): Response {
  return a.ok ? Response.json(a.view, { status }) : errorResponse(a.status, a.code, a.message);
}

/** The schedule id in the path: a positive integer, or a 404 naming what was asked for. */
function scheduleId(raw: string | undefined): number | Response {
  const id = Number(raw);
  return Number.isSafeInteger(id) && id >= 1 && /^\d+$/.test(raw ?? "") ? id : errorResponse(404, "not_found", `no schedule ${raw ?? ""}`);
}

function withId(handle: (id: number, ...rest: Parameters<AgentHandler>) => ReturnType<AgentHandler>): AgentHandler {
  return (call, stub, n) => {
    const id = scheduleId(call.params.schedule);
    return typeof id === "number" ? handle(id, call, stub, n) : id;
  };
}

export const scheduleHandlers: { [K in ScheduleRoute]: AgentHandler } = {
  "GET /agents/{agent}/schedules": async ({ params }, stub) => Response.json({ agent: params.agent!, schedules: await stub.listSchedules() } satisfies ScheduleList),
  "POST /agents/{agent}/schedules": async ({ request, env, account, params }, stub) => {
    const body = await readJsonBody(request, BODY_BYTES);
    if (!body.ok) return body.response;
    const parsed = parseBody(scheduleBodySchema, body.data);
    if (!parsed.ok) return errorResponse(400, "bad_request", `bad schedule: ${parsed.message}`);
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account)));
    const agent = params.agent!;
    return answered(await addHoldingPlace({
      reserve: () => directory.reserveSchedule(agent),
      release: (place) => directory.releaseSchedule(agent, place),
      add: (elsewhere) => stub.addSchedule(parsed.value, elsewhere),
      grew: (a) => a.ok,
    }), 201);
  },
  "GET /agents/{agent}/schedules/{schedule}": withId(async (id, _, stub) => answered(await stub.schedule(id))),
  "POST /agents/{agent}/schedules/{schedule}/pause": withId(async (id, _, stub) => answered(await stub.pauseSchedule(id, true))),
  "POST /agents/{agent}/schedules/{schedule}/resume": withId(async (id, _, stub) => answered(await stub.pauseSchedule(id, false))),
  "DELETE /agents/{agent}/schedules/{schedule}": withId(async (id, _, stub) => (await stub.removeSchedule(id)) ? Response.json({ id, removed: true } satisfies ScheduleRemoved) : errorResponse(404, "not_found", `no schedule ${id}`)),
};
