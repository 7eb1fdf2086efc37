// Bearer tokens: each maps to one account. Only SHA-256 hashes are configured and compared,
// in constant time; with no tokens configured every request is refused.

export interface TokenEntry {
  account: string;
  hash: Uint8Array;
}

export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const TOKEN_PROTOCOL_PREFIX = "baton.token.";

/** Parses `account:sha256hex,...`; malformed entries throw with the entry named. */
export function parseTokenConfig(raw: string | undefined): TokenEntry[] {
  if (!raw) return [];
  return raw.split(",").map((s) => s.trim()).filter(Boolean).map((entry) => {
    const [account, hex] = entry.split(":");
    if (!account || !ACCOUNT_NAME.test(account) || !hex || !/^[0-9a-f]{64}$/i.test(hex)) {
      throw new Error(`BATON_TOKENS entry ${JSON.stringify(entry.slice(0, 24))} must be account:sha256-hex`);
    }
    return { account, hash: hexToBytes(hex) };
  });
}

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** Reads the bearer token from the Authorization header or, for browsers' WebSockets, the subprotocol list. */
export function presentedToken(request: Request): string | null {
  const header = request.headers.get("authorization");
  const match = header?.match(/^Bearer\s+(\S+)$/i);
  if (match) return match[1]!;
  const protocols = request.headers.get("sec-websocket-protocol")?.split(",").map((p) => p.trim()) ?? [];
  const carrier = protocols.find((p) => p.startsWith(TOKEN_PROTOCOL_PREFIX));
  if (!carrier) return null;
  try {
    const b64 = carrier.slice(TOKEN_PROTOCOL_PREFIX.length).replace(/-/g, "+").replace(/_/g, "/");
    return atob(b64);
  } catch {
    return null;
  }
}

/** The account the token belongs to, or null. Every configured hash is compared, so timing says nothing. */
export async function authenticate(token: string | null, entries: TokenEntry[]): Promise<string | null> {
  if (token === null || entries.length === 0) return null;
  const hash = await sha256(token);
  let account: string | null = null;
  for (const entry of entries) {
    if (crypto.subtle.timingSafeEqual(hash, entry.hash) && account === null) account = entry.account;
  }
  return account;
}
