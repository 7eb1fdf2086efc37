// The MAC of a webhook delivery, with Web Crypto only (the same in workerd and Node): what
// `baton-signature`'s v1 carries, over rules/webhooks.ts signatureBase.

/** Hex HMAC-SHA256 of `text` under `secret`. */
export async function hmacHex(secret: string, text: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(text)));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}
