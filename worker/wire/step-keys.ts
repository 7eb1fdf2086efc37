// What both sides of the wire must spell the same about steps: the idempotency key an effect hands
// to an external API, and the reason a message waits on an effect whose outcome is unknown. A leaf,
// like error-codes.ts, so the rules can use it without importing the wire.

export type { OnUnknown } from "./enums.ts";

/** Hex digits of SHA-256 that stand for the account in a key: 64 bits, so two accounts never share one by chance. */
const ACCOUNT_TAG_HEX = 16;

/**
 * The account's part of its effects' keys: the first 16 hex digits of SHA-256 of its name. The
 * name itself is not handed to external APIs, and the key stays bounded however long it is.
 */
export async function accountTag(account: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(account));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("").slice(0, ACCOUNT_TAG_HEX);
}

/**
 * The key an effect hands to the external API, `baton:<account tag>:<agent>:<message id>:<name>`:
 * the same on every attempt of one message, on every machine, and different in every account
 * (accounts are walls: a payments API two accounts share never takes one's charge for the
 * other's). The coordinator makes it and hands it out with the effect's intent.
 */
export function idempotencyKey(tag: string, agent: string, messageId: number, name: string): string {
  return `baton:${tag}:${agent}:${messageId}:${name}`;
}

/**
 * The key of the release before the account tag (`baton:<agent>:<message id>:<name>`): handed out
 * only for an effect whose intent that release recorded, so a retry after the upgrade calls the
 * external API under the key the first call used.
 */
export function legacyIdempotencyKey(agent: string, messageId: number, name: string): string {
  return `baton:${agent}:${messageId}:${name}`;
}

/** The longest key: a tag, a 63-character agent, a 16-digit message id, a 128-character name (LIMITS.effectKeyChars). */
export const EFFECT_KEY_CHARS = "baton:".length + ACCOUNT_TAG_HEX + 1 + 63 + 1 + 16 + 1 + 128;

export const UNKNOWN_OUTCOME_PREFIX = "outcome unknown: step ";

export function unknownOutcomeReason(name: string): string {
  return `${UNKNOWN_OUTCOME_PREFIX}${name}`;
}
