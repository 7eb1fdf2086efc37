// The tools `baton mcp` offers an MCP host, over the client library: ask a person out of band (a
// question only a token with the answer scope can answer, recorded with who answered, unlike an
// in-band elicitation the client itself could answer), see who serves the agent, send it a
// message, read a message's live output, and hold session leases ("only one of us works on this repo") across machines.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod/mini";
import { CoordinatorError, UnreachableError } from "../../client/errors.ts";
import { requestJson, type Connection } from "../../client/http.ts";
import { answerOf, askPerson, plainChoices, waitForAnswer, type PersonAnswer } from "../../client/person-question.ts";
import { outputPageSchema } from "../../worker/wire/output.ts";
import { outputResult } from "./mcp-output.ts";
import { leaseGrantSchema, leaseReleasedSchema, messageViewSchema, presenceSchema } from "../../worker/wire/http-responses.ts";
import type { OnDeadline } from "../../worker/wire/enums.ts";
import { LIMITS, RUN_ID } from "../../worker/wire/protocol.ts";
import { routePath } from "../../worker/wire/routes.ts";

export interface McpOptions {
  agent: string;
  conn: Connection;
  version: string;
  /** How long `ask` keeps its call open before it returns the message id instead (default 10 minutes). */
  askWaitMs?: number;
  pollMs?: number;
}

const PROGRESS_EVERY_MS = 5_000;

function result(data: unknown): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(data, null, 2) }], structuredContent: data as Record<string, unknown> };
}

/** A refusal or an unreachable coordinator becomes the tool's error text (the host shows it to the model); anything else is a bug and throws. */
async function tool(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return result(await fn());
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
function answerResult(a: PersonAnswer, agent: string): Record<string, unknown> {
  const { messageId, ...rest } = a;
  const named = { agent, message_id: messageId, ...rest };
  if (a.status !== "waiting") return named;
  return { ...named, next: `nobody has answered yet: call get_answer with message_id ${messageId} later` };
}

export function createMcpServer(options: McpOptions): McpServer {
  const { agent, conn } = options;
  const server = new McpServer({ name: "baton", version: options.version });

  server.registerTool("ask", {
    title: "Ask a person",
    description: `Ask a person a question out of band and wait for the answer. The question is shown on baton's dashboard, in \`baton history ${agent}\` and to webhooks; only a person with an answer-scoped token can answer it (choices, approve or reject), and the answer is recorded with who gave it. If the wait ends first, the message id comes back: call get_answer with it later.`,
    inputSchema: {
      question: z.string().check(z.minLength(1), z.maxLength(LIMITS.questionChars)),
      choices: z.optional(z.array(z.string()).check(z.minLength(1), z.maxLength(LIMITS.choices))),
      deadline_seconds: z.optional(z.int().check(z.gte(LIMITS.parkDeadlineSeconds.min), z.lte(LIMITS.parkDeadlineSeconds.max))),
      // No approve: a deadline that approves would let the model's own question approve itself.
      on_deadline: z.optional(z.enum(["fail", "reject", "escalate"] satisfies OnDeadline[])),
      wait_seconds: z.optional(z.number().check(z.gte(0), z.lte(3600))),
    },
  }, (args, extra) => tool(async () => {
    const messageId = await askPerson(agent, {
      text: args.question, choices: plainChoices(args.choices ?? []), deadlineSeconds: args.deadline_seconds, onDeadline: args.on_deadline,
    }, conn);
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

  server.registerTool("get_answer", {
    title: "Get a person's answer",
    description: "The answer to a question asked with ask: waiting, answered (choice, text, who), decided_by_deadline (its on_deadline, nobody's word), or unanswered.",
    // messageId: the name ask's result used before it said message_id; still taken.
    inputSchema: { message_id: z.optional(z.int().check(z.gte(1))), messageId: z.optional(z.int().check(z.gte(1))) },
  }, (args) => {
    const id = args.message_id ?? args.messageId;
    if (id === undefined) return { content: [{ type: "text", text: "get_answer needs message_id: the id ask returned" }], isError: true };
    return tool(async () => answerResult(await answerOf(agent, id, conn), agent));
  });

  server.registerTool("who", {
    title: "Who serves the agent",
    description: `Which machine holds ${agent}'s serve lease, which stand by, and its waiting work (queued, running, parked for a person).`,
    inputSchema: {},
  }, () => tool(async () => {
    const p = await requestJson(conn, "GET", routePath("/agents/{agent}/presence", { agent }), presenceSchema);
    return {
      agent, holder: p.holder, fence: p.fence,
      standbys: p.connections.filter((c) => !c.held).map((c) => ({ machine: c.machine, claim_seq: c.claim_seq, priority: c.priority, drained: c.drained })),
      work: { counts: p.work.counts, running: p.work.running, parked: p.work.parked },
      paused: p.controls.paused,
    };
  }));

  server.registerTool("send", {
    title: "Send the agent a message",
    description: `Post a message to ${agent}; exactly one serving machine runs it. With wait_seconds, wait that long for its reply.`,
    inputSchema: {
      text: z.string().check(z.minLength(1)),
      group: z.optional(z.string()),
      wait_seconds: z.optional(z.number().check(z.gte(0), z.lte(3600))),
    },
  }, (args, extra) => tool(async () => {
    const sent = await requestJson(conn, "POST", routePath("/agents/{agent}/messages", { agent }), messageViewSchema, { body: { text: args.text, ...(args.group === undefined ? {} : { group: args.group }) } });
    const until = Date.now() + (args.wait_seconds ?? 0) * 1000;
    let m = sent;
    while ((m.status === "queued" || m.status === "running") && Date.now() < until && !extra.signal.aborted) {
      await new Promise((r) => setTimeout(r, options.pollMs ?? 500));
      m = await requestJson(conn, "GET", routePath("/agents/{agent}/messages/{id}", { agent, id: sent.id }), messageViewSchema);
    }
    return { agent, message_id: m.id, status: m.status, reply: m.reply, error: m.error, attempts: m.attempts };
  }));

  server.registerTool("get_output", {
    title: "Read a message's live output",
    description: `What a message of ${agent} printed so far while it runs (stdout, stderr, streamed text), from \`from\` (0: the start; else the next_from an earlier call returned), with takeovers by another machine said in place. With wait_seconds (at most 25), waits that long for new output when there is none yet. final: nothing more will come.`,
    inputSchema: {
      message_id: z.int().check(z.gte(1)),
      from: z.optional(z.int().check(z.nonnegative())),
      wait_seconds: z.optional(z.int().check(z.gte(0), z.lte(25))),
    },
  }, (args) => tool(async () => {
    const path = routePath("/agents/{agent}/messages/{id}/output", { agent, id: args.message_id });
    const page = await requestJson(conn, "GET", `${path}?format=json&from=${args.from ?? 0}${args.wait_seconds ? `&wait=${args.wait_seconds}` : ""}`, outputPageSchema);
    return outputResult(agent, page);
  }));

  const session = { session: z.string().check(z.minLength(1)) };
  const runId = { run_id: z.string().check(z.regex(RUN_ID)) };
  const ttl = { ttl_seconds: z.optional(z.int().check(z.gte(LIMITS.leaseTtlSeconds.min), z.lte(LIMITS.leaseTtlSeconds.max))) };
  const leaseCall = (op: "acquire" | "renew", args: { session: string; run_id: string; ttl_seconds?: number }) => requestJson(
    conn, "POST", routePath(`/leases/{session}/${op}`, { session: args.session }), leaseGrantSchema, { body: { run_id: args.run_id, ...(args.ttl_seconds ? { ttl_seconds: args.ttl_seconds } : {}) } });
  server.registerTool("lease_acquire", {
    title: "Acquire a session lease",
    description: "Take the session lease (e.g. a repository's name), or fail naming when the holder's lease expires. Returns the run id (pass it to renew and release) and the fence to attach to writes; renew before expires_at.",
    inputSchema: { ...session, run_id: z.optional(runId.run_id), ...ttl },
  }, (args) => tool(() => leaseCall("acquire", { ...args, run_id: args.run_id ?? crypto.randomUUID() })));
  server.registerTool("lease_renew", {
    title: "Renew a session lease",
    description: "Extend a held session lease; refused when it expired or another run holds it (then stop working on the session).",
    inputSchema: { ...session, ...runId, ...ttl },
  }, (args) => tool(() => leaseCall("renew", args)));
  server.registerTool("lease_release", {
    title: "Release a session lease",
    description: "Give a session lease up so another machine can take it at once.",
    inputSchema: { ...session, ...runId },
  }, (args) => tool(() => requestJson(conn, "POST", routePath("/leases/{session}/release", { session: args.session }), leaseReleasedSchema, { body: { run_id: args.run_id } })));
  return server;
}
