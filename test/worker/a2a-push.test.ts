// A2A push notifications in the real runtime: a task's push targets through their routes (the
// token never shown, bad input a 400 that stores nothing, a read token refused, private URLs
// refused, the budgets), the pushes a task's status changes queue in the agent's outbox (one per
// target per A2A state change, none for a failover's requeue, none after the end), their delivery
// (signed with the target's token, the token and Authorization headers, a private URL sent
// nowhere, outside the webhook's figures), and the four JSON-RPC methods. Deliveries to a real
// receiver through the official SDK are in test/e2e/a2a.test.ts.
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { A2APushTargets, deliverPushes } from "../../worker/objects/a2a-push.ts";
import { WebhookOutbox } from "../../worker/objects/webhook-outbox.ts";
import { hmacBase64 } from "../../worker/objects/webhook-signature.ts";
import type { MessageView } from "../../worker/wire/http-responses.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { PUSH_LIMITS } from "../../worker/wire/push.ts";
import { directoryObjectName } from "../../worker/objects/names.ts";
import { BASE, claimant, DEV_TOKEN, LIMITS_TOKEN, message, post, stubFor, uniqueAgent, waitFor, write } from "./helpers.ts";

const SENDER = "dev-sender-token"; // send
const READER = "dev-reader-token"; // read
const PERSON = "dev-person-token"; // answer
const TOKEN = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/** The test runner's outbound service answers 503 here, so a push stays in the outbox to be read. */
const BUSY_URL = "http://receiver.test/status/503";

async function http(method: string, path: string, body?: unknown, token = DEV_TOKEN) {
  const res = await SELF.fetch(`${BASE}${path}`, {
    method, headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
}

async function rpc(agent: string, method: string, params: unknown, token = DEV_TOKEN) {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/a2a`, {
    method: "POST", headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await res.json()) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
}

/** The pushes waiting in the agent's outbox: where each goes and the state it announces. */
async function queuedPushes(agent: string): Promise<{ task: number; id: string; state: string; body: Record<string, unknown> }[]> {
  return runInDurableObject(stubFor(agent), (_i, state) => state.storage.sql.exec<{ target: string; body: string }>(
    `SELECT target, body FROM webhook_outbox WHERE target IS NOT NULL ORDER BY seq`).toArray().map((r) => {
    const target = JSON.parse(r.target) as { task: number; id: string };
    const body = JSON.parse(r.body) as { statusUpdate: { status: { state: string } } };
    return { task: target.task, id: target.id, state: body.statusUpdate.status.state, body };
  }));
}

describe("push targets over HTTP", () => {
  it("PUT sets one and GET shows it without its token; DELETE removes it and its waiting pushes; bad input is a 400 that stores nothing; a read token is refused", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "work");
    const path = `/agents/${agent}/messages/${id}/push`;
    const put = await http("PUT", `${path}/hook-1`, { url: BUSY_URL, token: TOKEN, auth_scheme: "Bearer", auth_credentials: "receiver-secret" }, SENDER);
    expect(put).toEqual({ status: 200, body: { task: id, id: "hook-1", url: BUSY_URL, auth_scheme: "Bearer", created_at: expect.any(Number) } });
    const listed = await http("GET", path, undefined, SENDER);
    expect(listed.body).toEqual({ task: id, targets: [put.body] });
    expect(JSON.stringify(listed.body)).not.toContain(TOKEN);
    expect(JSON.stringify(listed.body)).not.toContain("receiver-secret");
    expect((await http("GET", `${path}/hook-1`, undefined, SENDER)).body).toEqual(put.body);
    expect((await http("GET", path, undefined, READER)).status).toBe(403);
    expect((await http("PUT", `${path}/hook-2`, { url: BUSY_URL, token: TOKEN }, READER)).status).toBe(403);
    for (const [body, says] of [
      [{ url: BUSY_URL }, /token must be 16-256 visible ASCII characters/],
      [{ url: BUSY_URL, token: "short" }, /token must be 16-256/],
      [{ url: BUSY_URL, token: `${TOKEN} with spaces` }, /token must be/],
      [{ url: "ftp://receiver.test/x", token: TOKEN }, /url must be an http: or https: URL/],
      [{ url: "http://127.0.0.1:9/x", token: TOKEN }, /url must not point at a loopback address/],
      [{ url: "http://169.254.169.254/latest", token: TOKEN }, /link-local address/],
      [{ url: "https://user:pw@receiver.test/x", token: TOKEN }, /user name or password/],
      [{ url: BUSY_URL, token: TOKEN, auth_scheme: "Bearer" }, /auth_scheme and auth_credentials together/],
      [{ url: BUSY_URL, token: TOKEN, auth_scheme: "Bear er", auth_credentials: "x" }, /auth_scheme must be/],
      [{ url: BUSY_URL, token: TOKEN, auth_scheme: "Bearer", auth_credentials: "a\r\nx-evil: 1" }, /auth_credentials must be/],
      [{ url: BUSY_URL, token: TOKEN, extra: 1 }, /unknown field: extra/],
    ] as const) {
      const res = await http("PUT", `${path}/hook-2`, body, SENDER);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message).toMatch(says);
    }
    expect((await http("PUT", `${path}/bad%20id`, { url: BUSY_URL, token: TOKEN }, SENDER))).toMatchObject({ status: 400, body: { error: "bad_name" } });
    expect((await http("PUT", `/agents/${agent}/messages/9999/push/x`, { url: BUSY_URL, token: TOKEN }, SENDER))).toMatchObject({ status: 404, body: { error: "not_found" } });
    expect((await http("GET", path, undefined, SENDER)).body).toEqual({ task: id, targets: [put.body] });
    expect((await http("DELETE", `${path}/hook-1`, undefined, SENDER)).status).toBe(204);
    expect((await http("DELETE", `${path}/hook-1`, undefined, SENDER)).status).toBe(404);
    expect((await http("GET", path, undefined, SENDER)).body).toEqual({ task: id, targets: [] });
  });

  it(`a task takes ${PUSH_LIMITS.perTask} targets, then 409 too_many_push_targets; setting one again by its id replaces it; a task that ended is refused`, async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "work");
    const path = `/agents/${agent}/messages/${id}/push`;
    for (let i = 0; i < PUSH_LIMITS.perTask; i++) expect((await http("PUT", `${path}/t${i}`, { url: `${BUSY_URL}?n=${i}`, token: TOKEN })).status).toBe(200);
    expect(await http("PUT", `${path}/one-more`, { url: BUSY_URL, token: TOKEN })).toMatchObject({ status: 409, body: { error: "too_many_push_targets", message: expect.stringContaining(`at most ${PUSH_LIMITS.perTask}`) } });
    expect((await http("PUT", `${path}/t0`, { url: `${BUSY_URL}?n=again`, token: TOKEN })).body).toMatchObject({ id: "t0", url: `${BUSY_URL}?n=again` });
    expect(((await http("GET", path)).body.targets as unknown[]).length).toBe(PUSH_LIMITS.perTask);
    expect((await http("POST", `/agents/${agent}/messages/${id}/cancel`, { reason: "enough" })).status).toBe(200);
    expect(await http("PUT", `${path}/late`, { url: BUSY_URL, token: TOKEN })).toMatchObject({ status: 409, body: { error: "message_finished" } });
  });
});

describe("the account's count", () => {
  it("the account's directory hears each agent's count of targets: up as they are set, down when they are removed or end with their task", async () => {
    const agent = uniqueAgent();
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName("dev")));
    const elsewhere = `not-${agent}`;
    const before = await directory.pushTargetsBesides(elsewhere);
    const id = await post(agent, "work");
    for (const t of ["a", "b", "c"]) expect((await http("PUT", `/agents/${agent}/messages/${id}/push/${t}`, { url: BUSY_URL, token: TOKEN })).status).toBe(200);
    await waitFor(async () => (await directory.pushTargetsBesides(elsewhere)) === before + 3, "the directory counts 3 more");
    expect(await directory.pushTargetsBesides(agent)).toBe(before);
    expect((await http("DELETE", `/agents/${agent}/messages/${id}/push/a`)).status).toBe(204);
    await waitFor(async () => (await directory.pushTargetsBesides(elsewhere)) === before + 2, "the directory counts 2 more");
    expect((await http("POST", `/agents/${agent}/messages/${id}/cancel`, { reason: "done" })).status).toBe(200);
    await waitFor(async () => (await directory.pushTargetsBesides(elsewhere)) === before, "the ended task's targets leave the count");
  });
});

describe("the account's reservations", () => {
  it("a PUT that replaces a target gives its reserved place back: the account counts the one target and holds nothing more for it", async () => {
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName("limits")));
    const agent = uniqueAgent();
    const probe = `probe-${crypto.randomUUID()}`;
    const before = await directory.pushTargetsBesides(probe);
    const posted = await http("POST", `/agents/${agent}/messages`, { text: "work" }, LIMITS_TOKEN);
    expect(posted.status).toBe(201);
    const path = `/agents/${agent}/messages/${posted.body.id as number}/push/hook`;
    expect((await http("PUT", path, { url: BUSY_URL, token: TOKEN }, LIMITS_TOKEN)).status).toBe(200);
    expect((await http("PUT", path, { url: "http://receiver.test/status/500", token: TOKEN }, LIMITS_TOKEN)).status).toBe(200);
    await waitFor(async () => (await directory.pushTargetsBesides(probe)) === before + 1, "the directory to count the one target");
    const check = await directory.reservePushTarget(probe);
    if (check.place !== null) await directory.releasePushTarget(probe, check.place);
    expect(check.elsewhere).toBe(before + 1);
  });
});

describe("what a task's status changes push", () => {
  it("working at its hand-out, input-required at its park, working at the answer, nothing at the next hand-out, completed at its ack; then its targets are gone", async () => {
    const agent = uniqueAgent();
    const { sock } = await claimant(agent, "m1");
    const other = await post(agent, "no targets");
    const first = (await sock.next("message", (f) => f.run && f.id === other)) as MessageFrame;
    // The agent runs one message at a time: the next waits queued while its target is set.
    const id = await post(agent, "deploy");
    expect((await http("PUT", `/agents/${agent}/messages/${id}/push/a`, { url: BUSY_URL, token: TOKEN })).status).toBe(200);
    expect((await http("PUT", `/agents/${agent}/messages/${id}/push/b`, { url: `${BUSY_URL}?b`, token: TOKEN })).status).toBe(200);
    expect(await queuedPushes(agent)).toEqual([]);
    await write(sock, { type: "ack", id: other, token: first.token });
    const run = (await sock.next("message", (f) => f.run && f.id === id)) as MessageFrame;
    expect((await queuedPushes(agent)).map((p) => `${p.id}:${p.state}`)).toEqual(["a:TASK_STATE_WORKING", "b:TASK_STATE_WORKING"]);
    expect(await write(sock, { type: "park", id, token: run.token, question: { text: "Ship?", choices: ["ship", "hold"] } })).toMatchObject({ op: "park" });
    const pushed = await queuedPushes(agent);
    expect(pushed.slice(2).map((p) => `${p.id}:${p.state}`)).toEqual(["a:TASK_STATE_INPUT_REQUIRED", "b:TASK_STATE_INPUT_REQUIRED"]);
    expect(pushed[2]!.body).toMatchObject({
      statusUpdate: { taskId: String(id), contextId: `task-${id}`, status: { message: { parts: [{ text: "Ship?\nanswer with one of: ship, hold, reject" }] } }, metadata: { baton: { message: id, status: "parked" } } },
    });
    expect((await http("POST", `/agents/${agent}/messages/${id}/answer`, { choice: "ship" }, PERSON)).status).toBe(200);
    const again = (await sock.next("message", (f) => f.run && f.id === id)) as MessageFrame;
    expect(await write(sock, { type: "ack", id, token: again.token })).toMatchObject({ op: "ack" });
    expect((await queuedPushes(agent)).slice(4).map((p) => `${p.id}:${p.state}`)).toEqual([
      "a:TASK_STATE_WORKING", "b:TASK_STATE_WORKING", "a:TASK_STATE_COMPLETED", "b:TASK_STATE_COMPLETED",
    ]);
    expect((await http("GET", `/agents/${agent}/messages/${id}/push`)).body).toEqual({ task: id, targets: [] });
    expect((await message(agent, id)).status).toBe("acknowledged");
  });

  it("a target set on a task already past submitted gets its current state at once; a failover's requeue and new attempt push nothing; DELETE drops the pushes still waiting", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "m1");
    const id = await post(agent, "work");
    await a.sock.next("message", (f) => f.run && f.id === id);
    expect((await http("PUT", `/agents/${agent}/messages/${id}/push/late`, { url: BUSY_URL, token: TOKEN })).status).toBe(200);
    expect((await queuedPushes(agent)).map((p) => p.state)).toEqual(["TASK_STATE_WORKING"]);
    const b = await claimant(agent, "m2");
    a.sock.close();
    expect(await b.sock.next("message", (f) => f.run && f.id === id, 15_000)).toMatchObject({ attempt: 2 });
    expect((await queuedPushes(agent)).map((p) => p.state)).toEqual(["TASK_STATE_WORKING"]);
    // A target removed takes the pushes still waiting for it along.
    expect((await http("DELETE", `/agents/${agent}/messages/${id}/push/late`)).status).toBe(204);
    expect(await queuedPushes(agent)).toEqual([]);
  });
});

describe("delivering pushes", () => {
  it("each push is signed with its target's token (Standard Webhooks) and carries X-A2A-Notification-Token and the Authorization asked for; a private URL is a failed attempt sent nowhere; the webhook's figures do not count them", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), async (_instance, state) => {
      const outbox = new WebhookOutbox(state.storage.sql);
      const targets = new A2APushTargets(state.storage.sql, outbox);
      const task = { id: 3, status: "running", attempts: 1, group: null, text: "x", question: null, waiting_on: null, error: null, cancelled: null, answers: [] } as unknown as MessageView;
      expect(targets.set(task, "pub", { url: "https://hooks.example/a2a", token: TOKEN, auth_scheme: "Bearer", auth_credentials: "rcv" }, 0, 1000)).toMatchObject({ ok: true });
      expect(targets.set(task, "loop", { url: "http://127.0.0.1:9/a2a", token: TOKEN }, 0, 1000)).toMatchObject({ ok: true });
      const seen: { url: string; headers: Record<string, string>; body: string }[] = [];
      const send = async (url: string, init: RequestInit) => {
        seen.push({ url, headers: init.headers as Record<string, string>, body: String(init.body) });
        return new Response(null, { status: 204 });
      };
      await deliverPushes(outbox, outbox.claimDue(1000), send, () => 1000, false);
      expect(seen.map((s) => s.url)).toEqual(["https://hooks.example/a2a"]);
      const [got] = seen;
      expect(got!.headers).toMatchObject({ "x-a2a-notification-token": TOKEN, authorization: "Bearer rcv", "baton-event-type": "a2a.task_status", "content-type": "application/json" });
      expect(got!.headers["webhook-signature"]).toBe(`v1,${await hmacBase64(TOKEN, `${got!.headers["webhook-id"]}.${got!.headers["webhook-timestamp"]}.${got!.body}`)}`);
      expect(JSON.parse(got!.body)).toMatchObject({ statusUpdate: { taskId: "3", status: { state: "TASK_STATE_WORKING" } } });
      // Delivered and gone; the loopback one waits for its retry, refused each time.
      expect(outbox.pending()).toBe(1);
      expect(outbox.stats()).toMatchObject({ delivered: 0, failedAttempts: 0, lastStatus: null });
    });
  });
});

describe("A2A's push-notification methods", () => {
  it("the card says pushNotifications; Create, Get, List and Delete go through the push routes; SendMessage's config sets a target before it answers; a config without a token or at a private address is -32602 and posts nothing", async () => {
    const agent = uniqueAgent();
    expect((await http("PUT", `/agents/${agent}/policy`, { a2a: true })).status).toBe(200);
    const card = await SELF.fetch(`${BASE}/agents/${agent}/a2a/.well-known/agent-card.json`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
    expect(((await card.json()) as { capabilities: unknown }).capabilities).toEqual({ streaming: true, pushNotifications: true });
    const config = { url: BUSY_URL, token: TOKEN, authentication: { scheme: "Bearer", credentials: "rcv" } };
    const sent = await rpc(agent, "SendMessage", {
      message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "work" }] }, configuration: { returnImmediately: true, taskPushNotificationConfig: config },
    }, SENDER);
    const taskId = (sent.result!.task as { id: string }).id;
    const listed = await rpc(agent, "ListTaskPushNotificationConfigs", { taskId }, SENDER);
    expect(listed.result).toEqual({ configs: [{ id: taskId, taskId, url: BUSY_URL, authentication: { scheme: "Bearer" } }], nextPageToken: "" });
    expect((await rpc(agent, "CreateTaskPushNotificationConfig", { taskId, id: "second", url: `${BUSY_URL}?2`, token: TOKEN }, SENDER)).result).toEqual({ id: "second", taskId, url: `${BUSY_URL}?2` });
    expect((await rpc(agent, "GetTaskPushNotificationConfig", { taskId, id: "second" }, SENDER)).result).toEqual({ id: "second", taskId, url: `${BUSY_URL}?2` });
    expect((await rpc(agent, "GetTaskPushNotificationConfig", { taskId, id: "second" }, READER)).error).toMatchObject({ code: -32600 });
    expect((await rpc(agent, "DeleteTaskPushNotificationConfig", { taskId, id: "second" }, SENDER)).result).toEqual({});
    expect((await rpc(agent, "GetTaskPushNotificationConfig", { taskId, id: "second" }, SENDER)).error).toMatchObject({ code: -32001 });
    expect((await rpc(agent, "CreateTaskPushNotificationConfig", { taskId: "9999", url: BUSY_URL, token: TOKEN }, SENDER)).error).toMatchObject({ code: -32001 });

    const before = (await http("GET", `/agents/${agent}/messages`)).body.messages as unknown[];
    for (const [bad, says] of [[{ url: BUSY_URL }, /token must be/], [{ url: "http://10.0.0.7/hook", token: TOKEN }, /private address/]] as const) {
      const refused = await rpc(agent, "SendMessage", {
        message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "never posted" }] }, configuration: { returnImmediately: true, taskPushNotificationConfig: bad },
      }, SENDER);
      expect(refused.error).toMatchObject({ code: -32602, message: expect.stringMatching(says) });
    }
    expect((await http("GET", `/agents/${agent}/messages`)).body.messages).toEqual(before);
  });
});
