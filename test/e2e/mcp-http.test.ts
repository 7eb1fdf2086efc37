// Remote MCP (POST /mcp) against a real wrangler dev, with the official SDK's Client over
// StreamableHTTPClientTransport configured from docs/guides/remote.md: the tools are listed; an
// ask runs as a Task that waits for a person past the host's request timeout and ends with the
// answer; a task cancelled from the client is a baton cancel; a token without the answer scope can
// ask but never answer or cancel; an ask several people decide; a retried call posts once; bad
// input changes nothing.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, type Task } from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sharedServeFixture, uniqueAgent } from "./serve-helpers.ts";
import { NAMED_TOKENS } from "./shared-accounts.ts";
import { advanceClock, DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

/** Tokens of account dev with only the send scope ("mcp-sender") and only the answer scope ("mcp-person"). */
const SENDER = NAMED_TOKENS.mcpSender.token;
const PERSON = NAMED_TOKENS.mcpPerson.token;
const fx = sharedServeFixture();

/** The host configuration docs/guides/remote.md shows: its URL's path and its headers, the token put in. */
function guideConfig(token: string): { path: string; headers: Record<string, string> } {
  const guide = readFileSync(join(ROOT, "docs/guides/remote.md"), "utf8");
  const block = /## Remote MCP[\s\S]*?```json\n([\s\S]*?)```/.exec(guide)?.[1];
  const server = (JSON.parse(block ?? "{}") as { mcpServers: { baton: { type: string; url: string; headers: Record<string, string> } } }).mcpServers.baton;
  expect(server.type).toBe("http");
  const headers = Object.fromEntries(Object.entries(server.headers).map(([k, v]) => [k, v.replace(/<[^>]+>/, token)]));
  return { path: new URL(server.url).pathname, headers };
}

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function remoteClient(token = DEV_TOKEN): Promise<Client> {
  const { path, headers } = guideConfig(token);
  const client = new Client({ name: "baton-remote-test-host", version: "1.0.0" }, { capabilities: { tasks: { requests: { tools: { call: {} } } } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(path, fx.dev.url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

async function http(method: string, path: string, body?: unknown, token = DEV_TOKEN): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${fx.dev.url}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

async function messages(agent: string): Promise<{ id: number; status: string; text: string }[]> {
  return (await http("GET", `/agents/${agent}/messages`)).json.messages as { id: number; status: string; text: string }[];
}

/** Starts `name` as a task and returns its id (the first thing the stream gives). */
async function startTask(client: Client, name: string, args: Record<string, unknown>): Promise<Task> {
  const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, { task: { ttl: 60_000 } });
  const first = await stream.next();
  await stream.return(undefined);
  if (first.done || first.value.type !== "taskCreated") throw new Error(`no task: ${JSON.stringify(first.value)}`);
  return first.value.task;
}

/** The result of a JSON-RPC answer sent as JSON or as an event stream. */
function rpcResult(body: string): unknown {
  const json = body.startsWith("{") ? body : body.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).at(-1) ?? "{}";
  return (JSON.parse(json) as { result?: unknown }).result;
}

type Structured = Record<string, unknown>;
const structured = (r: unknown): Structured => (r as { structuredContent?: Structured }).structuredContent ?? { error: JSON.stringify(r) };

describe("remote MCP over Streamable HTTP", () => {
  it("lists baton mcp's tools plus cancel, ask and send offered as tasks", async () => {
    const client = await remoteClient();
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name).sort()).toEqual(["ask", "cancel", "get_answer", "get_output", "lease_acquire", "lease_release", "lease_renew", "send", "who"]);
    expect(tools.find((t) => t.name === "ask")?.execution?.taskSupport).toBe("optional");
    expect(tools.find((t) => t.name === "who")?.inputSchema.required).toEqual(["agent"]);
    expect(structured(await client.callTool({ name: "who", arguments: { agent: uniqueAgent("mcph") } }))).toMatchObject({ holder: null, paused: false });
  });

  it("ask as a task: input_required while nobody answers, past the host's request timeout, then the person's answer as its result", async () => {
    const agent = uniqueAgent("mcph");
    const client = await remoteClient();
    const task = await startTask(client, "ask", { agent, question: "Ship it?", choices: ["ship", "hold"], deadline_seconds: 3600, on_deadline: "reject" });
    expect(task).toMatchObject({ status: "input_required", taskId: expect.stringMatching(new RegExp(`^${agent}:\\d+$`)) });
    const id = Number(task.taskId.split(":")[1]);
    // The host's request timeout is 2.5 s; its tasks/result is kept open by progress (every 2 s), and the person answers after 4 s.
    const progress: number[] = [];
    const result = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, {
      timeout: 2_500, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p.progress),
    });
    await new Promise((r) => setTimeout(r, 4_000));
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("input_required");
    expect((await http("POST", `/agents/${agent}/messages/${id}/answer`, { choice: "ship", text: "go" })).status).toBe(200);
    expect(structured(await result)).toMatchObject({ status: "answered", message_id: id, choice: "ship", text: "go", by: { token: "default" } });
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("completed");
  });

  it("ask with needs and approvers is decided by several people: one approval leaves it input_required, the second named approver's ends it; a quorum the coordinator refuses is a tool error that posts nothing", async () => {
    const agent = uniqueAgent("mcph");
    const client = await remoteClient();
    const task = await startTask(client, "ask", { agent, question: "Deploy to prod?", needs: 2, approvers: ["default", "mcp-person"], deadline_seconds: 3600, on_deadline: "reject" });
    const id = Number(task.taskId.split(":")[1]);
    expect((await http("GET", `/agents/${agent}/messages/${id}`)).json).toMatchObject({ question: { quorum: { needs: 2, reject_needs: 1, approvers: ["default", "mcp-person"] } } });
    expect((await http("POST", `/agents/${agent}/messages/${id}/answer`, { choice: "approve" })).status).toBe(200);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("input_required");
    expect((await http("GET", `/agents/${agent}/messages/${id}`)).json).toMatchObject({ status: "parked", question: { quorum: { approvals: 1, waiting_for: ["mcp-person"] } } });
    expect((await http("POST", `/agents/${agent}/messages/${id}/answer`, { choice: "approve" }, PERSON)).status).toBe(200);
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(structured(result)).toMatchObject({ status: "answered", message_id: id, choice: "approve", by: { token: "mcp-person" } });
    for (const [args, says] of [
      [{ needs: 2, choices: ["ship", "hold"] }, /needs and reject_needs above 1 take a question without choices/],
      [{ needs: 3, approvers: ["default", "mcp-person"] }, /at most the number of approvers/],
      [{ reject_needs: 2, approvers: ["default"] }, /at most the number of approvers/],
    ] as const) {
      const refused = await client.callTool({ name: "ask", arguments: { agent, question: "Again?", wait_seconds: 0, ...args } });
      expect(refused.isError, JSON.stringify(args)).toBe(true);
      expect(JSON.stringify(refused.content)).toMatch(says);
    }
    expect((await messages(agent)).length).toBe(1);
  });

  it("a question nobody answers ends by its deadline on the test clock, and the task says so", async () => {
    const agent = uniqueAgent("mcph");
    const client = await remoteClient();
    const task = await startTask(client, "ask", { agent, question: "Rotate the keys?", deadline_seconds: 600, on_deadline: "reject" });
    await advanceClock(fx.dev.url, 601_000, { agent });
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("completed");
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(structured(result)).toMatchObject({ status: "decided_by_deadline", choice: "reject" });
  });

  it("a task cancelled from the client is a baton cancel: the message is cancelled", async () => {
    const agent = uniqueAgent("mcph");
    const client = await remoteClient();
    const task = await startTask(client, "send", { agent, text: "long work" });
    expect(task.status).toBe("working");
    const id = Number(task.taskId.split(":")[1]);
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe("cancelled");
    expect((await http("GET", `/agents/${agent}/messages/${id}`)).json).toMatchObject({ status: "cancelled" });
  });

  it("a token without the answer scope can ask, but its cancel and its task cancel are refused and the question stays open", async () => {
    const agent = uniqueAgent("mcph");
    const client = await remoteClient(SENDER);
    const task = await startTask(client, "ask", { agent, question: "Approve my own deploy?" });
    const id = Number(task.taskId.split(":")[1]);
    const refused = await client.callTool({ name: "cancel", arguments: { agent, message_id: id } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toMatch(/answer scope/);
    await expect(client.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/answer scope/);
    expect((await http("POST", `/agents/${agent}/messages/${id}/answer`, { choice: "approve" }, SENDER)).status).toBe(403);
    expect((await http("GET", `/agents/${agent}/messages/${id}`)).json).toMatchObject({ status: "parked", answers: [] });
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("input_required");
  });

  it("a call retried with the same session and request id posts once; another session's same id posts anew", async () => {
    const agent = uniqueAgent("mcph");
    const headers = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
    const init = await fetch(`${fx.dev.url}/mcp`, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) });
    const session = init.headers.get("mcp-session-id");
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    const call = (sessionId: string) => fetch(`${fx.dev.url}/mcp`, {
      method: "POST", headers: { ...headers, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "send", arguments: { agent, text: "deploy once" } } }),
    }).then(async (r) => structured(rpcResult(await r.text())));
    const first = await call(session!);
    const again = await call(session!);
    expect(again.message_id).toBe(first.message_id);
    expect((await messages(agent)).length).toBe(1);
    const other = await call(crypto.randomUUID());
    expect(other.message_id).not.toBe(first.message_id);
    expect((await messages(agent)).length).toBe(2);
  });

  it("bad input gets JSON-RPC's error shape or a tool error, and posts nothing", async () => {
    const agent = uniqueAgent("mcph");
    const headers = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
    const notJson = await fetch(`${fx.dev.url}/mcp`, { method: "POST", headers, body: "{not json" });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 }, id: null });
    const batch = await fetch(`${fx.dev.url}/mcp`, { method: "POST", headers, body: "[]" });
    expect(await batch.json()).toMatchObject({ error: { code: -32600 } });
    const client = await remoteClient();
    const bad = await client.callTool({ name: "ask", arguments: { agent, question: "" } });
    expect(bad.isError).toBe(true);
    const badAgent = await client.callTool({ name: "send", arguments: { agent: "Not An Agent", text: "x" } });
    expect(badAgent.isError).toBe(true);
    // There is no tool that answers: a call of one is the SDK's unknown-tool answer.
    const unknown = await client.callTool({ name: "answer", arguments: { agent, message_id: 1, choice: "approve" } }).catch((e: Error) => e.message);
    expect(JSON.stringify(unknown)).toMatch(/answer not found/);
    expect(await messages(agent)).toEqual([]);
    expect((await fetch(`${fx.dev.url}/mcp`, { headers })).status).toBe(405);
    expect((await fetch(`${fx.dev.url}/mcp`, { method: "POST", headers: { ...headers, authorization: "Bearer wrong" }, body: "{}" })).status).toBe(401);
  });
});
