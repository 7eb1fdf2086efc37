// Bearer tokens: each belongs to one account and has a name and scopes. Only SHA-256 hashes are
// configured and compared, in constant time; with no tokens configured every request is refused.
import { grantedScopes, type Caller } from "./scopes.ts";
import { SCOPES, TOKEN_NAME, type Scope } from "./wire/token-scopes.ts";
import { TOKEN_PROTOCOL_PREFIX } from "./wire/token-protocol.ts";

export interface TokenEntry extends Caller {
  hash: Uint8Array;
}

export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** The name of a token given in the old `account:sha256hex` form, which has every scope. */
const UNNAMED_TOKEN = "default";
// Browsers cannot set headers on a WebSocket, so they offer `baton` and `baton.token.<base64url>`.
export { BATON_PROTOCOL, TOKEN_PROTOCOL_PREFIX, tokenProtocol } from "./wire/token-protocol.ts";

const SHA256_HEX = /^[0-9a-f]{64}$/i;

interface ParsedEntry {
  account: string;
  name: string;
  scopes: Scope[];
  hex: string;
}

function parseEntry(entry: string, position: number): ParsedEntry {
  const parts = entry.split(":");
  const shape = `BATON_TOKENS entry ${position} must be account:sha256-hex or account:name:scope+scope:sha256-hex (account: a-z, 0-9, '_', '-')`;
  if (parts.length !== 2 && parts.length !== 4) throw new Error(shape);
  const account = parts[0]!;
  const hex = parts.at(-1)!;
  if (!ACCOUNT_NAME.test(account) || !SHA256_HEX.test(hex)) throw new Error(shape);
  if (parts.length === 2) return { account, name: UNNAMED_TOKEN, scopes: grantedScopes(["admin"]), hex: hex.toLowerCase() };
  const [, name, scopeList] = parts as [string, string, string, string];
  if (!TOKEN_NAME.test(name)) throw new Error(`BATON_TOKENS entry ${position} has a bad token name (1-64 chars of A-Z, a-z, 0-9, '.', '_' or '-')`);
  const scopes = scopeList.split("+");
  if (!scopes.every((scope): scope is Scope => (SCOPES as readonly string[]).includes(scope))) {
    throw new Error(`BATON_TOKENS entry ${position} has an unknown or empty scope (scopes are ${SCOPES.join(", ")}, joined by '+')`);
  }
  return { account, name, scopes: grantedScopes(scopes), hex: hex.toLowerCase() };
}

/**
 * Parses `account:sha256hex` (named `default`, every scope) and `account:name:scope+scope:sha256hex`
 * entries, comma-separated. A malformed entry throws naming its position only, so the message never
 * repeats configuration; one hash may not belong to two accounts, nor to two names or scope sets.
 */
export function parseTokenConfig(raw: string | undefined): TokenEntry[] {
  if (!raw) return [];
  const entries = raw.split(",").map((s) => s.trim()).filter(Boolean).map((entry, index) => parseEntry(entry, index + 1));
  const first = new Map<string, { entry: ParsedEntry; position: number }>();
  entries.forEach((entry, index) => {
    const previous = first.get(entry.hex);
    if (previous === undefined) {
      first.set(entry.hex, { entry, position: index + 1 });
      return;
    }
    if (previous.entry.account !== entry.account) {
      throw new Error(`BATON_TOKENS gives one token hash to two accounts (${previous.entry.account} and ${entry.account})`);
    }
    if (previous.entry.name !== entry.name || previous.entry.scopes.join("+") !== entry.scopes.join("+")) {
      throw new Error(`BATON_TOKENS gives one token hash two names or scope sets (entries ${previous.position} and ${index + 1})`);
    }
  });
  return entries.map(({ account, name, scopes, hex }) => ({ account, tokenName: name, credential: `token.${hex}`, scopes, hash: hexToBytes(hex) }));
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

/** The caller the token stands for, or null. Every configured hash is compared, so timing says nothing. */
export async function authenticate(token: string | null, entries: TokenEntry[]): Promise<Caller | null> {
  if (token === null || entries.length === 0) return null;
  const hash = await sha256(token);
  let caller: Caller | null = null;
  for (const { hash: configured, ...entry } of entries) {
    if (crypto.subtle.timingSafeEqual(hash, configured) && caller === null) caller = entry;
  }
  return caller;
}

export function bytesToHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The SHA-256 of `text` (UTF-8) in lowercase hex: what derived keys and stored hashes are made of. */
export async function hexDigest(text: string): Promise<string> {
  return bytesToHex(await sha256(text));
}

/** The configured token with this SHA-256 (hex), or null: how an OAuth grant finds the token that signed it in. Compares every entry. */
export function callerByHash(hex: string, entries: TokenEntry[]): Caller | null {
  if (!SHA256_HEX.test(hex)) return null;
  const hash = hexToBytes(hex.toLowerCase());
  let caller: Caller | null = null;
  for (const { hash: configured, ...entry } of entries) {
    if (crypto.subtle.timingSafeEqual(hash, configured) && caller === null) caller = entry;
  }
  return caller;
}
