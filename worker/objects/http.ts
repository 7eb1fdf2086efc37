// HTTP helpers shared by the objects: named JSON errors and a body reader that stops at a size
// limit instead of buffering whatever a client sends.
import type { ErrorCode } from "../wire/protocol.ts";

export function httpError(status: number, code: ErrorCode, message: string, extra: Record<string, unknown> = {}): Response {
  return Response.json({ error: code, message, ...extra }, { status });
}

/** Reads a JSON body of at most `maxBytes`; a larger one is 413 and a malformed one 400, read no further. */
export async function readJsonBody(
  request: Request,
  maxBytes: number,
): Promise<{ ok: true; data: unknown } | { ok: false; response: Response }> {
  const tooLarge = () => ({ ok: false as const, response: httpError(413, "too_large", `body exceeds ${maxBytes} bytes`) });
  if (Number(request.headers.get("content-length") ?? "0") > maxBytes) return tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        return tooLarge();
      }
      chunks.push(value);
    }
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  try {
    return { ok: true, data: JSON.parse(new TextDecoder().decode(bytes)) as unknown };
  } catch {
    return { ok: false, response: httpError(400, "bad_json", "body is not valid JSON") };
  }
}
