// Each agent that opts in is an A2A agent, driven by the official @a2a-js/sdk client against a real
// `wrangler dev` and real `baton serve`: send, stream the live output, a person's answer resuming
// an input-required task, cancel (the command's process tree stops), a failover the client sees
// only as output that goes on, idempotent retries, bad input and a token without the scope, and
// push notifications to a local receiver that verifies each one's Standard Webhooks signature.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from "@a2a-js/sdk/client";
import { Role, TaskState, type SendMessageRequest, type StreamResponse, type Task } from "@a2a-js/sdk";
import { alive, killLeftovers, treePids } from "./process-tree-fixture.ts";
import { BIN, getJson, sharedServeFixture, startServe, uniqueAgent, waitForMessage, type ServeProc } from "./serve-helpers.ts";
import { NAMED_TOKENS } from "./shared-accounts.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { verifyBatonWebhook } from "../../examples/verify-webhook.mjs";
import { startReceiver, type Receiver } from "./receiver.ts";

/** Token "wall" of account dev, read only. */
const READER = NAMED_TOKENS.reader.token;
const fx = sharedServeFixture();
const dirs: string[] = [];
const receivers: Receiver[] = [];
afterEach(async () => {
  dirs.splice(0).forEach(killLeftovers);
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

/** A push receiver on 127.0.0.1 (wrangler dev's .dev.vars allows private addresses): answers 200 and keeps every request. */
async function pushReceiver() {
  const r = await startReceiver("/a2a/push");
  receivers.push(r);
  const states = () => r.got.map((d) => (JSON.parse(d.body) as { statusUpdate: { status: { state: string } } }).statusUpdate.status.state);
  return {
    url: r.url,
    got: r.got,
    states,
    async waitForStates(n: number): Promise<string[]> {
      await r.waitFor((got) => got.length >= n);
      return states();
    },
  };
}

/** A served shell agent: `long` starts a process tree, `ask` asks a person, `lines` prints eight lines slowly, anything else is echoed. */
function agentCommand(): { dir: string; command: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), "baton-a2a-"));
  dirs.push(dir);
  writeFileSync(join(dir, "baton"), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
  const command = join(dir, "agent.sh");
  writeFileSync(command, [
    "#!/bin/sh",
    "text=$(cat)",
    'case "$text" in',
    '  long*) base="$PIDS/$BATON_MESSAGE_ID"',
    "    sh -c 'sleep 1000 & echo $! > \"$0.bg\"; echo $$ > \"$0.sub\"; wait' \"$base\" &",
    '    echo $$ > "$base.sh.tmp" && mv "$base.sh.tmp" "$base.sh"',
    "    wait ;;",
    '  ask*) echo "asking"; choice=$(baton ask "Ship it?" --choices ship,hold) || exit $?; echo "answered: $choice" ;;',
    '  lines*) i=1; while [ $i -le 8 ]; do echo "$TAG line $i"; sleep 0.3; i=$((i+1)); done ;;',
    '  *) echo "did: $text" ;;',
    "esac",
    "",
  ].join("\n"), { mode: 0o755 });
  return { dir, command, env: { PIDS: dir, PATH: `${dir}:${process.env.PATH}` } };
}

function serve(agent: string, tag: string, command: string, env: Record<string, string>): ServeProc {
  const s = startServe({ url: fx.dev.url, agent, tag, command, sink: "/dev/null", env });
  fx.started.push(s);
  return s;
}

/**
 * `baton ARGS…` without blocking this process: spawnSync would hold the event loop while wrangler
 * dev closes an idle keep-alive socket, which the next fetch would then reuse ("other side closed").
 */
function node(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN } });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
const baton = (args: string[]) => node([BIN, ...args]);

/** `baton agent set AGENT --a2a on --description …`, as its owner opts it in. */
async function optIn(agent: string, description = "Echoes what it is sent; asks before shipping."): Promise<void> {
  const set = await baton(["agent", "set", agent, "--a2a", "on", "--description", description]);
  expect(set.code, set.stderr).toBe(0);
  expect(set.stdout).toContain(", A2A on\n");
}

/** The A2A client as another team would build it: the SDK's factory, its card resolver, a Bearer token on every call. */
async function a2aClient(agent: string, token = DEV_TOKEN): Promise<Client> {
  const authed: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), authorization: `Bearer ${token}` } });
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
  }));
  return factory.createFromUrl(`${fx.dev.url}/agents/${agent}/a2a/`);
}

const userMessage = (text: string, extra: { messageId?: string; taskId?: string; contextId?: string; returnImmediately?: boolean } = {}): SendMessageRequest => ({
  tenant: "",
  metadata: undefined,
  configuration: extra.returnImmediately ? { acceptedOutputModes: [], returnImmediately: true, taskPushNotificationConfig: undefined, historyLength: undefined } : undefined,
  message: {
    messageId: extra.messageId ?? crypto.randomUUID(), role: Role.ROLE_USER, taskId: extra.taskId ?? "", contextId: extra.contextId ?? "", extensions: [], referenceTaskIds: [], metadata: undefined,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
  },
});

const textOf = (parts: { content?: { $case: string; value: unknown } }[] | undefined) => (parts ?? []).map((p) => (p.content?.$case === "text" ? String(p.content.value) : "")).join("");

async function collect(stream: AsyncGenerator<StreamResponse>, onEvent: (e: StreamResponse, all: StreamResponse[]) => void = () => {}): Promise<StreamResponse[]> {
  const all: StreamResponse[] = [];
  for await (const e of stream) {
    all.push(e);
    onEvent(e, all);
  }
  return all;
}
const outputText = (events: StreamResponse[]) => events.map((e) => (e.payload?.$case === "artifactUpdate" && e.payload.value.artifact?.artifactId === "output" ? textOf(e.payload.value.artifact.parts) : "")).join("");
const lastState = (events: StreamResponse[]) => events.flatMap((e) => (e.payload?.$case === "statusUpdate" ? [e.payload.value.status?.state] : [])).at(-1);

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

  it("CancelTask is a baton cancel: the command's whole process tree stops and the task ends canceled", async () => {
    const agent = uniqueAgent("a2a");
    const { dir, command, env } = agentCommand();
    await serve(agent, "a", command, env).waitFor(/holder/);
    await optIn(agent);
    const client = await a2aClient(agent);
    const sent = (await client.sendMessage(userMessage("long", { returnImmediately: true }))) as Task;
    const deadline = Date.now() + 20_000;
    let pids: number[] | null = null;
    while ((pids = treePids(dir, Number(sent.id))) === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(pids!.every(alive)).toBe(true);
    const cancelled = await client.cancelTask({ id: sent.id, tenant: "", metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(textOf(cancelled.status?.message?.parts)).toContain("cancelled by default: cancelled over A2A");
    const gone = Date.now() + 10_000;
    while (pids!.some(alive) && Date.now() < gone) await new Promise((r) => setTimeout(r, 20));
    expect(pids!.filter(alive)).toEqual([]);
    await expect(client.cancelTask({ id: sent.id, tenant: "", metadata: undefined })).resolves.toMatchObject({ status: { state: TaskState.TASK_STATE_CANCELED } });
  });

  it("kill -9 of the holder mid-task: the stream goes on with the standby's output and completes, one task throughout", async () => {
    const agent = uniqueAgent("a2a");
    const { command, env } = agentCommand();
    const a = serve(agent, "a", command, env);
    await a.waitFor(/holder/);
    await serve(agent, "b", command, env).waitFor(/standby/);
    await optIn(agent);
    const client = await a2aClient(agent);
    let killed = false;
    const events = await collect(client.sendMessageStream(userMessage("lines")), (_, all) => {
      if (!killed && outputText(all).includes("a line 3")) {
        killed = true;
        a.proc.kill("SIGKILL");
      }
    });
    const out = outputText(events);
    expect(out.slice(out.indexOf("b line 1"))).toBe([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `b line ${i}\n`).join(""));
    const machines = events.flatMap((e) => (e.payload?.$case === "statusUpdate" ? [(e.payload.value.metadata?.baton as { machine?: string } | undefined)?.machine] : [])).filter(Boolean);
    expect(machines).toEqual(["machine-a", "machine-b"]);
    expect(new Set(events.map((e) => (e.payload?.$case === "task" ? e.payload.value.id : e.payload?.$case === "message" ? "" : e.payload?.value.taskId)))).toHaveProperty("size", 1);
    expect(lastState(events)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("push notifications: SendMessage's config and CreateTaskPushNotificationConfig set targets; each state change reaches them signed with their token; Get, List and Delete; the targets end with the task", async () => {
    const agent = uniqueAgent("a2a");
    const { command, env } = agentCommand();
    await serve(agent, "a", command, env).waitFor(/holder/);
    await optIn(agent);
    const client = await a2aClient(agent);
    expect((await client.getAgentCard()).capabilities?.pushNotifications).toBe(true);
    const first = await pushReceiver();
    const second = await pushReceiver();
    const TOKEN = `whsec_${Buffer.from("a2a-push-token-0123456789-abcdef").toString("base64")}`;
    const OTHER = `whsec_${Buffer.from("a2a-push-other-0123456789-abcdef").toString("base64")}`;
    const request = userMessage("ask", { returnImmediately: true });
    request.configuration!.taskPushNotificationConfig = { tenant: "", id: "", taskId: "", url: first.url, token: TOKEN, authentication: undefined };
    const sent = (await client.sendMessage(request)) as Task;
    expect(await first.waitForStates(2)).toEqual(["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]);

    const created = await client.createTaskPushNotificationConfig({
      tenant: "", id: "pager", taskId: sent.id, url: second.url, token: OTHER, authentication: { scheme: "Bearer", credentials: "pager-key" },
    });
    expect(created).toMatchObject({ id: "pager", taskId: sent.id, url: second.url, token: "", authentication: { scheme: "Bearer", credentials: "" } });
    // A target set while the task waits gets its current state at once.
    expect(await second.waitForStates(1)).toEqual(["TASK_STATE_INPUT_REQUIRED"]);
    expect(second.got[0]!.headers.authorization).toBe("Bearer pager-key");
    const listed = await client.listTaskPushNotificationConfig({ tenant: "", taskId: sent.id, pageSize: 10, pageToken: "" });
    expect(listed.configs.map((c) => [c.id, c.url]).sort()).toEqual([[sent.id, first.url], ["pager", second.url]].sort());
    expect(await client.getTaskPushNotificationConfig({ tenant: "", taskId: sent.id, id: "pager" })).toMatchObject({ id: "pager", url: second.url });
    await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: sent.id, id: "pager" });
    await expect(client.getTaskPushNotificationConfig({ tenant: "", taskId: sent.id, id: "pager" })).rejects.toThrow(/no push target pager/);

    await client.sendMessage(userMessage("ship", { taskId: sent.id, returnImmediately: true }));
    expect(await first.waitForStates(4)).toEqual(["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]);
    for (const d of first.got) {
      // The Standard Webhooks library verifies each push with the target's token as its secret.
      expect(verifyBatonWebhook(TOKEN, d.headers as Record<string, string>, d.body)).toMatchObject({ statusUpdate: { taskId: sent.id } });
      expect(d.headers["x-a2a-notification-token"]).toBe(TOKEN);
      expect(() => verifyBatonWebhook(OTHER, d.headers as Record<string, string>, d.body)).toThrow();
    }
    expect(new Set(first.got.map((d) => d.headers["webhook-id"])).size).toBe(4);
    expect(second.got).toHaveLength(1);
    expect((await client.listTaskPushNotificationConfig({ tenant: "", taskId: sent.id, pageSize: 10, pageToken: "" })).configs).toEqual([]);
    await expect(client.createTaskPushNotificationConfig({ tenant: "", id: "late", taskId: sent.id, url: second.url, token: OTHER, authentication: undefined }))
      .rejects.toThrow(/has ended/);
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
