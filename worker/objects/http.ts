// Body readers shared by the Worker and the objects: they stop at a size limit instead of
// buffering whatever a client sends. Errors are built by the wire module's errorResponse.
import { errorResponse, jsonTooDeep, LIMITS } from "../wire/protocol.ts";

/** How much of an oversized chunked body is read and dropped before the stream is cancelled. */
const DRAIN_LIMIT_BYTES = 1024 * 1024;

export type BodyRead = { ok: true; bytes: Uint8Array } | { ok: false; response: Response };

/**
 * Reads a request body of at most `maxBytes`; a larger one is answered 413. Under `wrangler dev`
 * a body stream cancelled half-way left the next request unanswered (503), so a body whose
 * Content-Length is too large is never touched, and a chunked one is read to its end and dropped,
 * up to DRAIN_LIMIT_BYTES, before the stream is cancelled.
 */
export async function readBody(request: Request, maxBytes: number): Promise<BodyRead> {
  const tooLarge = () => ({ ok: false as const, response: errorResponse(413, "too_large", `body exceeds ${maxBytes} bytes`) });
  if (!request.body) return { ok: true, bytes: new Uint8Array(0) };
  const declared = request.headers.get("content-length");
  if (Number(declared ?? "0") > maxBytes) return tooLarge();
  // A declared length is the body's framing (the runtime never hands over more): read it in one call.
  if (declared !== null) return { ok: true, bytes: new Uint8Array(await request.arrayBuffer()) };
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size <= maxBytes) chunks.push(value);
    else if (size > DRAIN_LIMIT_BYTES) {
      await reader.cancel();
      break;
    }
  }
  if (size > maxBytes) return tooLarge();
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  return { ok: true, bytes };
}

/**
 * Reads a JSON body of at most `maxBytes`; a larger one is 413, a malformed or too deeply nested one
 * 400. `empty`: what an empty body stands for (absent: an empty body is malformed).
 */
export async function readJsonBody(
  request: Request,
  maxBytes: number,
  empty?: unknown,
): Promise<{ ok: true; data: unknown } | { ok: false; response: Response }> {
  const body = await readBody(request, maxBytes);
  if (!body.ok) return body;
  if (body.bytes.byteLength === 0 && empty !== undefined) return { ok: true, data: empty };
  const text = new TextDecoder().decode(body.bytes);
  if (jsonTooDeep(text)) return { ok: false, response: errorResponse(400, "bad_json", `JSON nests deeper than ${LIMITS.jsonDepth} levels`) };
  try {
    return { ok: true, data: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, response: errorResponse(400, "bad_json", "body is not valid JSON") };
  }
}
