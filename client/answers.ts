// A person's side of a parked message, for scripts and the CLI: answer its question (approve,
// reject, or one of its choices), or retry a failed message. The coordinator keeps each answer with
// the account, the token's name and `via` (where it came from: cli, page, or http).
import { messageViewSchema, type MessageView } from "../worker/wire/http-responses.ts";
import { requestJson, type Connection } from "./http.ts";
import { routePath } from "../worker/wire/routes.ts";

export interface AnswerOptions {
  /** What the next attempt gets as its resume input (or, with reject, why). */
  text?: string;
  /** Where the answer comes from, as the record shows it. */
  via?: "cli" | "page" | "http";
}

function decide(conn: Connection, agent: string, id: number, route: "answer" | "approve" | "reject" | "retry", body: unknown, via: string): Promise<MessageView> {
  return requestJson(conn, "POST", routePath(`/agents/{agent}/messages/{id}/${route}` as const, { agent, id }), messageViewSchema, { body, headers: { "x-baton-via": via } });
}

/** Answers a parked message with one of its question's choices (approve when it offered none). Rejects with 409 when it is not waiting. */
export function answer(agent: string, id: number, choice: string, conn: Connection, options: AnswerOptions = {}): Promise<MessageView> {
  return decide(conn, agent, id, "answer", { choice, ...(options.text === undefined ? {} : { text: options.text }) }, options.via ?? "http");
}

export function approve(agent: string, id: number, conn: Connection, options: AnswerOptions = {}): Promise<MessageView> {
  return decide(conn, agent, id, "approve", options.text === undefined ? {} : { text: options.text }, options.via ?? "http");
}

/** Ends the message as `rejected`: it never runs again. */
export function reject(agent: string, id: number, conn: Connection, options: AnswerOptions = {}): Promise<MessageView> {
  return decide(conn, agent, id, "reject", options.text === undefined ? {} : { text: options.text }, options.via ?? "http");
}

/** Queues a failed message again with a fresh set of tries (its attempt numbers go on). */
export function retry(agent: string, id: number, conn: Connection, options: Pick<AnswerOptions, "via"> = {}): Promise<MessageView> {
  return decide(conn, agent, id, "retry", {}, options.via ?? "http");
}
