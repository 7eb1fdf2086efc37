// The SDK's McpServer that answers one POST /mcp, with baton's tools (client/mcp-tools.ts) and
// its task store (tasks.ts). Building one, with its tools and their schemas, costs about as much as
// the call it answers, so a request answered in one JSON reply borrows one from a few kept per
// isolate instead. A server serves one request at a time (the SDK's Protocol holds one transport
// and keys its handlers by request id), so a kept server is lent to one request, closed, and only
// then lent again; its tools and store reach the coordinator through the borrowing request's own
// connection (`McpCall`), which it holds only while it serves.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import * as z from "zod/mini";
import type { Connection } from "../../client/http.ts";
import { askShape, batonToolSpecs, postQuestion, postSend, sendShape, type ToolSpec, type ToolsOptions } from "../../client/mcp-tools.ts";
import { AGENT_NAME } from "../wire/protocol.ts";
import { messageOf, MessageTaskStore, serveTaskResults, taskOf, TASK_POLL_MS } from "./tasks.ts";

/** Tools that may wait long: Tasks where the client asks for one. */
const TASK_TOOLS = new Set(["ask", "send"]);
/** How long a plain (non-task) ask keeps its call open before it hands back get_answer: below common host timeouts. */
const PLAIN_ASK_WAIT_MS = 50_000;
/** Servers kept per isolate and kind: more than the requests one isolate answers at once is waste. */
const KEPT = 4;

/** What one request's tool calls go out with: the caller's connection and the Idempotency-Key of its posts. */
export interface McpCall {
  conn: Connection;
  postKey: ToolsOptions["postKey"];
}

/**
 * A server whose `ask` and `send` run plainly (a tools/call without a task: `plainCall`) or as
 * tasks (every other request), with only the called tool (`only`) or every tool. Built for one
 * request alone where its answer streams and may outlive a quick reply; else kept (withKeptServer).
 */
export function serverFor(call: McpCall, plainCall: boolean, only?: string): McpServer {
  const store = new MessageTaskStore(call.conn);
  const server = new McpServer({ name: "baton", version: "1" }, {
    capabilities: { tasks: { requests: { tools: { call: {} } }, cancel: {} } },
    taskStore: store,
    defaultTaskPollInterval: TASK_POLL_MS,
    // The SDK's default (ajv) is left out of the bundle (absent.ts): this server never checks a client's JSON Schema.
    jsonSchemaValidator: { getValidator: () => () => ({ valid: false, data: undefined, errorMessage: "no JSON Schema validation here: baton's MCP endpoint never elicits" }) },
  });
  serveTaskResults(server, store);
  const options = { agent: null, conn: call.conn, askWaitMs: PLAIN_ASK_WAIT_MS, postKey: call.postKey };
  const called = batonToolSpecs({ ...options, only });
  // A call of a tool there is none of meets every tool, so the SDK answers it as for any unknown tool.
  for (const spec of called.length > 0 ? called : batonToolSpecs(options)) {
    if (TASK_TOOLS.has(spec.name) && !plainCall) registerTaskTool(server, spec, store, call);
    else server.registerTool(spec.name, { title: spec.title, description: spec.description, inputSchema: spec.inputSchema }, spec.handler);
  }
  return server;
}

interface Kept {
  server: McpServer;
  /** The request it serves now; null while it waits to be lent. */
  serving: McpCall | null;
}

const kept = { plain: [] as Kept[], tasks: [] as Kept[] };

/** A server with every tool whose connection is its borrower's: a tool that ran while no request held it would fail, never borrow another's. */
function keptServer(plainCall: boolean): Kept {
  const entry: Kept = { server: null as unknown as McpServer, serving: null };
  const current = (): McpCall => {
    if (entry.serving === null) throw new Error("an MCP tool ran outside the request it was lent to");
    return entry.serving;
  };
  const conn: Connection = {
    get url() { return current().conn.url; },
    get token() { return current().conn.token; },
    get ownAnswers() { return current().conn.ownAnswers; },
    fetch: (input, init) => (current().conn.fetch ?? fetch)(input, init),
  };
  entry.server = serverFor({ conn, postKey: (extra) => current().postKey?.(extra) ?? Promise.resolve(undefined) }, plainCall);
  return entry;
}

/**
 * Runs `serve` with a kept server lent to `call`, then closes it (ending whatever it still ran) and
 * keeps it for the next request. For requests answered in one JSON reply, which `serve` awaits
 * whole; a server whose request failed is dropped rather than lent again.
 */
export async function withKeptServer<T>(call: McpCall, plainCall: boolean, serve: (server: McpServer) => Promise<T>): Promise<T> {
  const pool = kept[plainCall ? "plain" : "tasks"];
  const entry = pool.pop() ?? keptServer(plainCall);
  entry.serving = call;
  let served = false;
  try {
    const result = await serve(entry.server);
    served = true;
    return result;
  } finally {
    await entry.server.close();
    entry.serving = null;
    if (served && pool.length < KEPT) pool.push(entry);
  }
}

const agentArg = { agent: z.string().check(z.regex(AGENT_NAME)) };
const askArgs = z.object({ ...agentArg, ...askShape });
const sendArgs = z.object({ ...agentArg, ...sendShape });

/** `ask` or `send` as a task: its post is the task, whose status and result are the message's (tasks.ts). */
function registerTaskTool(server: McpServer, spec: ToolSpec, store: MessageTaskStore, call: McpCall): void {
  server.experimental.tasks.registerToolTask(spec.name, {
    title: spec.title, description: spec.description, inputSchema: spec.inputSchema, execution: { taskSupport: "optional" },
  }, {
    createTask: async (raw, extra) => {
      const key = await call.postKey?.(extra);
      if (spec.name === "ask") {
        const args = z.parse(askArgs, raw);
        const id = await postQuestion(args.agent, args, call.conn, key);
        return { task: taskOf(args.agent, await messageOf(call.conn, args.agent, id)) };
      }
      const args = z.parse(sendArgs, raw);
      return { task: taskOf(args.agent, await postSend(args.agent, args, call.conn, key)) };
    },
    getTask: async (_args, extra) => {
      const task = await store.getTask(extra.taskId);
      if (task === null) throw new Error(`no task ${extra.taskId}`);
      return task;
    },
    getTaskResult: (_args, extra) => store.toolResult(extra.taskId),
  });
}
