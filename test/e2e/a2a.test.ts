// Each agent that opts in is an A2A agent, driven by the official @a2a-js/sdk client against a real
// `wrangler dev` and real `baton serve`: send, stream the live output, a person's answer resuming
// an input-required task, idempotent retries, the guide's client, bad input and a token without the
// scope. Cancel, failover and push notifications are in a2a-runs.test.ts; the fixture in a2a-fixture.ts.
import { describe, expect, it } from "vitest";
import { TaskState, type Task } from "@a2a-js/sdk";
import { a2aFixture, READER, userMessage, textOf, collect, outputText, lastState } from "./a2a-fixture.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { getJson, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

const { fx, agentCommand, serve, node, baton, optIn, a2aClient } = a2aFixture();

describe("A2A through @a2a-js/sdk", () => {
  it("an opted-in agent's card names it, its description and Bearer auth; send waits for the reply; GetTask wraps the message; a retried messageId posts once; ListTasks pages at most 100", async () => {
    const agent = uniqueAgent("a2a");
    const { command, env } = agentCommand();
    await serve(agent, "a", command, env).waitFor(/holder/);
    await optIn(agent);
    const client = await a2aClient(agent);
    const card = await client.getAgentCard();
    expect(card).toMatchObject({ name: agent, description: "Echoes what it is sent; asks before shipping.", capabilities: { streaming: true } });
    expect(card.supportedInterfaces[0]).toMatchObject({ url: `${fx.dev.url}/agents/${agent}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" });
    expect(card.securitySchemes.baton?.scheme).toMatchObject({ $case: "httpAuthSecurityScheme", value: { scheme: "Bearer" } });

    const messageId = crypto.randomUUID();
    const sent = (await client.sendMessage(userMessage("hello", { messageId }))) as Task;
    expect(sent.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(sent.artifacts.find((a) => a.artifactId === "reply")?.parts)).toBe("did: hello\n");
    const again = (await client.sendMessage(userMessage("hello", { messageId }))) as Task;
    expect(again.id).toBe(sent.id);
    const history = await getJson<{ messages: unknown[] }>(`${fx.dev.url}/agents/${agent}/messages`);
    expect(history.messages).toHaveLength(1);
    const got = await client.getTask({ id: sent.id, tenant: "" });
    expect(got).toMatchObject({ id: sent.id, contextId: `task-${sent.id}`, status: { state: TaskState.TASK_STATE_COMPLETED } });
    expect(textOf(got.history[0]?.parts)).toBe("hello");
    const listed = await client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 10, pageToken: "", historyLength: 0, statusTimestampAfter: undefined, includeArtifacts: undefined });
    expect(listed.tasks.map((t) => [t.id, t.status?.state])).toEqual([[sent.id, TaskState.TASK_STATE_COMPLETED]]);
    await expect(client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 101, pageToken: "", historyLength: 0, statusTimestampAfter: undefined, includeArtifacts: undefined }))
      .rejects.toThrow(/pageSize/);
    expect((await baton(["agent", "show", agent])).stdout).toContain(`A2A            on (/agents/${agent}/a2a): Echoes what it is sent`);
  });

  it("a stream carries the live output as it is written, then the reply and completed; a contextId is the message's group", async () => {
    const agent = uniqueAgent("a2a");
    const { command, env } = agentCommand();
    await serve(agent, "a", command, env).waitFor(/holder/);
    await optIn(agent);
    const client = await a2aClient(agent);
    let sawRunning = false;
    let whileRunning: Promise<{ status: string; group: string }> | null = null;
    const events = await collect(client.sendMessageStream(userMessage("lines", { contextId: "release-7" })), (e, all) => {
      if (!sawRunning && outputText(all).includes("a line 2")) {
        sawRunning = true;
        const id = all[0]!.payload?.$case === "task" ? Number(all[0]!.payload.value.id) : 0;
        whileRunning = getJson<{ status: string; group: string }>(`${fx.dev.url}/agents/${agent}/messages/${id}`);
      }
    });
    expect(events[0]?.payload).toMatchObject({ $case: "task", value: { contextId: "release-7" } });
    expect(outputText(events)).toBe([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `a line ${i}\n`).join(""));
    expect(sawRunning).toBe(true);
    // Read while the stream still had lines to come: the output is live, not a replay at the end.
    expect(await whileRunning).toMatchObject({ status: "running", group: "release-7" });
    expect(lastState(events)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("a question parks the task as input-required; the person's answer over A2A resumes it and the stream goes on to the reply", async () => {
    const agent = uniqueAgent("a2a");
    const { command, env } = agentCommand();
    await serve(agent, "a", command, env).waitFor(/holder/);
    await optIn(agent);
    const client = await a2aClient(agent);
    const first = await collect(client.sendMessageStream(userMessage("ask")));
    expect(lastState(first)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const asked = first.at(-1)!.payload!;
    expect(asked.$case === "statusUpdate" && textOf(asked.value.status?.message?.parts)).toContain("Ship it?\nanswer with one of: ship, hold, reject");
    const taskId = asked.$case === "statusUpdate" ? asked.value.taskId : "";
    // Not a choice: refused, and the task still waits.
    await expect(client.sendMessage(userMessage("maybe", { taskId }))).rejects.toThrow(/answer task \d+ with one of: ship, hold, reject/);
    expect((await client.getTask({ id: taskId, tenant: "" })).status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const resumed = await collect(client.sendMessageStream(userMessage("ship", { taskId })));
    // The command runs again from the top (its second attempt); the stream starts after the first attempt's output.
    expect(outputText(resumed)).toBe("asking\nanswered: ship\n");
    expect(lastState(resumed)).toBe(TaskState.TASK_STATE_COMPLETED);
    const done = await client.getTask({ id: taskId, tenant: "" });
    expect(textOf(done.artifacts.find((a) => a.artifactId === "reply")?.parts)).toBe("asking\nanswered: ship\n");
  });

  it("docs/guides/remote.md's A2A client is examples/a2a-send.mjs, and it prints the run's output and the task's states", async () => {
    const guide = readFileSync(join(ROOT, "docs/guides/remote.md"), "utf8");
    const start = guide.indexOf("```js\n", guide.indexOf("## A2A")) + 6;
    const excerpt = guide.slice(start, guide.indexOf("```", start)).trimEnd();
    expect(readFileSync(join(ROOT, "examples/a2a-send.mjs"), "utf8")).toContain(excerpt);
    const agent = uniqueAgent("a2a");
    const { command, env } = agentCommand();
    await serve(agent, "a", command, env).waitFor(/holder/);
    await optIn(agent);
    const r = await node(["examples/a2a-send.mjs", agent, "hello"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("did: hello\n");
    expect(r.stderr).toBe("task 1: TASK_STATE_WORKING\ntask 1: TASK_STATE_COMPLETED\n");
  });

  it("bad input is JSON-RPC's error and posts nothing; a read-only token may read the card but not send; an agent that did not opt in is no A2A agent", async () => {
    const agent = uniqueAgent("a2a");
    const rpc = async (body: unknown, token = DEV_TOKEN, name = agent) => {
      const res = await fetch(`${fx.dev.url}/agents/${name}/a2a`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as { id?: unknown; error?: { code: number; message: string } } };
    };
    expect((await rpc({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "1" } })).body.error).toMatchObject({ code: -32004, message: expect.stringContaining("does not answer A2A") });
    expect((await fetch(`${fx.dev.url}/agents/${agent}/a2a/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status).toBe(404);
    await optIn(agent);
    const send = (parts: unknown) => ({ jsonrpc: "2.0", id: "s", method: "SendMessage", params: { message: { messageId: "m-1", role: "ROLE_USER", parts }, configuration: { returnImmediately: true } } });
    expect((await rpc("{not json")).body.error?.code).toBe(-32700);
    expect((await rpc({ jsonrpc: "1.0", id: 2, method: "GetTask" })).body.error?.code).toBe(-32600);
    expect((await rpc({ jsonrpc: "2.0", id: 3, method: "message/send", params: {} })).body).toMatchObject({ id: 3, error: { code: -32601 } });
    expect((await rpc(send([]))).body.error?.code).toBe(-32602);
    expect((await rpc(send([{ url: "https://example.com/x.png" }]))).body.error?.code).toBe(-32005);
    expect((await rpc({ jsonrpc: "2.0", id: 4, method: "GetTask", params: { id: "nope" } })).body.error?.code).toBe(-32001);
    expect((await rpc({ jsonrpc: "2.0", id: 5, method: "GetTask", params: { id: "99" } })).body.error?.code).toBe(-32001);
    const reader = await rpc(send([{ text: "from the wall" }]), READER);
    expect(reader).toMatchObject({ status: 403, body: { error: { code: -32600, message: expect.stringContaining("lacks the send scope") } } });
    expect((await getJson<{ messages: unknown[] }>(`${fx.dev.url}/agents/${agent}/messages`)).messages).toEqual([]);
    const card = await (await a2aClient(agent, READER)).getAgentCard();
    expect(card.name).toBe(agent);
    const posted = await rpc(send([{ text: "once" }]));
    expect(posted.body).toMatchObject({ id: "s", result: { task: { status: { state: "TASK_STATE_SUBMITTED" } } } });
    const id = Number((posted.body as { result: { task: { id: string } } }).result.task.id);
    await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "queued");
  });
});
