// A2A tasks while they run, through the official @a2a-js/sdk client against a real `wrangler dev`
// and real `baton serve`: cancel (the command's process tree stops), a failover the client sees
// only as output that goes on, and push notifications to a local receiver that verifies each one's
// Standard Webhooks signature. The fixture is a2a-fixture.ts; send, stream and ask in a2a.test.ts.
import { describe, expect, it } from "vitest";
import { TaskState, type Task } from "@a2a-js/sdk";
import { a2aFixture, userMessage, textOf, collect, outputText, lastState } from "./a2a-fixture.ts";
import { join } from "node:path";
import { alive, treePids } from "./process-tree-fixture.ts";
import { uniqueAgent } from "./serve-helpers.ts";
import { verifyBatonWebhook } from "../../examples/verify-webhook.mjs";

const { pushReceiver, agentCommand, serve, baton, optIn, a2aClient } = a2aFixture();

describe("A2A tasks while they run, through @a2a-js/sdk", () => {
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
});
