// The wire of data kept under a session lease (/leases/{session}/data...): the fenced delete body
// and the answers, each a schema its type is inferred from. A value itself travels as raw bytes:
// PUT /leases/{s}/data?key=K with the writer's x-baton-run-id and x-baton-fence headers (and
// x-baton-if-absent: true to keep a value the key already has), and
// GET /leases/{s}/data?key=K answers the bytes with the fence they were written under.
import * as z from "zod/mini";
import { LIMITS, RUN_ID } from "./protocol.ts";

/** Keys: printable ASCII without spaces, so their byte order is their character order and a prefix is a range. */
export const LEASE_DATA_KEY = /^[\x21-\x7e]+$/;

export const leaseDataKey = z.string().check(z.minLength(1), z.maxLength(LIMITS.leaseDataKeyChars), z.regex(LEASE_DATA_KEY));
const prefix = z.string().check(z.maxLength(LIMITS.leaseDataKeyChars), z.regex(/^[\x21-\x7e]*$/));
const fence = z.int().check(z.gte(1));

/** POST /leases/{s}/data/delete: removes keys under `prefix` ("" for all), under the writer's lease. */
export const leaseDataDeleteSchema = z.strictObject({ run_id: z.string().check(z.regex(RUN_ID)), fence, prefix });

/**
 * The answer to a PUT: where the value went (201: inline in the shard, or R2 beyond
 * LIMITS.leaseDataInlineBytes), or 200 `kept` when the PUT said x-baton-if-absent: true and the
 * key already had a value, which stays.
 */
export const leaseDataPutAnswerSchema = z.object({ key: z.string(), bytes: z.int(), fence: z.int(), stored: z.enum(["inline", "r2", "kept"]) });

/** One key of a list page; `value` (base64) is there for inline values, an R2 one is fetched by key. */
export const leaseDataEntrySchema = z.object({
  key: z.string(), bytes: z.int(), fence: z.int(), updated_at: z.number(), value: z.optional(z.string()),
});

/**
 * GET /leases/{s}/data/list?prefix=&after=&order=asc|desc&limit=: `next` is the `after` of the
 * next page; `usage` is what the whole session's data holds now (keys, and bytes inline and in R2),
 * against LIMITS.leaseDataKeysPerSession and leaseDataBytesPerSession.
 */
export const leaseDataPageSchema = z.object({
  entries: z.array(leaseDataEntrySchema), next: z.nullable(z.string()), usage: z.object({ keys: z.int(), bytes: z.int() }),
});

export const leaseDataDeletedSchema = z.object({ deleted: z.int(), more: z.boolean() });

export type LeaseDataPutAnswer = z.infer<typeof leaseDataPutAnswerSchema>;
export type LeaseDataEntry = z.infer<typeof leaseDataEntrySchema>;
export type LeaseDataPage = z.infer<typeof leaseDataPageSchema>;
