// Issue 51's remote MCP promise end to end: a host built on the official SDK signs in with OAuth
// by the SDK's own flow (mcp-oauth-host.ts) and, through POST /mcp, sends work to agents that real
// `baton serve` processes run: a served command asks a person and the host's task waits past its
// request timeout for the answer; the host reads the run's output while it runs; a kill -9 of the
// holder mid-task is one task whose output goes on from the standby; a task cancel stops the
// command's process tree. A grant without `answer` never answers or cancels.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, type Task } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { a2aFixture } from "./a2a-fixture.ts";
import { connectWithOAuth, MemoryOAuthProvider, personSigningIn } from "./mcp-oauth-host.ts";
import { alive, treePids } from "./process-tree-fixture.ts";
import { uniqueAgent } from "./serve-helpers.ts";
import { NAMED_TOKENS } from "./shared-accounts.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

// The served shell agents of the A2A files: `ask` asks a person, `lines` prints eight lines slowly, `long` starts a process tree.
const { fx, agentCommand, serve } = a2aFixture();
const OWNER = NAMED_TOKENS.hostOwner;
const PERSON = NAMED_TOKENS.mcpPerson.token;

type Structured = Record<string, unknown>;
const structured = (r: unknown): Structured => (r as { structuredContent?: Structured }).structuredContent ?? { error: JSON.stringify(r) };

const hosts: Client[] = [];
afterAll(async () => {
  await Promise.all(hosts.map((c) => c.close()));
});

/** A host that has never met this coordinator, signed in by OWNER ticking `scopes` on baton's page. */
async function signedInHost(scopes: string[]): Promise<{ client: Client; provider: MemoryOAuthProvider }> {
  const provider = new MemoryOAuthProvider(personSigningIn(fx.dev.url, { token: OWNER.token, scopes }));
  const client = await connectWithOAuth(fx.dev.url, provider);
  hosts.push(client);
  return { client, provider };
}

let shared: Promise<{ client: Client; provider: MemoryOAuthProvider }> | null = null;
/** One host for the scenes below, signed in once with read, send and answer. */
const host = () => (shared ??= signedInHost(["read", "send", "answer"]));

async function http(method: string, path: string, body?: unknown, token = DEV_TOKEN): Promise<{ status: number; json: Structured }> {
  const res = await fetch(`${fx.dev.url}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json().catch(() => ({}))) as Structured };
}

/** `send` started as a task; its id names the message (`<agent>:<id>`). */
async function sendTask(client: Client, agent: string, text: string): Promise<{ task: Task; id: number }> {
  const stream = client.experimental.tasks.callToolStream({ name: "send", arguments: { agent, text } }, CallToolResultSchema, { task: { ttl: 60_000 } });
  const first = await stream.next();
  await stream.return(undefined);
  if (first.done || first.value.type !== "taskCreated") throw new Error(`no task: ${JSON.stringify(first.value)}`);
  return { task: first.value.task, id: Number(first.value.task.taskId.split(":")[1]) };
}

/** get_output read on from the start until `done` holds of the text read so far (each call waits for new output). */
async function outputUntil(client: Client, agent: string, id: number, done: (text: string) => boolean): Promise<{ text: string; final: boolean }> {
  let text = "";
  let from = 0;
  let final = false;
  const deadline = Date.now() + 30_000;
  while (!done(text) && !final && Date.now() < deadline) {
    const page = structured(await client.callTool({ name: "get_output", arguments: { agent, message_id: id, from, wait_seconds: 5 } }));
    if (page.error !== undefined) throw new Error(String(page.error));
    text += String(page.text);
    from = Number(page.next_from);
    final = page.final === true;
  }
  return { text, final };
}

async function statusOf(client: Client, taskId: string, want: Task["status"]): Promise<Task["status"]> {
  const deadline = Date.now() + 20_000;
  let status = (await client.experimental.tasks.getTask(taskId)).status;
  while (status !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    status = (await client.experimental.tasks.getTask(taskId)).status;
  }
  return status;
}

describe("a remote MCP host signed in with OAuth by the official SDK", () => {
  it("the SDK's flow: the 401 sends the person to baton's page once, the host registers and exchanges the code, and its grant is the person's, listed", async () => {
    const { client, provider } = await host();
    expect(provider.pages).toBe(1);
    expect(provider.saved).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), refresh_token: expect.any(String) });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(["send", "ask", "get_output", "cancel", "who"]));
    const agent = uniqueAgent("mcpo");
    expect(structured(await client.callTool({ name: "who", arguments: { agent } }))).toMatchObject({ agent, holder: null });
    const grants = (await http("GET", "/grants")).json.grants as Structured[];
    const client_id = (provider.client as { client_id: string }).client_id;
    expect(grants.find((g) => g.client_id === client_id)).toMatchObject({ client_name: "sdk host", scopes: ["read", "send", "answer"], signed_in_with: OWNER.name });
  });

  it("send to a served agent that asks a person: the task is input_required past the host's timeout, the person's answer resumes it, and its output and reply come back", async () => {
    const { client } = await host();
    const agent = uniqueAgent("mcpo");
    const { command, env } = agentCommand();
    await serve(agent, "a", command, env).waitFor(/holder/);
    const { task, id } = await sendTask(client, agent, "ask");
    expect(await statusOf(client, task.taskId, "input_required")).toBe("input_required");
    // The host's request timeout is 2.5 s; tasks/result is kept open by progress, and the person answers after 4 s.
    const progress: number[] = [];
    const result = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 2_500, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p.progress) });
    await new Promise((r) => setTimeout(r, 4_000));
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("input_required");
    expect((await http("POST", `/agents/${agent}/messages/${id}/answer`, { choice: "ship" }, PERSON)).status).toBe(200);
    const done = await result;
    expect(done.isError).toBeFalsy();
    expect(structured(done)).toMatchObject({ message_id: id, status: "acknowledged" });
    expect(JSON.stringify(structured(done))).toContain("answered: ship");
    expect(progress.length).toBeGreaterThanOrEqual(1);
    // The command asked and parked; the answer ran it again, its `baton ask` returning the recorded answer.
    const { text, final } = await outputUntil(client, agent, id, () => false);
    expect(final).toBe(true);
    expect(text).toMatch(/^asking\nbaton: asked a person: Ship it\?; message \d+ parks until someone answers/);
    expect(text).toContain("[baton: attempt 1 ended: parked]\n[baton: attempt 2 on machine-a took over]\nasking\nanswered: ship\n");
  });

  it("kill -9 of the holder mid-task: one task, its output goes on from the standby with the takeover said, and it completes", async () => {
    const { client } = await host();
    const agent = uniqueAgent("mcpo");
    const { command, env } = agentCommand();
    const a = serve(agent, "a", command, env);
    await a.waitFor(/holder/);
    await serve(agent, "b", command, env).waitFor(/standby/);
    const { task, id } = await sendTask(client, agent, "lines");
    await outputUntil(client, agent, id, (t) => t.includes("a line 3"));
    a.proc.kill("SIGKILL");
    const done = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 30_000 });
    expect(structured(done)).toMatchObject({ message_id: id, status: "acknowledged" });
    const { text, final } = await outputUntil(client, agent, id, () => false);
    expect(final).toBe(true);
    expect(text).toMatch(/^a line 1\n/);
    expect(text).toContain("[baton: attempt 2 on machine-b took over]\n");
    expect(text.slice(text.indexOf("b line 1"))).toBe([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `b line ${i}\n`).join(""));
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe("completed");
    expect((await http("GET", `/agents/${agent}/messages/${id}`)).json).toMatchObject({ status: "acknowledged", attempts: 2 });
  });

  it("a task cancelled from the host is a baton cancel: the served command's whole process tree stops", async () => {
    const { client } = await host();
    const agent = uniqueAgent("mcpo");
    const { dir, command, env } = agentCommand();
    await serve(agent, "a", command, env).waitFor(/holder/);
    const { task, id } = await sendTask(client, agent, "long");
    const deadline = Date.now() + 20_000;
    let pids: number[] | null = null;
    while ((pids = treePids(dir, id)) === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(pids!.every(alive)).toBe(true);
    expect((await client.experimental.tasks.cancelTask(task.taskId)).status).toBe("cancelled");
    const gone = Date.now() + 10_000;
    while (pids!.some(alive) && Date.now() < gone) await new Promise((r) => setTimeout(r, 20));
    expect(pids!.filter(alive)).toEqual([]);
    expect((await http("GET", `/agents/${agent}/messages/${id}`)).json).toMatchObject({ status: "cancelled", cancelled: { token: `oauth.${OWNER.name}`, account: "dev" } });
  });

  it("a host whose grant lacks answer can send and ask, but never answers or cancels", async () => {
    const { client } = await signedInHost(["read", "send"]);
    const agent = uniqueAgent("mcpo");
    const asked = structured(await client.callTool({ name: "ask", arguments: { agent, question: "Approve my own deploy?", wait_seconds: 0 } }));
    const id = Number(asked.message_id);
    expect(id).toBeGreaterThan(0);
    const refused = await client.callTool({ name: "cancel", arguments: { agent, message_id: id } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toMatch(/answer scope/);
    expect((await http("GET", `/agents/${agent}/messages/${id}`)).json).toMatchObject({ status: "parked", answers: [] });
  });
});
