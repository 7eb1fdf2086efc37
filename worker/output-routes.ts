// A run's live output over HTTP (wire/output.ts): a served command's write (`baton output`), and
// the read, as Server-Sent Events or one JSON page. The Worker holds each reader's stream and pulls
// one bounded page from the agent's object only when the reader has taken the last one (a stream
// with no buffer of its own), so a slow or stalled reader holds nothing of the object's, the
// runner's or the alarm's; in the object a follow call waits at most FOLLOW_WAIT_MS for news.
// A stream lasts at most STREAM_MS; the reader resumes from its last event (Last-Event-ID). Before it
// sends a page the stream asks whether the reader's credential still stands (a revoked grant does
// not), so a revocation ends it within one page.
import { readJsonBody } from "./objects/http.ts";
import { FOLLOW_WAIT_MS } from "./objects/agent-calls.ts";
import { errorResponse, LIMITS, parseBody } from "./wire/protocol.ts";
import { batchRefusal, outputWriteSchema, type OutputEvent, type OutputPage } from "./wire/output.ts";
import type { Stub } from "./agents.ts";

/** How long one event stream stays open before it ends and the reader resumes (EventSource does so by itself). */
export const STREAM_MS = 5 * 60_000;

/**
 * The least time between two follow calls of one reader that came back empty: the object answers
 * at once when too many calls wait already (output-followers.ts), and a reader past that cap must
 * not turn it into a loop of calls.
 */
export const FOLLOW_PAUSE_MS = 1000;

/** Waits out what is left of FOLLOW_PAUSE_MS since `asked` when a follow came back with nothing and the message goes on. */
async function paced(asked: number, page: OutputPage | null): Promise<OutputPage | null> {
  const left = asked + FOLLOW_PAUSE_MS - Date.now();
  if (page !== null && page.events.length === 0 && !page.final && left > 0) await new Promise((resolve) => setTimeout(resolve, left));
  return page;
}

/** POST …/messages/{id}/output: a batch under the run's token and run key, decided like the frame. */
export async function postOutput(request: Request, id: number, stub: Stub): Promise<Response> {
  const body = await readJsonBody(request, LIMITS.requestBodyBytes);
  if (!body.ok) return body.response;
  const parsed = parseBody(outputWriteSchema, body.data);
  if (!parsed.ok) return errorResponse(400, "bad_request", `bad output: ${parsed.message}`);
  const over = batchRefusal(parsed.value.chunks);
  if (over) return errorResponse(413, "too_large", over);
  const answer = await stub.writeOutput(id, parsed.value.token, parsed.value.run_key, parsed.value.chunks);
  if (!answer.ok) return errorResponse(answer.status, answer.code, answer.message);
  const { ok: _ok, ...written } = answer;
  return Response.json(written);
}

/** The cursor a reader resumes after: `?from=SEQ`, else Last-Event-ID, else 0 (from the start); null when malformed. */
export function readCursor(request: Request, url: URL): number | null {
  const raw = url.searchParams.get("from") ?? request.headers.get("last-event-id") ?? "0";
  return /^\d{1,15}$/.test(raw) ? Number(raw) : null;
}

function wantsJson(request: Request, url: URL): boolean {
  const format = url.searchParams.get("format");
  if (format !== null) return format === "json";
  const accept = request.headers.get("accept") ?? "";
  return accept.includes("application/json") && !accept.includes("text/event-stream");
}

/** GET …/messages/{id}/output: one JSON page, or the event stream until the message is final (or `still` says the credential no longer stands). */
export async function getOutput(request: Request, url: URL, id: number, stub: Stub, still: () => Promise<boolean>): Promise<Response> {
  const from = readCursor(request, url);
  if (from === null) return errorResponse(400, "bad_request", "from (or Last-Event-ID) is the seq of the last event seen: a whole number");
  const format = url.searchParams.get("format");
  if (format !== null && format !== "json" && format !== "sse") return errorResponse(400, "bad_request", "format is json or sse");
  const waitRaw = url.searchParams.get("wait");
  const waitS = waitRaw === null ? 0 : Number(waitRaw);
  if (!Number.isFinite(waitS) || waitS < 0 || waitS * 1000 > FOLLOW_WAIT_MS) return errorResponse(400, "bad_request", `wait is 0-${FOLLOW_WAIT_MS / 1000} seconds`);
  // A JSON page may wait (a long poll: clients without a streaming reader follow this way).
  const asked = Date.now();
  const first = wantsJson(request, url) && waitS > 0 ? await paced(asked, await stub.followOutput(id, from, waitS * 1000)) : await stub.outputPage(id, from);
  if (first === null) return errorResponse(404, "not_found", `no message ${id}`);
  if (wantsJson(request, url)) return Response.json(first);
  return new Response(eventStream(first, id, stub, still), {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" },
  });
}

/** One event in the SSE format: its seq as the id (so a reconnect resumes after it), its type as the event name. */
export function sseEvent(e: OutputEvent): string {
  const id = "seq" in e ? `id: ${e.seq}\n` : "";
  return `${id}event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
}

function eventStream(first: OutputPage, id: number, stub: Stub, still: () => Promise<boolean>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const started = Date.now();
  let page: OutputPage | null = first;
  let cursor = first.cursor;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode("retry: 1000\n\n"));
    },
    // Called only when the reader has taken what was sent: one page in flight per reader, at most.
    async pull(controller) {
      if (page === null) {
        const left = STREAM_MS - (Date.now() - started);
        if (left <= 0) return controller.close();
        const asked = Date.now();
        page = await paced(asked, await stub.followOutput(id, cursor, Math.min(FOLLOW_WAIT_MS, left)));
        // Asked after the wait, so a page that came while the credential ended is never sent. Closed,
        // not ended: EventSource reconnects and meets the 401 an ended credential gets.
        if (page === null || !(await still())) return controller.close();
      }
      const p: OutputPage = page;
      page = null;
      cursor = p.cursor;
      const text = p.events.map(sseEvent).join("") + (p.final ? sseEvent({ type: "end", status: p.status }) : "");
      // An empty page is a wait that timed out: a comment keeps proxies from closing an idle stream.
      controller.enqueue(encoder.encode(text === "" ? ": waiting\n\n" : text));
      if (p.final) controller.close();
    },
  }, { highWaterMark: 0 });
}
