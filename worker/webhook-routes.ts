// The webhook configuration routes, answered in the Worker with one typed RPC each: PUT, GET and
// DELETE of /webhook (the account's, kept by its directory object) and /agents/{agent}/webhook
// (the agent's own, kept by its agent object), and POST …/webhook/test, which sends a signed
// `webhook.test` event from here (the object signs it; nothing in an object waits on the receiver).
// The body is validated here; bad input is a 400 that reaches no object and changes nothing. GET
// never shows the secret; PUT shows it once, when baton made it. Where a webhook may point is
// rules/webhook-exposure.ts (no private addresses unless BATON_WEBHOOK_ALLOW_PRIVATE is "true").
import { readJsonBody } from "./objects/http.ts";
import { postSigned, type SignedRequest } from "./objects/webhook-delivery.ts";
import { errorResponse, parseBody } from "./wire/protocol.ts";
import { webhookConfigSchema, type WebhookConfigBody, type WebhookTestResult, type WebhookView } from "./wire/webhooks.ts";
import { webhookTargetRefusal } from "./rules/webhook-exposure.ts";

const BODY_BYTES = 8 * 1024;

/** The four methods either object answers. */
export interface WebhookHolder {
  webhook(): Promise<WebhookView | null>;
  setWebhook(body: WebhookConfigBody, origin: string): Promise<WebhookView>;
  deleteWebhook(): Promise<boolean>;
  webhookTest(): Promise<SignedRequest | null>;
}

/**
 * POST …/webhook/test: one signed `webhook.test` event, sent now (never queued or retried), and what
 * the receiver answered. The stored URL is checked again first (stored before the rules, or under
 * other ones): refused, it is a 400 and nothing is sent.
 */
export async function webhookTestRoute(holder: WebhookHolder, what: string, allowPrivateVar: string | undefined): Promise<Response> {
  const allowed = allowPrivate(allowPrivateVar);
  if (typeof allowed === "string") return errorResponse(500, "internal", allowed);
  const req = await holder.webhookTest();
  if (req === null) return errorResponse(404, "not_found", `${what} has no webhook`);
  const refused = webhookTargetRefusal(req.url, allowed);
  if (refused !== null) return errorResponse(400, "bad_request", `the stored webhook is not sent: ${refused}; PUT a URL that is allowed`);
  const result = await postSigned(req, (url, init) => fetch(url, init));
  return Response.json({ id: req.id, url: req.url, status: result.status, delivered: result.error === null, error: result.error } satisfies WebhookTestResult);
}

/** BATON_WEBHOOK_ALLOW_PRIVATE as a flag, or the exact complaint about its value. */
function allowPrivate(raw: string | undefined): boolean | string {
  if (raw === undefined || raw === "" || raw === "false") return false;
  if (raw === "true") return true;
  return `BATON_WEBHOOK_ALLOW_PRIVATE must be true or false, got ${JSON.stringify(raw)}`;
}

/** GET …/webhook; `what` names the webhook in messages ("the account" or "agent reviewer"). */
export async function getWebhook(holder: WebhookHolder, what: string): Promise<Response> {
  const view = await holder.webhook();
  return view ? Response.json(view) : errorResponse(404, "not_found", `${what} has no webhook`);
}

/** PUT …/webhook; `allowPrivateVar` is BATON_WEBHOOK_ALLOW_PRIVATE. */
export async function putWebhook(request: Request, holder: WebhookHolder, allowPrivateVar: string | undefined): Promise<Response> {
  const body = await readJsonBody(request, BODY_BYTES);
  if (!body.ok) return body.response;
  const parsed = parseBody(webhookConfigSchema, body.data);
  if (!parsed.ok) {
    return errorResponse(400, "bad_request",
      `body must be {"url": "http(s)://...", "secret"?: "whsec_...", "rotate_secret"?: true, "keep_old_secret_seconds"?: <0-604800>, "no_holder_after_seconds"?: <1-86400>}: ${parsed.message}`);
  }
  const allowed = allowPrivate(allowPrivateVar);
  if (typeof allowed === "string") return errorResponse(500, "internal", allowed);
  const refused = webhookTargetRefusal(parsed.value.url, allowed);
  if (refused !== null) return errorResponse(400, "bad_request", refused);
  return Response.json(await holder.setWebhook(parsed.value, new URL(request.url).origin));
}

/** DELETE …/webhook: 204, or 404 when there was none. */
export async function deleteWebhook(holder: WebhookHolder, what: string): Promise<Response> {
  return (await holder.deleteWebhook()) ? new Response(null, { status: 204 }) : errorResponse(404, "not_found", `${what} has no webhook`);
}
