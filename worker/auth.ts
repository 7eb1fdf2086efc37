// Bearer tokens: each maps to one account. Only SHA-256 hashes are configured and compared,
// in constant time; with no tokens configured every request is refused.
import { TOKEN_PROTOCOL_PREFIX } from "./wire/token-protocol.ts";

export interface TokenEntry {
  account: string;
  hash: Uint8Array;
}

export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
// Browsers cannot set headers on a WebSocket, so they offer `baton` and `baton.token.<base64url>`.
export { BATON_PROTOCOL, TOKEN_PROTOCOL_PREFIX, tokenProtocol } from "./wire/token-protocol.ts";

/**
 * Parses `account:sha256hex,...`. A malformed entry throws naming its position only, so the
 * message never repeats configuration; one hash may not belong to two accounts.
 */
export function parseTokenConfig(raw: string | undefined): TokenEntry[] {
  if (!raw) return [];
  const entries = raw.split(",").map((s) => s.trim()).filter(Boolean).map((entry, index) => {
    const parts = entry.split(":");
    const [account, hex] = parts;
    if (parts.length !== 2 || !account || !ACCOUNT_NAME.test(account) || !hex || !/^[0-9a-f]{64}$/i.test(hex)) {
      throw new Error(`BATON_TOKENS entry ${index + 1} must be account:sha256-hex (account: a-z, 0-9, '_', '-')`);
    }
    return { account, hex: hex.toLowerCase() };
  });
  const owner = new Map<string, string>();
  for (const { account, hex } of entries) {
    const previous = owner.get(hex);
    if (previous !== undefined && previous !== account) {
      throw new Error(`BATON_TOKENS gives one token hash to two accounts (${previous} and ${account})`);
    }
    owner.set(hex, account);
  }
  return entries.map(({ account, hex }) => ({ account, hash: hexToBytes(hex) }));
}

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

function decodeTokenProtocol(carrier: string): string | null {
  const b64 = carrier.slice(TOKEN_PROTOCOL_PREFIX.length).replace(/-/g, "+").replace(/_/g, "/");
  if (b64 === "") return null;
  try {
    const binary = atob(b64);
    const bytes = Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** Reads the bearer token from the Authorization header or, for browsers' WebSockets, the subprotocol list. */
export function presentedToken(request: Request): string | null {
  const header = request.headers.get("authorization");
  const match = header?.match(/^Bearer\s+(\S+)$/i);
  if (match) return match[1]!;
  const protocols = request.headers.get("sec-websocket-protocol")?.split(",").map((p) => p.trim()) ?? [];
  const carrier = protocols.find((p) => p.startsWith(TOKEN_PROTOCOL_PREFIX));
  return carrier ? decodeTokenProtocol(carrier) : null;
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
