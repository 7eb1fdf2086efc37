// The MCP tools baton offers, once, for both servers: `baton mcp` on stdio (one agent, fixed on the
// command line) and the Worker's remote endpoint (POST /mcp: each call names its agent). Ask a
// person out of band (a question only a token with the answer scope can answer, recorded with who
// answered, unlike an in-band elicitation the client itself could answer), see who serves the
// agent, send it a message, read a message's live output, cancel it, and hold session leases
// across machines. Every tool calls the coordinator's HTTP routes through a Connection, so the
// remote server's tools meet the same route table and scope checks as any client.
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod/mini";
import { systemClock } from "./core/clock.ts";
import { CoordinatorError, UnreachableError } from "./errors.ts";
import { requestJson, type Connection } from "./http.ts";
import { outputResult } from "./mcp-output.ts";
import { answerOf, askPerson, plainChoices, waitForAnswer, type PersonAnswer } from "./person-question.ts";
import { outputPageSchema } from "../worker/wire/output.ts";
import { leaseGrantSchema, leaseReleasedSchema, messageViewSchema, presenceSchema, type MessageView } from "../worker/wire/http-responses.ts";
import type { OnDeadline } from "../worker/wire/enums.ts";
import { AGENT_NAME, LIMITS, questionSchema, RUN_ID } from "../worker/wire/protocol.ts";
import { routePath } from "../worker/wire/routes.ts";

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;
type Shape = Record<string, z.ZodMiniType>;

/** One tool as both servers register it: its input shape (with `agent` when calls name it) and its handler over validated input. */
export interface ToolSpec {
  name: string;
  title: string;
  description: string;
  inputSchema: Shape;
  handler: (args: Record<string, unknown>, extra: ToolExtra) => Promise<CallToolResult>;
}

export interface ToolsOptions {
  /** The one agent every call is about (stdio), or null: each call names it in `agent` (remote). */
  agent: string | null;
  conn: Connection;
  /** How long `ask` keeps its call open before it returns the message id instead (default 10 minutes). */
  askWaitMs?: number;
  pollMs?: number;
  /** Only this tool (a server made for one call needs no other); absent: every tool. */
  only?: string;
  /** The Idempotency-Key a post made by this call carries (a retry of the same call posts nothing new), or undefined. */
  postKey?: (extra: ToolExtra) => Promise<string | undefined>;
}

const PROGRESS_EVERY_MS = 5_000;
/** The longest wait one ask or send call may ask for (wait_seconds). */
export const MAX_WAIT_SECONDS = 3600;

export function toolResult(data: unknown): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(data, null, 2) }], structuredContent: data as Record<string, unknown> };
}

/** A refusal or an unreachable coordinator becomes the tool's error text (the host shows it to the model); anything else is a bug and throws. */
export async function toolCall(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return toolResult(await fn());
  } catch (err) {
    if (err instanceof CoordinatorError) {
      const until = typeof err.details.expires_at === "number" ? ` (until ${new Date(err.details.expires_at).toISOString()} unless renewed)` : "";
      return { content: [{ type: "text", text: `${err.message}${until}` }], isError: true };
    }
    if (err instanceof UnreachableError) return { content: [{ type: "text", text: err.message }], isError: true };
    throw err;
  }
}

/** Every tool names a message `message_id`, as `send` and `get_answer`'s input do. */
export function answerResult(a: PersonAnswer, agent: string): Record<string, unknown> {
  const { messageId, ...rest } = a;
  const named = { agent, message_id: messageId, ...rest };
  if (a.status !== "waiting") return named;
  return { ...named, next: `nobody has answered yet: call get_answer with message_id ${messageId} later` };
}

/** What `send` reports of its message. */
export function sentResult(agent: string, m: MessageView): Record<string, unknown> {
  return {
    agent, message_id: m.id, status: m.status, reply: m.reply, error: m.error, attempts: m.attempts,
    ...(m.retried_after ? { retried_after: m.retried_after } : {}), ...(m.declined ? { declined: m.declined } : {}),
  };
}

export const askShape = {
  question: z.string().check(z.minLength(1), z.maxLength(LIMITS.questionChars)),
  choices: z.optional(z.array(z.string()).check(z.minLength(1), z.maxLength(LIMITS.choices))),
  deadline_seconds: z.optional(z.int().check(z.gte(LIMITS.parkDeadlineSeconds.min), z.lte(LIMITS.parkDeadlineSeconds.max))),
  // No approve: a deadline that approves would let the model's own question approve itself.
  on_deadline: z.optional(z.enum(["fail", "reject", "escalate"] satisfies OnDeadline[])),
  // Several people, as a question takes them (wire/protocol.ts; the coordinator checks them together: no choices above one approval, no more needed than named).
  needs: questionSchema.shape.needs,
  approvers: questionSchema.shape.approvers,
  reject_needs: questionSchema.shape.reject_needs,
  wait_seconds: z.optional(z.number().check(z.gte(0), z.lte(MAX_WAIT_SECONDS))),
};
export const sendShape = {
  text: z.string().check(z.minLength(1)),
  group: z.optional(z.string()),
  wait_seconds: z.optional(z.number().check(z.gte(0), z.lte(MAX_WAIT_SECONDS))),
};
const agentShape = { agent: z.string().check(z.regex(AGENT_NAME)) };
// Built once per process.
// messageId: the name ask's result used before it said message_id; still taken.
const getAnswerShape = { message_id: z.optional(z.int().check(z.gte(1))), messageId: z.optional(z.int().check(z.gte(1))) };
const getOutputShape = {
  message_id: z.int().check(z.gte(1)),
  from: z.optional(z.int().check(z.nonnegative())),
  wait_seconds: z.optional(z.int().check(z.gte(0), z.lte(25))),
};
const cancelShape = { message_id: z.int().check(z.gte(1)), reason: z.optional(z.string().check(z.maxLength(200))) };
const runIdSchema = z.string().check(z.regex(RUN_ID));
const sessionShape = { session: z.string().check(z.minLength(1)) };
const ttlShape = { ttl_seconds: z.optional(z.int().check(z.gte(LIMITS.leaseTtlSeconds.min), z.lte(LIMITS.leaseTtlSeconds.max))) };
const acquireShape = { ...sessionShape, run_id: z.optional(runIdSchema), ...ttlShape };
const renewShape = { ...sessionShape, run_id: runIdSchema, ...ttlShape };
const releaseShape = { ...sessionShape, run_id: runIdSchema };


/** Posts the question of an `ask` call; resolves with its message id. */
export function postQuestion(agent: string, args: z.output<z.ZodMiniObject<typeof askShape>>, conn: Connection, key: string | undefined): Promise<number> {
  return askPerson(agent, {
    text: args.question, choices: plainChoices(args.choices ?? []), deadlineSeconds: args.deadline_seconds, onDeadline: args.on_deadline,
    needs: args.needs, approvers: args.approvers, rejectNeeds: args.reject_needs,
  }, conn, { idempotencyKey: key });
}

/** Posts the message of a `send` call. */
export function postSend(agent: string, args: z.output<z.ZodMiniObject<typeof sendShape>>, conn: Connection, key: string | undefined): Promise<MessageView> {
  return requestJson(conn, "POST", routePath("/agents/{agent}/messages", { agent }), messageViewSchema, {
    body: { text: args.text, ...(args.group === undefined ? {} : { group: args.group }) },
    headers: key === undefined ? {} : { "idempotency-key": key },
  });
}

/**
 * The tools, in the order hosts list them. With a fixed agent their descriptions name it; without,
 * each agent tool takes `agent` (the session lease tools are the account's and take none).
 */
export function batonToolSpecs(options: ToolsOptions): ToolSpec[] {
  const { conn } = options;
  const named = options.agent ?? "the agent";
  const specs: ToolSpec[] = [];
  function define<S extends Shape>(
    name: string, title: string, description: string, shape: S, perAgent: boolean,
    run: (args: z.output<z.ZodMiniObject<S>>, agent: string, extra: ToolExtra) => Promise<CallToolResult>,
  ): void {
    if (options.only !== undefined && options.only !== name) return;
    const inputSchema: Shape = perAgent && options.agent === null ? { ...agentShape, ...shape } : shape;
    specs.push({
      name, title, description, inputSchema,
      // The SDK's server parsed the arguments with inputSchema (`agent` included where calls name it) before it calls.
      handler: async (raw, extra) => {
        const args = raw as z.output<z.ZodMiniObject<S>> & { agent?: string };
        return run(args, options.agent ?? (perAgent ? args.agent ?? "" : ""), extra);
      },
    });
  }

  define("ask", "Ask a person",
    `Ask a person a question out of band and wait for the answer. The question is shown on baton's dashboard, in \`baton history ${named}\` and to webhooks; only a person with an answer-scoped token can answer it (choices, approve or reject), and the answer is recorded with who gave it. With needs (and approvers, reject_needs) it is decided by several people: approvals from that many distinct tokens (only the named ones, when approvers is given). If the wait ends first, the message id comes back: call get_answer with it later.`,
    askShape, true, (args, agent, extra) => toolCall(async () => {
      const messageId = await postQuestion(agent, args, conn, await options.postKey?.(extra));
      const progressToken = extra._meta?.progressToken;
      let lastProgress = -Infinity;
      const answer = await waitForAnswer(agent, messageId, conn, {
        timeoutMs: args.wait_seconds === undefined ? options.askWaitMs ?? 600_000 : args.wait_seconds * 1000,
        signal: extra.signal,
        pollMs: options.pollMs,
        onWaiting: async (elapsed) => {
          if (progressToken === undefined || elapsed - lastProgress < PROGRESS_EVERY_MS) return;
          lastProgress = elapsed;
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress: Math.round(elapsed / 1000), message: `waiting for a person to answer message ${messageId} of ${agent}` },
          });
        },
      });
      return answerResult(answer, agent);
    }));

  define("get_answer", "Get a person's answer",
    "The answer to a question asked with ask: waiting, answered (choice, text, who), decided_by_deadline (its on_deadline, nobody's word), or unanswered.",
    getAnswerShape, true, async (args, agent) => {
      const id = args.message_id ?? args.messageId;
      if (id === undefined) return { content: [{ type: "text", text: "get_answer needs message_id: the id ask returned" }], isError: true };
      return toolCall(async () => answerResult(await answerOf(agent, id, conn), agent));
    });

  define("who", "Who serves the agent",
    `Which machine holds ${named}'s serve lease, which stand by, and its waiting work (queued, running, parked for a person).`,
    {}, true, (_args, agent) => toolCall(async () => {
      const p = await requestJson(conn, "GET", routePath("/agents/{agent}/presence", { agent }), presenceSchema);
      return {
        agent, holder: p.holder, fence: p.fence,
        standbys: p.connections.filter((c) => !c.held).map((c) => ({ machine: c.machine, claim_seq: c.claim_seq, priority: c.priority, drained: c.drained })),
        work: { counts: p.work.counts, running: p.work.running, parked: p.work.parked },
        paused: p.controls.paused,
      };
    }));

  define("send", "Send the agent a message",
    `Post a message to ${named}; exactly one serving machine runs it. With wait_seconds, wait that long for its reply.`,
    sendShape, true, (args, agent, extra) => toolCall(async () => {
      const sent = await postSend(agent, args, conn, await options.postKey?.(extra));
      const until = systemClock.now() + (args.wait_seconds ?? 0) * 1000;
      let m = sent;
      while ((m.status === "queued" || m.status === "running") && systemClock.now() < until && !extra.signal.aborted) {
        await new Promise((r) => setTimeout(r, options.pollMs ?? 500));
        m = await requestJson(conn, "GET", routePath("/agents/{agent}/messages/{id}", { agent, id: sent.id }), messageViewSchema);
      }
      return sentResult(agent, m);
    }));

  define("get_output", "Read a message's live output",
    `What a message of ${named} printed so far while it runs (stdout, stderr, streamed text), from \`from\` (0: the start; else the next_from an earlier call returned), with takeovers by another machine said in place. With wait_seconds (at most 25), waits that long for new output when there is none yet. final: nothing more will come.`,
    getOutputShape, true, (args, agent) => toolCall(async () => {
      const path = routePath("/agents/{agent}/messages/{id}/output", { agent, id: args.message_id });
      const page = await requestJson(conn, "GET", `${path}?format=json&from=${args.from ?? 0}${args.wait_seconds ? `&wait=${args.wait_seconds}` : ""}`, outputPageSchema);
      return outputResult(agent, page);
    }));

  define("cancel", "Cancel a message",
    `Stop a message of ${named} wherever it is: a queued one never runs, a running one's whole process tree is stopped, a question is withdrawn. Final. Needs a token with the answer scope.`,
    cancelShape, true, (args, agent) => toolCall(async () => {
      const m = await requestJson(conn, "POST", routePath("/agents/{agent}/messages/{id}/cancel", { agent, id: args.message_id }), messageViewSchema, {
        body: args.reason === undefined ? {} : { reason: args.reason },
      });
      return { agent, message_id: m.id, status: m.status };
    }));

  const leaseCall = (op: "acquire" | "renew", args: { session: string; run_id: string; ttl_seconds?: number }) => requestJson(
    conn, "POST", routePath(`/leases/{session}/${op}`, { session: args.session }), leaseGrantSchema, { body: { run_id: args.run_id, ...(args.ttl_seconds ? { ttl_seconds: args.ttl_seconds } : {}) } });
  define("lease_acquire", "Acquire a session lease",
    "Take the session lease (e.g. a repository's name), or fail naming when the holder's lease expires. Returns the run id (pass it to renew and release) and the fence to attach to writes; renew before expires_at.",
    acquireShape, false, (args) => toolCall(() => leaseCall("acquire", { ...args, run_id: args.run_id ?? crypto.randomUUID() })));
  define("lease_renew", "Renew a session lease",
    "Extend a held session lease; refused when it expired or another run holds it (then stop working on the session).",
    renewShape, false, (args) => toolCall(() => leaseCall("renew", args)));
  define("lease_release", "Release a session lease",
    "Give a session lease up so another machine can take it at once.",
    releaseShape, false, (args) => toolCall(() => requestJson(conn, "POST", routePath("/leases/{session}/release", { session: args.session }), leaseReleasedSchema, { body: { run_id: args.run_id } })));
  return specs;
}
