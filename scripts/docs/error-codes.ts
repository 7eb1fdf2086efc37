// docs/reference/error-codes.md from ERROR_CODES and CLOSE_CODES (worker/wire/error-codes.ts): a code
// without a meaning here, or a meaning for a code that is gone, fails `npm run docs` and its test.
import { CLOSE_CODES, ERROR_CODES, type ErrorCode } from "../../worker/wire/error-codes.ts";
import { generatedHeader, markdownTable } from "./markdown.ts";

export const ERROR_CODES_PAGE = "docs/reference/error-codes.md";

const MEANING: Record<ErrorCode, string> = {
  bad_json: "not JSON, or nested deeper than the limit",
  bad_frame: "a frame or field that does not match its schema (strict: an unknown field is refused too)",
  unknown_type: "a frame whose `type` the coordinator does not know",
  frame_too_large: "a frame over the frame size limit, refused before parsing",
  binary_frame: "a binary WebSocket frame: the protocol is JSON text only",
  not_holder: "a fenced write from a connection that does not hold the agent's lease",
  stale_fence: "a write carrying an older fence than the current one (the lease moved on)",
  lease_expired: "a frame from a connection already past its heartbeat TTL; the lease moves first",
  unknown_message: "a write for a message the agent does not have (never posted, or pruned from history)",
  too_large: "a value or body over its limit (HTTP 413)",
  rate_limited: "too many frames, characters or replay bytes for now; the message says when to ask again",
  too_many_connections: "the agent (or the account's observers) already has the most connections allowed (HTTP 429)",
  too_many_schedules: "the agent (or the account) already has the most schedules allowed; nothing was stored (HTTP 409)",
  too_many_push_targets: "the task (or the agent, or the account) already has the most A2A push targets allowed; nothing was stored (HTTP 409)",
  unauthorized: "no token, or a token the coordinator does not know (HTTP 401)",
  forbidden: "the token lacks the route's scope, or the request came from a web page on a foreign origin (HTTP 403)",
  bad_name: "an agent or session name outside its rule (HTTP 400)",
  bad_request: "a body or query the route cannot accept; the message names the field and its rule (HTTP 400)",
  not_found: "no route answers this method and path, or the thing asked for does not exist (HTTP 404)",
  lease_held: "another run holds the session lease (HTTP 409); its run id is never shown",
  lease_lost: "a renewal of a session lease that expired or was taken over (HTTP 409)",
  stale_token: "a write with a message token that is no longer the message's current one",
  message_not_running: "a write for a message that is not running, or after its run deadline",
  not_your_message: "a message token sent from another connection than the one it was handed to",
  not_parked: "resume or answer of a message that is not waiting, or retry of one that has not failed (HTTP 409)",
  outcome_unknown: "the message waits on an effect whose outcome is unknown: `resume --done` or `--redo` (HTTP 409); or a decline of an attempt that already ran (it left a step, checkpoint, heartbeat, output, blob or question): fail it",
  effect_in_progress: "a second intent of one effect in the same attempt, or a question asked inside an effect (HTTP 409)",
  question_open: "a reply or plain resume while the run's question is unanswered (HTTP 409)",
  approval_required: "an effect's intent that needs approval found no unspent permit for its effect and arguments (none, other arguments, or spent): the coordinator stored the approval question for the attempt, which parks (HTTP 409)",
  cancelled: "a write of a run whose message was cancelled",
  message_finished: "a cancel of a message that ended first (HTTP 409)",
  busy: "a post refused by the `reject` on-busy policy while its group is busy; names the `holder` (HTTP 409)",
  no_holder: "`drain` with no machine while nobody holds the lease (HTTP 409)",
  upgrade_required: "a serve or observe request that lost its WebSocket upgrade on the way (HTTP 426); retried by the clients",
  not_configured: "a feature whose binding is missing, e.g. large values without R2 (HTTP 501)",
  internal: "a bug in the coordinator (HTTP 500)",
};

const CLOSE_MEANING: Record<keyof typeof CLOSE_CODES, string> = {
  normal: "the connection ended normally",
  goingAway: "the coordinator is going away (restart, deploy)",
  heartbeatTimeout: "no heartbeat within the TTL: the connection is closed and loses the lease",
  policy: "an observer sent something other than a ping",
};

export function errorCodesPage(): string {
  const stray = Object.keys(MEANING).filter((code) => !(ERROR_CODES as readonly string[]).includes(code));
  if (stray.length) throw new Error(`scripts/docs/error-codes.ts: meanings for codes that are gone: ${stray.join(", ")}`);
  const unexplained = ERROR_CODES.filter((code) => !MEANING[code]);
  if (unexplained.length) throw new Error(`scripts/docs/error-codes.ts: say what ${unexplained.join(", ")} means`);
  return [
    generatedHeader("scripts/docs/error-codes.ts", "`ERROR_CODES` and `CLOSE_CODES` in worker/wire/error-codes.ts"),
    "# Error codes",
    "",
    "Every refusal names one of these codes: `{\"type\":\"error\",\"code\",\"message\"}` on a WebSocket,",
    "`{\"error\": code, \"message\"}` over HTTP. A refusal changes nothing.",
    "",
    ...markdownTable(["code", "meaning"], ERROR_CODES.map((code) => [`\`${code}\``, MEANING[code]])),
    "",
    "## WebSocket close codes",
    "",
    ...markdownTable(["code", "name", "meaning"], Object.entries(CLOSE_CODES).map(([name, code]) => [String(code), `\`${name}\``, CLOSE_MEANING[name as keyof typeof CLOSE_CODES]])),
    "",
  ].join("\n");
}
