// The wire's closed sets of words, each written once: schemas build their enums from these, the
// rules derive their types from them, the CLI checks options against them, and
// python/baton/wire-schema.json carries them by name for the Python client. A leaf: imports nothing.

/** Where a message is in its life (rules/message-lease.ts draws the transitions). */
export const MESSAGE_STATUSES = ["queued", "running", "parked", "acknowledged", "failed", "rejected", "cancelled", "superseded"] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/** What a question's deadline does when nobody answered it: fail the message, answer for the person, or ask again. */
export const ON_DEADLINE = ["fail", "approve", "reject", "escalate"] as const;
export type OnDeadline = (typeof ON_DEADLINE)[number];

/** What a new message does while its group is busy (rules/on-busy.ts). */
export const ON_BUSY = ["queue", "reject", "interrupt", "replace"] as const;
export type OnBusy = (typeof ON_BUSY)[number];

/** One holder runs the agent's messages (single), or every live runner takes some (pool). */
export const POLICY_MODES = ["single", "pool"] as const;
export type PolicyMode = (typeof POLICY_MODES)[number];

/** A journal record's phase: an effect's intent is written before it runs, done once it did. */
export const STEP_PHASES = ["intent", "done"] as const;

/** What an effect whose outcome is unknown does on the next attempt: run again, or ask a person. */
export const ON_UNKNOWN = ["retry", "ask"] as const;
export type OnUnknown = (typeof ON_UNKNOWN)[number];

/** What a person decides for an effect whose outcome is unknown: it happened (done), or run it again (redo). */
export const RESUME_OUTCOMES = ["done", "redo"] as const;
export type ResumeOutcome = (typeof RESUME_OUTCOMES)[number];

/** Whose webhook: the account's, or an agent's own. */
export const WEBHOOK_SCOPES = ["account", "agent"] as const;

/** Where a chunk of a run's output came from: a command's stdout or stderr, or text a handler wrote (`ctx.output`). */
export const OUTPUT_STREAMS = ["stdout", "stderr", "text"] as const;
export type OutputStream = (typeof OUTPUT_STREAMS)[number];

/**
 * Why an attempt's output ended: it replied (or acked), failed, parked for a person, was cancelled,
 * its runner lost the message (gone, silent, not the holder any more) or its run deadline passed.
 */
export const ATTEMPT_END_REASONS = ["replied", "failed", "parked", "cancelled", "lease_lost", "timed_out", "declined"] as const;
export type AttemptEndReason = (typeof ATTEMPT_END_REASONS)[number];
/** What a schedule does with slots it missed (a paused agent or schedule, an outage longer than the late grace): post none, or the latest one. */
export const CATCH_UP = ["none", "one"] as const;
export type CatchUp = (typeof CATCH_UP)[number];

/** What became of a schedule's slot: a message posted, or skipped (with why). */
export const SLOT_OUTCOMES = ["posted", "skipped"] as const;

/** Why a slot was skipped: the agent or schedule was paused, it was missed past the late grace, or on_busy reject refused it. */
export const SKIP_REASONS = ["paused", "missed", "busy", "failed"] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** Every set above by the name the wire uses for its field. */
export const WIRE_ENUMS = {
  message_status: MESSAGE_STATUSES,
  on_deadline: ON_DEADLINE,
  on_busy: ON_BUSY,
  mode: POLICY_MODES,
  step_phase: STEP_PHASES,
  on_unknown: ON_UNKNOWN,
  resume_outcome: RESUME_OUTCOMES,
  webhook_scope: WEBHOOK_SCOPES,
  output_stream: OUTPUT_STREAMS,
  attempt_end_reason: ATTEMPT_END_REASONS,
  catch_up: CATCH_UP,
  slot_outcome: SLOT_OUTCOMES,
  skip_reason: SKIP_REASONS,
} as const;
