// Data kept under a session lease, answered in the Worker: /leases/{session}/data. A write carries
// the run id and fence of the lease it is made under and is stored only if that run holds the
// lease now, by the shard's clock (rules/lease-data.ts); anything else is 409 with the named
// reason and changes nothing. Values up to LIMITS.leaseDataInlineBytes live in the shard's
// SQLite; larger ones (up to LIMITS.blobBytes) are streamed to R2 first and committed by the
// shard under the same check, so a refused or failed upload leaves no value behind.
import type { Env } from "./env.ts";
import { readBody, readJsonBody } from "./objects/http.ts";
import type { LeaseShard } from "./objects/lease-shard.ts";
import type { BudgetVerdict, DataWriteVerdict } from "./rules/lease-data.ts";
import { errorResponse, LIMITS, parseBody, RUN_ID } from "./wire/protocol.ts";
import {
  LEASE_DATA_KEY, leaseDataDeleteSchema, type LeaseDataEntry, type LeaseDataPage, type LeaseDataPutAnswer,
} from "./wire/lease-data.ts";

type Shard = DurableObjectStub<LeaseShard>;

/** 409 for a writer that does not hold the lease, 413 for a write past the session's budget. */
const refused = (v: Exclude<DataWriteVerdict | BudgetVerdict, { ok: true }>) => errorResponse(v.code === "too_large" ? 413 : 409, v.code, v.message);

function keyParam(url: URL): string | Response {
  const key = url.searchParams.get("key");
  if (key === null || key.length === 0 || key.length > LIMITS.leaseDataKeyChars || !LEASE_DATA_KEY.test(key)) {
    return errorResponse(400, "bad_request", `?key= is 1-${LIMITS.leaseDataKeyChars} printable ASCII characters without spaces`);
  }
  return key;
}

export async function putValue(request: Request, env: Env, shard: Shard, account: string, session: string, url: URL): Promise<Response> {
  const key = keyParam(url);
  if (key instanceof Response) return key;
  const runId = request.headers.get("x-baton-run-id") ?? "";
  const rawFence = request.headers.get("x-baton-fence") ?? "";
  const fence = /^[1-9][0-9]{0,15}$/.test(rawFence) ? Number(rawFence) : NaN;
  if (!RUN_ID.test(runId) || !Number.isSafeInteger(fence) || fence < 1) {
    return errorResponse(400, "bad_request", "a write carries its lease's x-baton-run-id and x-baton-fence headers");
  }
  const ifAbsent = request.headers.get("x-baton-if-absent") === "true";
  const declared = request.headers.get("content-length");
  const bytes = declared === null ? NaN : Number(declared);
  if (!Number.isSafeInteger(bytes) || bytes < 0) return errorResponse(411, "bad_request", "a write declares its Content-Length");
  if (bytes > LIMITS.blobBytes) return errorResponse(413, "too_large", `a value is at most ${LIMITS.blobBytes} bytes`);
  if (bytes <= LIMITS.leaseDataInlineBytes) {
    const body = await readBody(request, LIMITS.leaseDataInlineBytes);
    if (!body.ok) return body.response;
    const put = await shard.putData(account, session, key, runId, fence, { inline: body.bytes }, ifAbsent);
    if (!put.ok) return refused(put);
    await deleteGarbage(env, put.garbage ? [put.garbage] : []);
    return stored(key, body.bytes.byteLength, fence, put.kept ? "kept" : "inline");
  }
  if (!env.BLOBS || request.body === null) {
    return errorResponse(501, "not_configured", `this coordinator has no R2 bucket bound as BLOBS: values over ${LIMITS.leaseDataInlineBytes} bytes are off`);
  }
  // Asked first so a stale writer does not stream megabytes only to be refused at the commit.
  const allowed = await shard.checkData(account, session, runId, fence);
  if (!allowed.ok) return refused(allowed);
  const r2Key = `lease-data/${account}/${session}/${crypto.randomUUID()}`;
  try {
    await env.BLOBS.put(r2Key, request.body.pipeThrough(new FixedLengthStream(bytes)));
  } catch {
    await deleteGarbage(env, [r2Key]);
    return errorResponse(400, "bad_request", "the value did not match its Content-Length or R2 refused it");
  }
  const put = await shard.putData(account, session, key, runId, fence, { r2Key, bytes }, ifAbsent);
  await deleteGarbage(env, put.ok ? (put.garbage ? [put.garbage] : []) : [r2Key]);
  if (!put.ok) return refused(put);
  return stored(key, bytes, fence, put.kept ? "kept" : "r2");
}

/** 201 with where the value went; 200 when an x-baton-if-absent write found a value and kept it. */
function stored(key: string, bytes: number, fence: number, where: LeaseDataPutAnswer["stored"]): Response {
  return Response.json({ key, bytes, fence, stored: where } satisfies LeaseDataPutAnswer, { status: where === "kept" ? 200 : 201 });
}

export async function getValue(env: Env, shard: Shard, account: string, session: string, url: URL): Promise<Response> {
  const key = keyParam(url);
  if (key instanceof Response) return key;
  const row = await shard.getData(account, session, key);
  const headers = (bytes: number) => ({ "content-type": "application/octet-stream", "content-length": String(bytes), "x-baton-fence": String(row!.fence) });
  if (row === null) return errorResponse(404, "not_found", `session ${session} has no value under ${key}`);
  // Inline, an empty value included.
  if (row.r2Key === null) return new Response(row.value ?? new Uint8Array(0), { headers: headers(row.bytes) });
  // A value kept in R2 whose object is gone is lost, not absent: a 404 would let a reader take it for a key never written.
  const object = env.BLOBS ? await env.BLOBS.get(row.r2Key) : null;
  if (object === null) return errorResponse(500, "internal", `session ${session} stored a value under ${key} in R2, but its object cannot be read: the value is lost or R2 is not bound`);
  return new Response(object.body, { headers: headers(object.size) });
}

export async function listValues(shard: Shard, account: string, session: string, url: URL): Promise<Response> {
  const prefix = url.searchParams.get("prefix") ?? "";
  const after = url.searchParams.get("after");
  const order = url.searchParams.get("order") ?? "asc";
  const limit = Number(url.searchParams.get("limit") ?? LIMITS.leaseDataPageEntries);
  const printable = (s: string) => s.length <= LIMITS.leaseDataKeyChars && /^[\x21-\x7e]*$/.test(s);
  if (!printable(prefix) || (after !== null && !printable(after)) || (order !== "asc" && order !== "desc")
    || !Number.isSafeInteger(limit) || limit < 1 || limit > LIMITS.leaseDataPageEntries) {
    return errorResponse(400, "bad_request", `list takes ?prefix=, ?after= (keys), ?order=asc|desc and ?limit=1-${LIMITS.leaseDataPageEntries}`);
  }
  const { rows, more, usage } = await shard.listData(account, session, prefix, after, order === "desc", limit);
  const entries = rows.map((r): LeaseDataEntry => ({
    key: r.key, bytes: r.bytes, fence: r.fence, updated_at: r.updatedAt, ...(r.value ? { value: base64(r.value) } : {}),
  }));
  return Response.json({ entries, next: more ? rows[rows.length - 1]!.key : null, usage } satisfies LeaseDataPage);
}

export async function deleteValues(request: Request, env: Env, shard: Shard, account: string, session: string): Promise<Response> {
  const body = await readJsonBody(request, 4096);
  if (!body.ok) return body.response;
  const parsed = parseBody(leaseDataDeleteSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", parsed.message);
  const { run_id, fence, prefix } = parsed.value;
  const answer = await shard.deleteData(account, session, prefix, run_id, fence);
  if (!answer.ok) return refused(answer);
  await deleteGarbage(env, answer.garbage ?? []);
  return Response.json({ deleted: answer.deleted ?? 0, more: answer.more ?? false });
}

/** R2 objects no row names any more. A failure here leaves an orphan in R2, never a wrong value. */
async function deleteGarbage(env: Env, keys: string[]): Promise<void> {
  if (keys.length === 0 || !env.BLOBS) return;
  await env.BLOBS.delete(keys).catch(() => undefined);
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}
