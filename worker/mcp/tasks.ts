// MCP Tasks (spec 2025-11-25, experimental in the SDK) for the remote endpoint's long waits: a task
// is one baton message, and its id says which (`<agent>:<message id>`). So the task store keeps
// nothing of its own: a task's status and result are read from the message through the route
// table with the caller's credential, and cancelling a task is a baton cancel (the answer scope,
// the process tree stopped). Any isolate can answer any task, and a task lives as long as its message.
import { isTerminal, type TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ErrorCode, GetTaskPayloadRequestSchema, McpError, RELATED_TASK_META_KEY, type CallToolResult, type Result, type Task } from "@modelcontextprotocol/sdk/types.js";
import { CoordinatorError } from "../../client/errors.ts";
import { requestJson, type Connection } from "../../client/http.ts";
import { answerResult, sentResult, toolResult } from "../../client/mcp-tools.ts";
import { answerFromView } from "../../client/person-question.ts";
import { messageViewSchema, type MessageView } from "../wire/http-responses.ts";
import { AGENT_NAME } from "../wire/protocol.ts";
import { routePath } from "../wire/routes.ts";

/** How often a client should ask after a task (ms): a person's answer is not sub-second work. */
export const TASK_POLL_MS = 2_000;

export function taskIdOf(agent: string, messageId: number): string {
  return `${agent}:${messageId}`;
}

function parseTaskId(taskId: string): { agent: string; id: number } | null {
  const [agent, id, ...rest] = taskId.split(":");
  if (rest.length > 0 || agent === undefined || !AGENT_NAME.test(agent) || !/^\d{1,15}$/.test(id ?? "")) return null;
  return { agent, id: Number(id) };
}

/** What MCP calls the state of a baton message: parked is input_required (a person must answer), never "done" before it is final. */
export function taskOf(agent: string, m: MessageView): Task {
  const status: Task["status"] =
    m.status === "parked" ? "input_required"
    : m.status === "queued" || m.status === "running" ? "working"
    : m.status === "acknowledged" || (m.status === "rejected" && m.for_person === true) ? "completed"
    : m.status === "cancelled" || m.status === "superseded" ? "cancelled"
    : "failed";
  const at = new Date(m.created_at).toISOString();
  return {
    taskId: taskIdOf(agent, m.id), status, statusMessage: `message ${m.id} of ${agent} is ${m.status}`,
    createdAt: at, lastUpdatedAt: new Date().toISOString(), ttl: null, pollInterval: TASK_POLL_MS,
  };
}

/** The tool result a final message stands for: the person's answer for a question, the reply for a sent message. */
export function resultOf(agent: string, m: MessageView): CallToolResult {
  const data = m.for_person === true ? answerResult(answerFromView(m), agent) : sentResult(agent, m);
  const failed = m.status === "failed" || (m.status === "rejected" && m.for_person !== true);
  return failed ? { ...toolResult(data), isError: true } : toolResult(data);
}

export function messageOf(conn: Connection, agent: string, id: number): Promise<MessageView> {
  return requestJson(conn, "GET", routePath("/agents/{agent}/messages/{id}", { agent, id }), messageViewSchema);
}

/** The task store over baton's routes: nothing stored here, everything read from (or done to) the message. */
export class MessageTaskStore implements TaskStore {
  constructor(private readonly conn: Connection) {}

  private async message(taskId: string): Promise<{ agent: string; m: MessageView } | null> {
    const ref = parseTaskId(taskId);
    if (ref === null) return null;
    try {
      return { agent: ref.agent, m: await messageOf(this.conn, ref.agent, ref.id) };
    } catch (err) {
      if (err instanceof CoordinatorError && err.status === 404) return null;
      throw err;
    }
  }

  createTask(): Promise<Task> {
    return Promise.reject(new Error("baton's tasks are made by its tools (ask, send), each from the message it posts"));
  }

  async getTask(taskId: string): Promise<Task | null> {
    const found = await this.message(taskId);
    return found === null ? null : taskOf(found.agent, found.m);
  }

  getTaskResult(taskId: string): Promise<Result> {
    return this.toolResult(taskId);
  }

  async toolResult(taskId: string): Promise<CallToolResult> {
    const found = await this.message(taskId);
    if (found === null) throw new Error(`no task ${taskId}`);
    return resultOf(found.agent, found.m);
  }

  /** The result is the message's own; nothing is stored. */
  async storeTaskResult(): Promise<void> {}

  /** Cancelled is a baton cancel (refused without the answer scope); other statuses are the message's to say, so they change nothing. */
  async updateTaskStatus(taskId: string, status: Task["status"], statusMessage?: string): Promise<void> {
    if (status !== "cancelled") return;
    const ref = parseTaskId(taskId);
    if (ref === null) throw new Error(`no task ${taskId}`);
    await requestJson(this.conn, "POST", routePath("/agents/{agent}/messages/{id}/cancel", ref), messageViewSchema, {
      body: { reason: statusMessage ?? "cancelled by an MCP client" },
    });
  }

  async listTasks(): Promise<{ tasks: Task[] }> {
    throw new Error("tasks/list is not offered: each task is a baton message, listed by GET /agents/{agent}/messages");
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/**
 * tasks/result for baton's tasks: held until the message is final, as the spec says, but with a
 * progress notification every poll when the client sent a progress token, so a host that resets
 * its timeout on progress waits as long as the person takes. (The SDK's own handler waits
 * silently, and its client calls tasks/result as soon as a task is input_required, which here
 * means waiting for a person, not for the client.)
 */
export function serveTaskResults(server: McpServer, store: MessageTaskStore): void {
  server.server.setRequestHandler(GetTaskPayloadRequestSchema, async (request, extra) => {
    const { taskId } = request.params;
    const progressToken = request.params._meta?.progressToken;
    for (let waitedMs = 0; ; waitedMs += TASK_POLL_MS) {
      const task = await store.getTask(taskId);
      if (task === null) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
      if (isTerminal(task.status)) {
        const result = await store.toolResult(taskId);
        return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId } } };
      }
      if (extra.signal.aborted) throw new McpError(ErrorCode.ConnectionClosed, "the request ended before the task did");
      if (progressToken !== undefined) {
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress: waitedMs / 1000, message: task.statusMessage } });
      }
      await pause(TASK_POLL_MS, extra.signal);
    }
  });
}
