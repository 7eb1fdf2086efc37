// Posting a message to an agent from a program: exactly one serving machine runs it. With the
// OpenTelemetry API installed, the post is a `send` span and the message carries its traceparent,
// so the run on whichever machine (and every retry) continues the sender's trace.
import { messageViewSchema, type MessageView } from "../worker/wire/http-responses.ts";
import { LIMITS, utf8Bytes } from "../worker/wire/protocol.ts";
import { requestJson, type Connection } from "./http.ts";
import { tracedPost } from "./tracing.ts";
import { routePath } from "../worker/wire/routes.ts";

export interface SendOptions {
  /** Messages of one group (a conversation) run one at a time, in order. */
  group?: string;
  runTimeoutSeconds?: number;
  /** A retry with the same key within its retention returns the first post's message. */
  idempotencyKey?: string;
  /** A W3C traceparent to continue instead of the active context (e.g. the TRACEPARENT a served command was given). */
  traceparent?: string;
}

/** Refuses (RangeError, nothing sent) a text over LIMITS.messageTextBytes, as the coordinator would after reading it all. */
export function send(agent: string, text: string, conn: Connection, options: SendOptions = {}): Promise<MessageView> {
  const bytes = utf8Bytes(text);
  if (bytes > LIMITS.messageTextBytes) {
    return Promise.reject(new RangeError(`the message text is ${bytes} bytes, over the ${LIMITS.messageTextBytes} one message may hold; nothing was sent`));
  }
  return tracedPost(agent, options.traceparent ?? null, (traceparent) => {
    const body = {
      text,
      ...(options.group === undefined ? {} : { group: options.group }),
      ...(options.runTimeoutSeconds === undefined ? {} : { run_timeout_seconds: options.runTimeoutSeconds }),
      ...(traceparent === null ? {} : { traceparent }),
    };
    const headers: Record<string, string> = options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey };
    return requestJson(conn, "POST", routePath("/agents/{agent}/messages", { agent }), messageViewSchema, { body, headers });
  });
}
