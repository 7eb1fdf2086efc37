// HTTP routes for message leases: the agent's message policy (GET/PUT /agents/{agent}/policy) and
// resuming a parked message (POST /agents/{agent}/messages/{id}/resume). Bad input is a 400 with
// a named code and changes nothing.
import type { MessagePolicy } from "../rules/message-lease.ts";
import { readJsonBody } from "./http.ts";
import { messageView, type WorkDesk } from "./work-desk.ts";
import { errorResponse, LIMITS, parseBody, policySchema, resumeSchema, utf8Bytes } from "../wire/protocol.ts";

const BODY_BYTES = 4 * 1024;

/** Answers the routes above; null for any other route. */
export async function messageRoute(request: Request, route: string, desk: WorkDesk, now: number): Promise<Response | null> {
  if (route === "policy") {
    if (request.method === "GET") return Response.json(policyView(desk.leases.policies.policy()));
    if (request.method === "PUT") return setPolicy(request, desk, now);
    return errorResponse(405, "bad_request", "policy takes GET or PUT");
  }
  const resume = route.match(/^messages\/(\d{1,15})\/resume$/);
  if (resume && request.method === "POST") return resumeMessage(request, Number(resume[1]), desk, now);
  return null;
}

async function setPolicy(request: Request, desk: WorkDesk, now: number): Promise<Response> {
  const body = await readJsonBody(request, BODY_BYTES);
  if (!body.ok) return body.response;
  const parsed = parseBody(policySchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad policy: ${parsed.message}`);
  const { mode, max_running, run_timeout_seconds, max_attempts } = parsed.value;
  const update: Partial<MessagePolicy> = {
    ...(mode === undefined ? {} : { mode }),
    ...(max_running === undefined ? {} : { maxRunning: max_running }),
    ...(run_timeout_seconds === undefined ? {} : { runTimeoutMs: Math.round(run_timeout_seconds * 1000) }),
    ...(max_attempts === undefined ? {} : { maxAttempts: max_attempts }),
  };
  return Response.json(policyView(desk.leases.setPolicy(update, now)));
}

async function resumeMessage(request: Request, id: number, desk: WorkDesk, now: number): Promise<Response> {
  const body = await readJsonBody(request, LIMITS.resumeInputBytes * 2);
  if (!body.ok) return body.response;
  const parsed = parseBody(resumeSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `body must be {"input"?: "<text>"}: ${parsed.message}`);
  const input = parsed.value.input ?? null;
  if (input !== null && utf8Bytes(input) > LIMITS.resumeInputBytes) {
    return errorResponse(413, "too_large", `resume input exceeds ${LIMITS.resumeInputBytes} bytes`);
  }
  const result = desk.leases.resume(id, input, now);
  if (!result.ok) return errorResponse(result.status, result.code, result.message);
  return Response.json(messageView(result.message));
}

export function policyView(p: MessagePolicy) {
  return { mode: p.mode, max_running: p.maxRunning, run_timeout_seconds: p.runTimeoutMs / 1000, max_attempts: p.maxAttempts };
}
