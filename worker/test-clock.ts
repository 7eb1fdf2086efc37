// The test hook POST /test/clock: moves one object's clock forward and runs what falls due
// (objects/clock.ts). It exists only where BATON_TEST_CLOCK is "true" (the workerd tests and the
// wrangler dev the end-to-end tests start); anywhere else the path is an unknown route, a 404
// that touches nothing. The caller's own account picks the object: `agent` names an agent
// object, `session` the shard of a session lease, and neither the account's directory.
import * as z from "zod/mini";
import type { Env } from "./env.ts";
import { testClockEnabled, type ClockAdvance } from "./objects/clock.ts";
import { readJsonBody } from "./objects/http.ts";
import { agentObjectName, directoryObjectName } from "./objects/names.ts";
import { leaseShardStub } from "./objects/lease-shard.ts";
import { AGENT_NAME, errorResponse, parseBody, SESSION_NAME } from "./wire/protocol.ts";

export const TEST_CLOCK_PATH = "/test/clock";

/** One hour at most per call: a test that means a day says so in several calls. */
const MAX_ADVANCE_MS = 3_600_000;

export const testClockBody = z.object({
  advance_ms: z.number().check(z.int(), z.minimum(0), z.maximum(MAX_ADVANCE_MS)),
  agent: z.optional(z.string().check(z.regex(AGENT_NAME))),
  session: z.optional(z.string().check(z.regex(SESSION_NAME))),
  /** Let the clock run on from the new time, at the runtime's pace: a shard other tests share must not stand still. */
  run: z.optional(z.boolean()),
});

/** The hook's answer: the object's time after the advance and how many due alarms ran. */
export type TestClockAnswer = ClockAdvance;

/** Null when this is not the hook's request (the Worker routes it as usual). */
export async function testClockRoute(request: Request, env: Env, account: string, url: URL): Promise<Response | null> {
  if (url.pathname !== TEST_CLOCK_PATH || !testClockEnabled(env)) return null;
  if (request.method !== "POST") return errorResponse(404, "not_found", `no route for ${request.method} ${TEST_CLOCK_PATH}`);
  const raw = await readJsonBody(request, 1024);
  if (!raw.ok) return raw.response;
  const body = parseBody(testClockBody, raw.data);
  if (!body.ok) return errorResponse(400, "bad_request", body.message);
  const { advance_ms: ms, agent, session, run } = body.value;
  if (agent !== undefined && session !== undefined) return errorResponse(400, "bad_request", "name an agent or a session, not both");
  const stub = agent !== undefined
    ? env.AGENTS.get(env.AGENTS.idFromName(agentObjectName(account, agent)))
    : session !== undefined
      ? leaseShardStub(env, account, session)
      : env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account)));
  const answer = await stub.advanceClock(ms, run === true);
  if (answer === null) return errorResponse(404, "not_found", `no route for POST ${TEST_CLOCK_PATH}`);
  return Response.json(answer satisfies TestClockAnswer);
}
