// The HTTP form of a running command's writes (`baton ask`, `baton step`/`effect`, `baton
// heartbeat`, and any language without a socket): each request carries the message's token and run
// key instead of a connection, is checked against its wire schema and budgets, and calls one RPC
// method on the agent's object, which checks the token as it does for the matching frame.
import { readJsonBody } from "./objects/http.ts";
import { approvalAsk } from "./rules/permits.ts";
import { approvalRefusal, askSchema, errorResponse, heartbeatSchema, LIMITS, parseBody, STEP_NAME, stepWriteSchema, utf8Bytes } from "./wire/protocol.ts";
import type { Stub } from "./agents.ts";

const SMALL_BODY_BYTES = 4 * 1024;

/** POST …/ask {token, run_key, question}: a served command's question, which its park carries. */
export async function askRoute(request: Request, id: number, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, SMALL_BODY_BYTES * 2);
  if (!body.ok) return body.response;
  const parsed = parseBody(askSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad question: ${parsed.message}`);
  const answer = await stub.ask(id, parsed.value.token, parsed.value.run_key, parsed.value.question, parsed.value.deadline_seconds ?? null);
  if (!answer.ok) return errorResponse(answer.status, answer.code, answer.message);
  const { ok: _ok, ...asked } = answer;
  return Response.json(asked);
}

const badStepName = () => errorResponse(400, "bad_request", `step names are 1-${LIMITS.stepNameChars} letters, digits, '.', '_', ':' or '-'`);

/** GET a step with its value. */
export async function getStep(request: Request, id: number, name: string, stub: Stub): Promise<Response> {
  if (!STEP_NAME.test(name)) return badStepName();
  const proof = runProofOf(request);
  if (proof === "bad") return errorResponse(400, "bad_request", "a run reads its step with both x-baton-token and x-baton-run-key, or with neither");
  const view = await stub.stepOf(id, name, proof);
  if (view !== null && "ok" in view) return errorResponse(view.status, view.code, view.message);
  if (view !== null && "corrupt" in view) return errorResponse(500, "internal", view.corrupt);
  return view ? Response.json(view) : errorResponse(404, "not_found", `message ${id} has no step ${name}`);
}

/**
 * The run a step read is for: a run replaying its journal proves it is the message's current run,
 * and a stale one is refused as its write would be; a read with neither header inspects (a person, a tool).
 */
function runProofOf(request: Request): { token: number; runKey: string } | null | "bad" {
  const token = request.headers.get("x-baton-token");
  const runKey = request.headers.get("x-baton-run-key");
  if (token === null && runKey === null) return null;
  const n = Number(token);
  return Number.isSafeInteger(n) && n >= 1 && runKey !== null && runKey.length > 0 && runKey.length <= 128 ? { token: n, runKey } : "bad";
}

/** PUT records a step under the message's token and run key (the HTTP form of the `step` frame, for `baton step` and any language). */
export async function putStep(request: Request, id: number, name: string, stub: Stub): Promise<Response> {
  if (!STEP_NAME.test(name)) return badStepName();
  const body = await readJsonBody(request, LIMITS.stepValueBytes + SMALL_BODY_BYTES);
  if (!body.ok) return body.response;
  const parsed = parseBody(stepWriteSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad step: ${parsed.message}`);
  const { token, run_key, kind, phase, value, blob, on_unknown, approve } = parsed.value;
  const json = value === undefined ? null : JSON.stringify(value);
  if (json !== null && utf8Bytes(json) > LIMITS.stepValueBytes) return errorResponse(413, "too_large", `a step's value is JSON of at most ${LIMITS.stepValueBytes} bytes`);
  const unapprovable = approve === undefined ? null : approvalRefusal(kind, phase, approve);
  if (unapprovable !== null) return errorResponse(unapprovable.code === "too_large" ? 413 : 400, unapprovable.code, `bad step: ${unapprovable.message}`);
  const answer = await stub.recordStep(id, token, run_key, {
    name, kind, phase, value: json, blob: blob === undefined ? null : { id: blob, bytes: 0 }, onUnknown: on_unknown ?? null,
    approve: approve === undefined ? null : approvalAsk(approve),
  });
  if (!answer.ok) return errorResponse(answer.status, answer.code, answer.message);
  const { ok: _ok, ...written } = answer;
  return Response.json(written);
}

export async function heartbeatRoute(request: Request, id: number, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, LIMITS.progressBytes + SMALL_BODY_BYTES);
  if (!body.ok) return body.response;
  const parsed = parseBody(heartbeatSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad heartbeat: ${parsed.message}`);
  const { token, run_key, details } = parsed.value;
  if (details !== undefined && utf8Bytes(JSON.stringify(details)) > LIMITS.progressBytes) {
    return errorResponse(413, "too_large", `heartbeat details are JSON of at most ${LIMITS.progressBytes} bytes`);
  }
  const answer = await stub.heartbeatRun(id, token, run_key, details);
  if (!answer.ok) return errorResponse(answer.status, answer.code, answer.message);
  const { ok: _ok, ...beat } = answer;
  return Response.json(beat);
}
