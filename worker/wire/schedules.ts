// The wire of schedules (/agents/{agent}/schedules...): the body that makes one and the views of
// one and of a list, each a schema its type is inferred from. What a schedule means (its slots,
// catch-up, jitter, the late grace) is decided by worker/rules/schedules.ts; docs/guides/schedules.md.
import * as z from "zod/mini";
import { CATCH_UP, ON_BUSY, SKIP_REASONS, SLOT_OUTCOMES } from "./enums.ts";
import { LIMITS, MACHINE_LABEL } from "./protocol.ts";

const count = z.int().check(z.nonnegative());

/**
 * POST /agents/{agent}/schedules: exactly one of `cron` (with `tz`, default UTC), `every_seconds`,
 * or a one-off: `at` (ISO 8601, with an offset or read in `tz`) or `in_seconds` (from now, by the
 * coordinator's clock). `text` is at most
 * LIMITS.scheduleTextBytes UTF-8 bytes (checked by the Worker). The message options are a post's.
 */
export const scheduleBodySchema = z.strictObject({
  cron: z.optional(z.string().check(z.minLength(1), z.maxLength(LIMITS.scheduleCronChars))),
  tz: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  every_seconds: z.optional(z.int().check(z.gte(LIMITS.scheduleIntervalSeconds.min), z.lte(LIMITS.scheduleIntervalSeconds.max))),
  at: z.optional(z.string().check(z.minLength(10), z.maxLength(40))),
  in_seconds: z.optional(z.int().check(z.gte(0), z.lte(LIMITS.scheduleIntervalSeconds.max))),
  text: z.string().check(z.minLength(1)),
  group: z.optional(z.string().check(z.minLength(1), z.maxLength(LIMITS.groupChars), z.regex(MACHINE_LABEL))),
  run_timeout_seconds: z.optional(z.int().check(z.gte(LIMITS.runTimeoutSeconds.min), z.lte(LIMITS.runTimeoutSeconds.max))),
  /** What a slot's message does while its group is busy; default: the agent's policy. Reject skips the slot and records it. */
  on_busy: z.optional(z.enum(ON_BUSY)),
  /** Slots missed (paused, or late past the grace): post none, or the latest one (the default). */
  catch_up: z.optional(z.enum(CATCH_UP)),
  /** Each slot is posted up to this much later, the same delay for the same slot every time. */
  jitter_seconds: z.optional(z.int().check(z.gte(0), z.lte(LIMITS.scheduleJitterSeconds))),
  paused: z.optional(z.boolean()),
});

/**
 * One slot decided: posted (its message) or skipped (why; `count` slots from `slot` to `last_slot`,
 * or with `count_at_least` more than `count`: a cron's missed slots are counted only so far).
 */
export const scheduleFireSchema = z.object({
  slot: z.number(),
  outcome: z.enum(SLOT_OUTCOMES),
  /** When it was decided, by the coordinator's clock: `at - slot` is its lateness. */
  at: z.number(),
  message_id: z.nullable(z.int()),
  reason: z.nullable(z.enum(SKIP_REASONS)),
  /** With reason `failed`: what the fire threw (rolled back; the slot is not posted), at most LIMITS.scheduleErrorBytes UTF-8 bytes. */
  error: z.optional(z.string()),
  count: count,
  /** True: more than `count` slots were skipped (absent: `count` is exact). */
  count_at_least: z.optional(z.literal(true)),
  last_slot: z.number(),
});

export const scheduleViewSchema = z.object({
  id: z.int().check(z.gte(1)),
  cron: z.nullable(z.string()),
  tz: z.string(),
  every_seconds: z.nullable(z.int()),
  /** A one-off's time (epoch ms). */
  at: z.nullable(z.number()),
  text: z.string(),
  group: z.nullable(z.string()),
  run_timeout_seconds: z.nullable(z.int()),
  on_busy: z.nullable(z.enum(ON_BUSY)),
  catch_up: z.enum(CATCH_UP),
  jitter_seconds: count,
  paused: z.boolean(),
  created_at: z.number(),
  /** The next slot (epoch ms) and when it will be posted (with its jitter); null: none left. */
  next_slot: z.nullable(z.number()),
  next_fire: z.nullable(z.number()),
  /** The latest slot decided, and the latest fires first (at most LIMITS.scheduleFiresKept). */
  last_slot: z.nullable(z.number()),
  fires: z.array(scheduleFireSchema),
});

/** DELETE /agents/{agent}/schedules/{schedule}: the messages it posted stay. */
export const scheduleRemovedSchema = z.object({ id: z.int().check(z.gte(1)), removed: z.literal(true) });

export const scheduleListSchema = z.object({ agent: z.string(), schedules: z.array(scheduleViewSchema) });

export type ScheduleBody = z.infer<typeof scheduleBodySchema>;
export type ScheduleFireView = z.infer<typeof scheduleFireSchema>;
export type ScheduleView = z.infer<typeof scheduleViewSchema>;
export type ScheduleList = z.infer<typeof scheduleListSchema>;
export type ScheduleRemoved = z.infer<typeof scheduleRemovedSchema>;
