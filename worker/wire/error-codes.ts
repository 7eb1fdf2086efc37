// The error vocabulary of every error frame and HTTP error body, and the close codes. A leaf: it
// imports nothing, so the pure rules can name a refusal without depending on the wire.
export const ERROR_CODES = [
  "bad_json",
  "bad_frame",
  "unknown_type",
  "frame_too_large",
  "binary_frame",
  "not_holder",
  "stale_fence",
  "lease_expired",
  "unknown_message",
  "too_large",
  "rate_limited",
  "too_many_connections",
  "unauthorized",
  "forbidden",
  "bad_name",
  "bad_request",
  "not_found",
  "lease_held",
  "lease_lost",
  "stale_token",
  "message_not_running",
  "not_your_message",
  "not_parked",
  "outcome_unknown",
  "effect_in_progress",
  "question_open",
  "cancelled",
  "message_finished",
  "no_holder",
  "upgrade_required",
  "not_configured",
  "internal",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const CLOSE_CODES = {
  normal: 1000,
  goingAway: 1001,
  heartbeatTimeout: 4008,
  policy: 4009,
} as const;
