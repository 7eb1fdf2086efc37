// Large values over HTTP, answered in the Worker: the bytes go straight between the client and R2;
// the agent object only decides. An upload is reserved first (run checked, budget in bytes and
// count), streamed to R2 with its declared length, then staged under its token, so a body larger
// than it declared, an upload from a run that ended meanwhile, or one over budget stores nothing
// that stays. Reading a blob takes the account's token, as reading a message does.
import type { Env } from "./env.ts";
import type { BlobReserve, Refusal } from "./objects/message-leases.ts";
import { BLOB_ID, errorResponse, LIMITS } from "./wire/protocol.ts";

export interface BlobStub {
  reserveBlob(id: number, token: number, runKey: string, bytes: number): Promise<BlobReserve>;
  stageBlob(id: number, token: number, runKey: string, blob: string, stored: boolean): Promise<Refusal | { ok: true }>;
  blobKey(id: number, blob: string): Promise<string | null>;
}

const RUN_KEY = /^[0-9a-f]{16,64}$/;

const notConfigured = () => errorResponse(501, "not_configured", "this coordinator has no R2 bucket bound as BLOBS: large values are off");

/** PUT /agents/{agent}/messages/{id}/blobs with x-baton-token and x-baton-run-key: 201 {id, token, blob, bytes}. */
export async function uploadBlob(request: Request, env: Env, id: number, stub: BlobStub): Promise<Response> {
  if (!env.BLOBS) return notConfigured();
  const token = Number(request.headers.get("x-baton-token"));
  const runKey = request.headers.get("x-baton-run-key") ?? "";
  if (!Number.isSafeInteger(token) || token < 1 || !RUN_KEY.test(runKey)) {
    return errorResponse(400, "bad_request", "an upload carries the run's x-baton-token and x-baton-run-key headers");
  }
  const declared = request.headers.get("content-length");
  const bytes = declared === null ? NaN : Number(declared);
  if (!Number.isSafeInteger(bytes) || bytes < 0 || request.body === null) return errorResponse(411, "bad_request", "an upload declares its Content-Length");
  if (bytes > LIMITS.blobBytes) return errorResponse(413, "too_large", `a blob is at most ${LIMITS.blobBytes} bytes`);
  const room = await stub.reserveBlob(id, token, runKey, bytes);
  if (!room.ok) return errorResponse(room.status, room.code, room.message);
  let stored = false;
  try {
    // FixedLengthStream refuses a body longer or shorter than declared, so R2 holds exactly what was reserved.
    await env.BLOBS.put(room.r2Key, request.body.pipeThrough(new FixedLengthStream(bytes)));
    stored = true;
  } catch {
    // reported by the stage call below, which drops the reservation
  }
  const staged = await stub.stageBlob(id, token, runKey, room.blob, stored);
  if (!staged.ok) return errorResponse(stored ? staged.status : 400, staged.code, stored ? staged.message : "the upload did not match its Content-Length or R2 refused it");
  return Response.json({ id, token, blob: room.blob, bytes }, { status: 201 });
}

/** GET /agents/{agent}/messages/{id}/blobs/{blob}: the stored bytes. */
export async function downloadBlob(env: Env, id: number, blob: string, stub: BlobStub): Promise<Response> {
  if (!env.BLOBS) return notConfigured();
  if (!BLOB_ID.test(blob)) return errorResponse(400, "bad_request", "not a blob id");
  const key = await stub.blobKey(id, blob);
  const object = key === null ? null : await env.BLOBS.get(key);
  if (object === null) return errorResponse(404, "not_found", `message ${id} has no blob ${blob}`);
  return new Response(object.body, { headers: { "content-type": "application/octet-stream", "content-length": String(object.size) } });
}
