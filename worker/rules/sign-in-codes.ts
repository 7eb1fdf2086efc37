// One-time sign-in codes for the OAuth sign-in page, over plain data and an injected `now`. A baton
// token asks for a code (`baton login --code`); a person types it on the page instead of the token
// and signs in as that token. A code is 12 Crockford base32 characters (60 random bits), shown as
// XXXX-XXXX-XXXX and read case-insensitively with or without dashes; it lives SIGN_IN_CODE_LIMITS.minutes
// by the coordinator's clock and is spent by the approval that uses it. Only its SHA-256 is kept,
// in one of `shards` objects named by the hash's first hex digit (so guesses spread over them); a
// token's codes are drawn until their hash falls in its own shard, so each shard holds a token's
// codes whole: at most `perToken` live (a new one drops its oldest: the latest printed always
// works), and all tokens of the shard together `storedPerShard` (a new one past it is refused: no
// token's code pushes out another's). Every event first prunes what has expired.
import { SIGN_IN_CODE_LIMITS } from "../wire/grants.ts";

/** Crockford's base32: digits and letters without I, L, O and U, which read as others. */
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
export const CODE_LENGTH = 12;

/** A code from CODE_LENGTH random bytes (each gives 5 bits; 256 is a multiple of 32, so every character is as likely). */
export function formatSignInCode(random: Uint8Array): string {
  if (random.length !== CODE_LENGTH) throw new TypeError(`a sign-in code takes ${CODE_LENGTH} random bytes`);
  const chars = Array.from(random, (b) => ALPHABET[b & 31]!).join("");
  return `${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8)}`;
}

/** The shard of a SHA-256 (hex): its first digit, one of SIGN_IN_CODE_LIMITS.shards. A code's hash names where it is kept; a token's names where its codes go. */
export function codeShard(sha256Hex: string): string {
  return sha256Hex.slice(0, 1);
}

/**
 * A code as typed, in its one stored spelling (12 characters, upper case, no dash), or null when it
 * is not one. Spaces and dashes are ignored; O reads as 0, I and L as 1, as Crockford decodes them.
 */
export function parseSignInCode(typed: string): string | null {
  const plain = typed.replace(/[\s-]/g, "").toUpperCase().replace(/O/g, "0").replace(/[IL]/g, "1");
  return plain.length === CODE_LENGTH && [...plain].every((c) => ALPHABET.includes(c)) ? plain : null;
}

/** A kept code: its SHA-256 (hex), the SHA-256 of the token that asked for it, and its times (ms). */
export interface StoredCode {
  hash: string;
  signer: string;
  createdAt: number;
  expiresAt: number;
}

export type CodeEvent =
  | { type: "mint"; hash: string; signer: string }
  /** Whether a code is live, and whose: asked before the page checks the rest of the form. */
  | { type: "find"; hash: string }
  | { type: "spend"; hash: string };

/** What the store read for one event at `now`: live codes only. */
export interface CodeSnapshot {
  now: number;
  /** The live code with the event's hash, if any. */
  code: StoredCode | null;
  /** The event's signer's live codes, oldest first (mint only; else empty). */
  signerCodes: StoredCode[];
  /** Live codes of every token in this shard. */
  live: number;
}

export type CodeAnswer =
  | { kind: "minted"; expiresAt: number }
  /** Another live code has this hash (a draw of 60 bits came up twice): draw again. */
  | { kind: "taken" }
  | { kind: "full" }
  | { kind: "found" | "spent"; signer: string }
  | { kind: "unknown" };

export interface CodePlan {
  /** Delete every code that expired at or before this time. */
  pruneUpTo: number;
  remove: string[];
  insert: StoredCode | null;
  answer: CodeAnswer;
}

export function planSignInCodes(event: CodeEvent, snap: CodeSnapshot): CodePlan {
  const plan = (answer: CodeAnswer, remove: string[] = [], insert: StoredCode | null = null): CodePlan => ({ pruneUpTo: snap.now, remove, insert, answer });
  if (event.type !== "mint") {
    if (snap.code === null) return plan({ kind: "unknown" });
    return event.type === "find" ? plan({ kind: "found", signer: snap.code.signer }) : plan({ kind: "spent", signer: snap.code.signer }, [event.hash]);
  }
  if (snap.code !== null) return plan({ kind: "taken" });
  const dropped = snap.signerCodes.slice(0, Math.max(0, snap.signerCodes.length - SIGN_IN_CODE_LIMITS.perToken + 1)).map((c) => c.hash);
  if (snap.live - dropped.length >= SIGN_IN_CODE_LIMITS.storedPerShard) return plan({ kind: "full" });
  const expiresAt = snap.now + SIGN_IN_CODE_LIMITS.minutes * 60_000;
  return plan({ kind: "minted", expiresAt }, dropped, { hash: event.hash, signer: event.signer, createdAt: snap.now, expiresAt });
}
