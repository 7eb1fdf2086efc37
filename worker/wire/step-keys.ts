// What both sides of the wire must spell the same about steps: the idempotency key an effect hands
// to an external API, and the reason a message waits on an effect whose outcome is unknown. A leaf,
// like error-codes.ts, so the rules can use it without importing the wire.

/** What happens when an effect's intent has no outcome: run it again under its key, or ask a person. */
export type OnUnknown = "retry" | "ask";

/** The key an effect hands to the external API: the same on every attempt of one message, on every machine. */
export function idempotencyKey(agent: string, messageId: number, name: string): string {
  return `baton:${agent}:${messageId}:${name}`;
}

export const UNKNOWN_OUTCOME_PREFIX = "outcome unknown: step ";

export function unknownOutcomeReason(name: string): string {
  return `${UNKNOWN_OUTCOME_PREFIX}${name}`;
}
