// Standard Webhooks v1 signing with Web Crypto only (the same in workerd and Node): the key a
// secret stands for, a fresh `whsec_` secret, and the signed headers of one attempt over
// rules/webhooks.ts signatureBase.
import { signatureBase, signatureHeader } from "../rules/webhooks.ts";
import { SECRET_PREFIX, WEBHOOK_HEADERS } from "../wire/webhooks.ts";

/**
 * The HMAC key of a secret: the bytes a `whsec_<base64>` secret encodes. A secret stored before
 * baton spoke Standard Webhooks (any text of 16-256 characters) keeps signing with its UTF-8 bytes:
 * the same key as `whsec_` + the base64 of that text, which a receiver's library accepts.
 */
function signingKey(secret: string): Uint8Array<ArrayBuffer> {
  if (!secret.startsWith(SECRET_PREFIX)) return new Uint8Array(new TextEncoder().encode(secret));
  try {
    return Uint8Array.from(atob(secret.slice(SECRET_PREFIX.length)), (c) => c.charCodeAt(0));
  } catch {
    // An old plain secret that happens to start with whsec_ (not base64): its text is its key, as for any old secret.
    return new Uint8Array(new TextEncoder().encode(secret));
  }
}

/** A new secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
}

/** Base64 HMAC-SHA256 of `text` under the key `secret` stands for. */
export async function hmacBase64(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", signingKey(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)));
  return btoa(String.fromCharCode(...mac));
}

/** The headers of one attempt: the event's id on every retry, this attempt's time, one signature per live secret. */
export async function signedHeaders(id: string, type: string, body: string, secrets: readonly string[], nowMs: number): Promise<Record<string, string>> {
  const t = Math.floor(nowMs / 1000);
  const macs = await Promise.all(secrets.map((s) => hmacBase64(s, signatureBase(id, t, body))));
  return {
    "content-type": "application/json",
    [WEBHOOK_HEADERS.id]: id,
    [WEBHOOK_HEADERS.timestamp]: String(t),
    [WEBHOOK_HEADERS.signature]: signatureHeader(macs),
    [WEBHOOK_HEADERS.type]: type,
  };
}
