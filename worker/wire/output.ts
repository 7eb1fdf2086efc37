// A run's live output on the wire: the chunks a runner writes (the `output` frame, or POST
// …/messages/{id}/output from a served command), and the events a reader gets back from GET
// …/messages/{id}/output (Server-Sent Events, or one JSON page). Stable: the dashboard, MCP and
// both clients read these shapes. A leaf beside protocol.ts, which puts the frame in its union and
// the limits in LIMITS.
import * as z from "zod/mini";
import { ATTEMPT_END_REASONS, MESSAGE_STATUSES, OUTPUT_STREAMS } from "./enums.ts";

export const OUTPUT_LIMITS = {
  /** Bytes of output one frame (or one POST) carries, all its chunks together, counted before any encoding. */
  outputBatchBytes: 32 * 1024,
  /** Chunks one frame carries. */
  outputBatchChunks: 64,
  /** The largest per-message output budget an operator may set (BATON_OUTPUT_BYTES_PER_MESSAGE); past the budget the oldest bytes go. */
  outputBytesPerMessage: 64 * 1024 * 1024,
  /** The largest per-agent output budget an operator may set (BATON_OUTPUT_BYTES_PER_AGENT): well within one object's 10 GB of storage. */
  outputBytesPerAgent: 8 * 1024 * 1024 * 1024,
  /** Events one read page carries (GET …/output), and bytes of output in it (always at least one event). */
  outputPageEvents: 256,
  outputPageBytes: 256 * 1024,
} as const;

export { ATTEMPT_END_REASONS, OUTPUT_STREAMS, type AttemptEndReason, type OutputStream } from "./enums.ts";

/**
 * Why output was dropped: the message passed its own budget (BATON_OUTPUT_BYTES_PER_MESSAGE: its
 * oldest bytes went), or the agent passed its stored-output budget (BATON_OUTPUT_BYTES_PER_AGENT:
 * all of this finished message's output went, the oldest finished messages first).
 */
export const OUTPUT_DROP_REASONS = ["message_budget", "agent_budget"] as const;
export type OutputDropReason = (typeof OUTPUT_DROP_REASONS)[number];

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * One chunk: `text` when its bytes are valid UTF-8 (NUL and escapes included: JSON carries them),
 * `base64` when they are not, never both. Readers get each chunk back in the form it was written.
 */
export const outputChunkSchema = z.strictObject({
  stream: z.enum(OUTPUT_STREAMS),
  text: z.optional(z.string()),
  base64: z.optional(z.string().check(z.regex(BASE64))),
}).check(
  z.refine((c) => (c.text === undefined) !== (c.base64 === undefined), { error: "a chunk is text or base64, exactly one" }),
  // An empty chunk would store a row the byte budget does not count.
  z.refine((c) => (c.text ?? c.base64) !== "", { error: "a chunk carries at least one byte" }),
);
export type OutputChunk = z.infer<typeof outputChunkSchema>;

export const outputChunksSchema = z.array(outputChunkSchema).check(z.minLength(1), z.maxLength(OUTPUT_LIMITS.outputBatchChunks));

/** The bytes a chunk stands for (base64 decoded, text as UTF-8). */
export function chunkBytes(c: OutputChunk): Uint8Array {
  if (c.text !== undefined) return new TextEncoder().encode(c.text);
  const bin = atob(c.base64!);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** How many bytes a chunk stands for, without decoding it. */
export function chunkSize(c: OutputChunk): number {
  if (c.text !== undefined) return new TextEncoder().encode(c.text).byteLength;
  const b = c.base64!;
  return (b.length / 4) * 3 - (b.endsWith("==") ? 2 : b.endsWith("=") ? 1 : 0);
}

/** A batch over the wire's budget, or null. */
export function batchRefusal(chunks: readonly OutputChunk[]): string | null {
  const bytes = chunks.reduce((n, c) => n + chunkSize(c), 0);
  return bytes > OUTPUT_LIMITS.outputBatchBytes ? `output frames carry at most ${OUTPUT_LIMITS.outputBatchBytes} bytes of chunks, got ${bytes}` : null;
}

const messageId = z.int().check(z.gte(1));
const token = z.int().check(z.gte(1));
const seq = z.int().check(z.gte(1));
const count = z.int().check(z.nonnegative());
const at = z.number();

/** The `output` frame a runner sends: chunks of the attempt that holds `token`. */
export const outputFrameSchema = z.strictObject({
  type: z.literal("output"), id: messageId, token, chunks: outputChunksSchema, req: z.optional(z.string().check(z.maxLength(64))),
});

/** POST /agents/{agent}/messages/{id}/output: the same write from a served command (`baton output`), proven by its run key. */
export const outputWriteSchema = z.strictObject({
  token, run_key: z.string().check(z.minLength(16), z.maxLength(64)), chunks: outputChunksSchema,
});

/** The answer to an output write: the offset the next byte of this message's output will get. */
export const outputWrittenSchema = z.object({ id: messageId, token, offset: count });

/**
 * What a reader gets, in order. Every stored event has a `seq` (the SSE id, growing within a
 * message): a reader resumes after the last one it saw (`?from=SEQ` or Last-Event-ID). `offset`
 * counts bytes of this message's output from its start, dropped bytes included. `dropped` is not
 * stored: it comes first when the oldest output went past the budget before the reader saw it, and
 * says where kept output starts (`offset`), how many bytes went in all, and why (`reason`, absent
 * from older servers: OUTPUT_DROP_REASONS). `end` comes once the
 * message is final (acknowledged, failed, rejected, cancelled, superseded); the stream closes after it.
 */
export const outputEventSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("chunk"), seq, offset: count, attempt: count, machine: z.string(), stream: z.enum(OUTPUT_STREAMS),
    text: z.optional(z.string()), base64: z.optional(z.string()), at,
  }),
  z.object({ type: z.literal("attempt"), seq, attempt: count, machine: z.string(), at }),
  z.object({ type: z.literal("attempt_end"), seq, attempt: count, reason: z.enum(ATTEMPT_END_REASONS), at }),
  z.object({ type: z.literal("dropped"), bytes: count, offset: count, reason: z.optional(z.enum(OUTPUT_DROP_REASONS)) }),
  z.object({ type: z.literal("end"), status: z.enum(MESSAGE_STATUSES) }),
]);
export type OutputEvent = z.infer<typeof outputEventSchema>;

/**
 * GET …/output?format=json: one page after `from`; `cursor` is the seq to ask after next, `more`
 * whether stored events follow at once, `final` whether the message is final (no event will follow
 * the last page).
 */
export const outputPageSchema = z.object({
  id: messageId, status: z.enum(MESSAGE_STATUSES), events: z.array(outputEventSchema), cursor: count, more: z.boolean(), final: z.boolean(),
});
export type OutputPage = z.infer<typeof outputPageSchema>;
