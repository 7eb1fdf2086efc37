// Reading a message's live output (GET …/messages/{id}/output): an async iterator over its events,
// in order, from a cursor. Following, it holds one Server-Sent Events stream and, when that drops
// (network, a coordinator restart, the stream's time limit), opens another with the seq of the last
// event it yielded (Last-Event-ID), after a backoff: nothing is lost and nothing repeats. It ends
// after the `end` event (the message is final). Without `follow`, it reads the stored pages and
// ends. Writing output is `ctx.output` in a handler, or `RunJournal.output` from a served command.
import { outputPageSchema, type OutputEvent } from "../worker/wire/output.ts";
import { DEFAULT_BACKOFF, reconnectDelay, type BackoffOptions } from "./backoff.ts";
import { SseParser } from "./core/sse.ts";
import { CoordinatorError } from "./errors.ts";
import { baseUrl, refusal, requestJson, type Connection } from "./http.ts";
import { errorBodySchema } from "../worker/wire/http-responses.ts";
import { routePath } from "../worker/wire/routes.ts";

export type { OutputEvent };

export interface OutputOptions {
  /** The seq of the last event already seen (default 0: from the start). */
  from?: number;
  /** Keep reading live until the message is final (default true); false: what is stored now. */
  follow?: boolean;
  signal?: AbortSignal;
  backoff?: BackoffOptions;
  /** Each reconnect after a dropped stream, with why (tests, status lines). */
  onReconnect?: (attempt: number, reason: string) => void;
}

/** The events of message `id`'s output after `options.from`, resuming by itself after a dropped connection. */
export async function* readOutput(conn: Connection, agent: string, id: number, options: OutputOptions = {}): AsyncGenerator<OutputEvent> {
  let cursor = options.from ?? 0;
  const path = routePath("/agents/{agent}/messages/{id}/output", { agent, id });
  if (options.follow === false) {
    for (;;) {
      const page = await requestJson(conn, "GET", `${path}?format=json&from=${cursor}`, outputPageSchema);
      yield* page.events;
      cursor = page.cursor;
      if (!page.more) {
        if (page.final) yield { type: "end", status: page.status };
        return;
      }
    }
  }
  let failures = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    let reason = "the stream ended";
    try {
      for await (const event of stream(conn, path, cursor, options.signal)) {
        failures = 0;
        if ("seq" in event) cursor = event.seq;
        yield event;
        if (event.type === "end") return;
      }
    } catch (err) {
      if (err instanceof CoordinatorError || options.signal?.aborted) throw err;
      reason = err instanceof Error ? err.message : String(err);
    }
    options.onReconnect?.(failures + 1, reason);
    await delay(reconnectDelay(failures++, options.backoff ?? DEFAULT_BACKOFF), options.signal);
  }
}

/** One event stream from after `cursor`, until it ends or drops. */
async function* stream(conn: Connection, path: string, cursor: number, signal?: AbortSignal): AsyncGenerator<OutputEvent> {
  const res = await (conn.fetch ?? fetch)(`${baseUrl(conn)}${path}`, {
    headers: { authorization: `Bearer ${conn.token}`, accept: "text/event-stream", "last-event-id": String(cursor) },
    signal,
  });
  if (res.status !== 200 || !res.body) {
    const body = errorBodySchema.safeParse(await res.json().catch(() => null));
    // A refusal is final (bad token, no such message); a gateway's 5xx is worth another try.
    if (res.status < 500) throw refusal(conn, res.status, body.success ? body.data : null);
    throw new Error(`HTTP ${res.status}`);
  }
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
