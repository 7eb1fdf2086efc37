// One webhook POST, for the outbox's attempts and for `baton webhook test`: the signed request
// (rules/webhooks.ts builds the body, webhook-signature.ts signs it) and what the receiver said.
import { liveSecrets, testEvent, WEBHOOK } from "../rules/webhooks.ts";
import type { WebhookConfig } from "./webhook-config.ts";
import { randomHex128 } from "./secrets.ts";
import { signedHeaders } from "./webhook-signature.ts";

/** The outcome of one POST: the HTTP status (null: no answer) and, without a 2xx, why. */
export interface AttemptResult {
  status: number | null;
  error: string | null;
}

export type Sender = (url: string, init: RequestInit) => Promise<Response>;

/** A signed request ready to send: built where the secret is kept, sent by whoever may wait for it. */
export interface SignedRequest {
  id: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Sends one signed request, waiting at most WEBHOOK.timeoutMs, following no redirect. */
export async function postSigned(req: SignedRequest, send: Sender): Promise<AttemptResult> {
  try {
    const res = await send(req.url, { method: "POST", headers: req.headers, body: req.body, signal: AbortSignal.timeout(WEBHOOK.timeoutMs), redirect: "manual" });
    // The answer's body is not needed; dropping it frees the connection.
    await res.body?.cancel().catch(() => undefined);
    const ok = res.status >= 200 && res.status < 300;
    return { status: res.status, error: ok ? null : `the receiver answered ${res.status}` };
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    return { status: null, error: timedOut ? `no answer within ${WEBHOOK.timeoutMs / 1000} s` : `no answer: ${String((err as Error)?.message ?? err).slice(0, 200)}` };
  }
}

/** A `webhook.test` event for this configuration, signed with its live secrets (`agent` null: the account's). */
export async function testRequest(config: WebhookConfig, who: { account: string; agent: string | null }, now: number): Promise<SignedRequest> {
  const id = `evt_${randomHex128()}`;
  const body = JSON.stringify(testEvent({ id, createdAt: now, origin: config.origin, ...who }));
  return { id, url: config.url, headers: await signedHeaders(id, "webhook.test", body, liveSecrets(config, now), now), body };
}
