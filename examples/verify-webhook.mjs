// Verifies a baton webhook delivery with the Standard Webhooks library (`npm i standardwebhooks`);
// any Standard Webhooks library, in any language, does the same. docs/guides/operate.md's "Webhooks"
// section shows this function; test/e2e/webhooks.test.ts verifies real deliveries with it.
import { Webhook } from "standardwebhooks";

/**
 * The event, when the headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`) sign
 * `rawBody` (the exact bytes received, as a string) with `secret` (`whsec_...`) and the timestamp
 * is within 5 minutes of now; otherwise it throws (WebhookVerificationError).
 */
export function verifyBatonWebhook(secret, headers, rawBody) {
  return new Webhook(secret).verify(rawBody, headers);
}
