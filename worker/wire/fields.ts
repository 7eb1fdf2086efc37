// The small schemas frames and HTTP bodies share (a fence, a message id, a token, a machine
// label, a step name, ...), so a field is checked the same wherever it rides.
import * as z from "zod/mini";
import { BLOB_ID, LIMITS, MACHINE_LABEL, RUN_ID, RUNNER_ID, STEP_NAME } from "./limits.ts";
import { ON_UNKNOWN, STEP_PHASES } from "./enums.ts";

export const fence = z.int().check(z.nonnegative());
export const messageId = z.int().check(z.gte(1));
export const req = z.optional(z.string().check(z.maxLength(64)));
export const machine = z.string().check(z.minLength(1), z.maxLength(LIMITS.machineLabelChars), z.regex(MACHINE_LABEL));
/** A message's own lease token, as handed out in its `message` frame. */
export const token = z.int().check(z.gte(1));
export const concurrency = z.optional(z.int().check(z.gte(1), z.lte(LIMITS.runnerSlots)));
/** Higher runs the agent by preference (serve --priority); equal priorities keep the first claimant. */
export const priority = z.int().check(z.gte(LIMITS.priority.min), z.lte(LIMITS.priority.max));
/** A serve process's own id, the same across its reconnects, so a restarted coordinator can recognise its holder. */
export const runnerId = z.string().check(z.regex(RUNNER_ID));
export const stepName = z.string().check(z.regex(STEP_NAME));
export const stepKind = z.enum(["step", "effect"]);
export const stepPhase = z.enum(STEP_PHASES);
export const blobId = z.string().check(z.regex(BLOB_ID));
/** A value too large for its frame: uploaded first (PUT …/messages/{id}/blobs), then committed by the write that names it. */
export const blob = z.optional(blobId);
export const onUnknown = z.enum(ON_UNKNOWN);
export const choice = z.string().check(z.minLength(1), z.maxLength(LIMITS.choiceChars), z.regex(MACHINE_LABEL));
export const parkDeadlineSeconds = z.int().check(z.gte(LIMITS.parkDeadlineSeconds.min), z.lte(LIMITS.parkDeadlineSeconds.max));
export const runTimeoutSeconds = z.number().check(z.gte(LIMITS.runTimeoutSeconds.min), z.lte(LIMITS.runTimeoutSeconds.max));
/** What a person writes to a run (an answer's or a resume's text): it reaches a command's environment, so no NUL or other control characters but newline, carriage return and tab. */
export const personText = z.string().check(z.regex(/^(?:[^\p{Cc}]|[\n\r\t])*$/u, { error: "text may hold no control characters but newline, carriage return and tab" }));
export const ttl = z.int().check(z.gte(LIMITS.leaseTtlSeconds.min), z.lte(LIMITS.leaseTtlSeconds.max));
/** A session lease's run id: a UUID the client makes up once per run. */
export const runId = z.string().check(z.regex(RUN_ID));
