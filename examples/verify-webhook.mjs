// Verifies a baton webhook delivery in Node (18+), with nothing but node:crypto. The README's
// "Webhooks" section shows this function; test/e2e/webhooks.test.ts verifies real deliveries with it.
import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * True when `header` (the baton-signature header) signs `rawBody` (the exact bytes received, as a
 * string) with `secret`, and its timestamp is within `toleranceSeconds` of now (replays are refused).
 */
export function verifyBatonSignature(secret, header, rawBody, toleranceSeconds = 300, nowSeconds = Date.now() / 1000) {
  const parts = Object.fromEntries(String(header).split(",").map((kv) => kv.split("=", 2)));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds || !/^[0-9a-f]{64}$/.test(parts.v1 ?? "")) return false;
  const expected = createHmac("sha256", secret).update(`${t}.${rawBody}`).digest();
  return timingSafeEqual(expected, Buffer.from(parts.v1, "hex"));
}
