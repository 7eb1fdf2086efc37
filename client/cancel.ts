// Stopping a message from anywhere, for scripts and the CLI: a queued or parked message ends
// `cancelled` at once and never runs; a running one's runner is told to stop (its handler's
// `ctx.signal` aborts, `baton serve` stops the command's process tree) and nothing that run writes
// afterwards is kept. The coordinator keeps who cancelled (the token's name), from where and why.
import { messageViewSchema, type MessageView } from "../worker/wire/http-responses.ts";
import { requestJson, type Connection } from "./http.ts";
import { routePath } from "../worker/wire/routes.ts";

export interface CancelOptions {
  /** Why, kept with the message and told to its runner (at most 1000 characters). */
  reason?: string;
  /** Where the cancel comes from, as the record shows it. */
  via?: "cli" | "page" | "http";
}

/**
 * Cancels message `id` of `agent` and resolves with the message as it is now (`status:
 * "cancelled"`). Cancelling again resolves with the first cancel, unchanged. Rejects with a
 * CoordinatorError 409 `message_finished` when it ended first (acknowledged, failed, rejected), and
 * 403 when the token lacks the `answer` scope.
 */
export function cancel(agent: string, id: number, conn: Connection, options: CancelOptions = {}): Promise<MessageView> {
  return requestJson(conn, "POST", routePath("/agents/{agent}/messages/{id}/cancel", { agent, id }), messageViewSchema, {
    body: options.reason === undefined ? {} : { reason: options.reason }, headers: { "x-baton-via": options.via ?? "http" },
  });
}
