// How a WebSocket client presents its bearer token where headers cannot be set (browsers): it
// offers the subprotocols `baton` and `baton.token.<base64url of the token's UTF-8>`; the
// coordinator answers with `baton` alone, so the token is never echoed.
export const TOKEN_PROTOCOL_PREFIX = "baton.token.";
export const BATON_PROTOCOL = "baton";

/** The subprotocol that carries a token: `baton.token.` + base64url of its UTF-8 bytes, unpadded. */
export function tokenProtocol(token: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(token)) binary += String.fromCharCode(byte);
  return TOKEN_PROTOCOL_PREFIX + btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
