// Large values in a real agent object with R2 (emulated by workerd): a step result of 10 MiB is
// uploaded under the run's token and key, committed by a step write under that token, handed to
// the next attempt as a blob reference and read back byte for byte; an upload from the wrong run
// or over budget leaves nothing in R2; a blob uploaded under an earlier
// token cannot be committed; a pruned message's blobs are deleted from R2.
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { agentObjectName } from "../../worker/objects/names.ts";
import { BASE, call, claimant, DEV_TOKEN, message, post, sleep, stubFor, waitFor, write, type TestSocket } from "./helpers.ts";
import { frozenAgent } from "./clock.ts";
import type { AgentCoordinator } from "../../worker/objects/agent-object.ts";

const run = (sock: TestSocket, id: number): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id);

function upload(agent: string, m: MessageFrame, body: Uint8Array, headers: Record<string, string> = {}) {
  return SELF.fetch(`${BASE}/agents/${agent}/messages/${m.id}/blobs`, {
    method: "PUT",
    headers: {
      authorization: `Bearer ${DEV_TOKEN}`, "x-baton-token": String(m.token), "x-baton-run-key": m.run_key!, "content-length": String(body.byteLength), ...headers,
    },
    body,
  });
}

/**
 * The bucket's keys, all pages; with an agent, only its object's (its R2 prefix): the other files
 * that ran in this workerd left theirs in the bucket too.
 */
async function r2Keys(agent?: string): Promise<string[]> {
  const prefix = agent === undefined ? undefined : `agents/${env.AGENTS.idFromName(agentObjectName("dev", agent)).toString()}/`;
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.BLOBS!.list({ prefix, cursor });
    keys.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor !== undefined);
  return keys;
}

function bigJson(bytes: number): Uint8Array {
  return new TextEncoder().encode(JSON.stringify("z".repeat(bytes - 2)));
}

describe("large values in R2", () => {
  it("a 10 MiB step result is uploaded, committed under the run's token, handed to the next attempt as a blob and read back whole", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const body = bigJson(10 * 1024 * 1024);
    const res = await upload(agent, m, body);
    expect(res.status).toBe(201);
    const staged = (await res.json()) as { blob: string; bytes: number };
    expect(staged.bytes).toBe(body.byteLength);
    expect(await write(a.sock, { type: "step", id, token: m.token, name: "draft", kind: "step", phase: "done", blob: staged.blob }))
      .toMatchObject({ op: "step", status: "done", blob: { id: staged.blob, bytes: body.byteLength } });
    expect((await message(agent, id)).steps).toEqual([expect.objectContaining({ name: "draft", bytes: body.byteLength })]);
    a.sock.close();
    const b = await claimant(agent, "b");
    const again = await run(b.sock, id);
    expect(again.steps).toEqual([expect.objectContaining({ name: "draft", status: "done", blob: { id: staged.blob, bytes: body.byteLength } })]);
    const read = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/blobs/${staged.blob}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(read.status).toBe(200);
    const back = new Uint8Array(await read.arrayBuffer());
    expect(back.byteLength).toBe(body.byteLength);
    expect(back.every((v, i) => v === body[i])).toBe(true);
    const view = await call("GET", `/agents/${agent}/messages/${id}/steps/draft`);
    expect(view.body).toMatchObject({ value: null, blob: { id: staged.blob, bytes: body.byteLength } });
  });

  it("an upload with another run's key, a stale token, or a declared length over the per-blob budget stores nothing in R2", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const before = await r2Keys();
    const wrongKey = await upload(agent, m, bigJson(1024), { "x-baton-run-key": "0".repeat(32) });
    expect(wrongKey.status).toBe(403);
    const stale = await upload(agent, { ...m, token: m.token! + 1 }, bigJson(1024));
    expect(stale.status).toBe(409);
    const tooBig = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/blobs`, {
      method: "PUT",
      headers: { authorization: `Bearer ${DEV_TOKEN}`, "x-baton-token": String(m.token), "x-baton-run-key": m.run_key!, "content-length": String(16 * 1024 * 1024 + 1) },
      body: new Uint8Array(16),
    });
    expect(tooBig.status).toBe(413);
    // No key added (another file's object may still be deleting its garbage meanwhile).
    expect((await r2Keys()).filter((k) => !before.includes(k))).toEqual([]);
    expect(await write(a.sock, { type: "step", id, token: m.token, name: "x", kind: "step", phase: "done", blob: `b-${"0".repeat(32)}` }))
      .toMatchObject({ type: "error", code: "bad_request" });
  });

  it("a blob uploaded under an earlier attempt's token cannot be committed by the next attempt", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const first = await run(a.sock, id);
    const staged = (await (await upload(agent, first, bigJson(64 * 1024))).json()) as { blob: string };
    a.sock.close();
    const b = await claimant(agent, "b");
    const second = await run(b.sock, id);
    expect(await write(b.sock, { type: "step", id, token: second.token, name: "draft", kind: "step", phase: "done", blob: staged.blob }))
      .toMatchObject({ type: "error", code: "bad_request", message: expect.stringMatching(/another token/) });
    expect((await message(agent, id)).steps).toEqual([]);
  });

  it("the blobs of a message pruned from history are deleted from R2", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const staged = (await (await upload(agent, m, bigJson(64 * 1024))).json()) as { blob: string };
    await write(a.sock, { type: "step", id, token: m.token, name: "draft", kind: "step", phase: "done", blob: staged.blob });
    expect(await write(a.sock, { type: "reply", id, token: m.token, key: `${id}:reply`, text: "done" })).toMatchObject({ op: "reply" });
    const mine = async () => (await r2Keys(agent)).filter((k) => k.endsWith(staged.blob));
    expect(await mine()).toHaveLength(1);
    // History keeps BATON_HISTORY_MESSAGES (20 in these tests): the 21st message after it prunes it.
    a.sock.close();
    for (let i = 0; i < 21; i++) await post(agent, `later ${i}`);
    await waitFor(async () => (await mine()).length === 0, "the pruned message's blob to leave R2");
  });

  it("a 10 MiB message checkpoint is a committed blob handed to the next attempt; the checkpoint it replaces is deleted from R2", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const body = bigJson(10 * 1024 * 1024);
    const first = (await (await upload(agent, m, body)).json()) as { blob: string };
    expect(await write(a.sock, { type: "checkpoint", id, token: m.token, blob: first.blob })).toMatchObject({ op: "checkpoint", id });
    expect(await message(agent, id)).toMatchObject({ checkpoint: null, checkpoint_blob: { id: first.blob, bytes: body.byteLength } });
    const second = (await (await upload(agent, m, bigJson(100 * 1024))).json()) as { blob: string };
    expect(await write(a.sock, { type: "park", id, token: m.token, blob: second.blob })).toMatchObject({ op: "park" });
    // Deleted with the write that replaced it, not at a later alarm.
    await waitFor(async () => !(await r2Keys(agent)).some((k) => k.endsWith(first.blob)), "the replaced checkpoint to leave R2", 1000);
    expect((await call("POST", `/agents/${agent}/messages/${id}/resume`, { input: "go on" })).status).toBe(200);
    const again = await run(a.sock, id);
    expect(again).toMatchObject({ attempt: 2, checkpoint_blob: { id: second.blob, bytes: 100 * 1024 } });
    expect(again.checkpoint).toBeUndefined();
    const read = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/blobs/${second.blob}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect((await read.arrayBuffer()).byteLength).toBe(100 * 1024);
  });

  it("a 10 MiB reply is a blob: the message view names it and it reads back whole; a blob and text together are refused", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "write a book");
    const m = await run(a.sock, id);
    const body = new TextEncoder().encode("chapter\n".repeat(10 * 1024 * 1024 / 8));
    const staged = (await (await upload(agent, m, body)).json()) as { blob: string };
    expect(await write(a.sock, { type: "reply", id, token: m.token, key: `${id}:reply`, text: "x", blob: staged.blob })).toMatchObject({ type: "error", code: "bad_frame" });
    expect(await write(a.sock, { type: "reply", id, token: m.token, key: `${id}:reply`, text: "", blob: staged.blob })).toMatchObject({ op: "reply", duplicate: false });
    expect(await message(agent, id)).toMatchObject({ status: "acknowledged", reply: null, reply_blob: { id: staged.blob, bytes: body.byteLength } });
    const read = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/blobs/${staged.blob}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    const back = new Uint8Array(await read.arrayBuffer());
    expect(back.byteLength).toBe(body.byteLength);
    expect(back.every((v, i) => v === body[i])).toBe(true);
  });

  it("an upload that R2 stored after its message was pruned is deleted from R2, not kept", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const stub = stubFor(agent);
    const room = await runInDurableObject(stub, (o: AgentCoordinator) => o.reserveBlob(id, m.token!, m.run_key!, 5));
    if (!room.ok) throw new Error(room.message);
    // The message goes while the bytes stream (pruned from history), then R2 finishes storing them.
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec(`DELETE FROM message_blobs WHERE message_id = ?`, id);
    });
    await env.BLOBS!.put(room.r2Key, "hello");
    const staged = await runInDurableObject(stub, (o: AgentCoordinator) => o.stageBlob(id, m.token!, m.run_key!, room.blob, true));
    expect(staged.ok).toBe(false);
    await waitFor(async () => !(await r2Keys(agent)).includes(room.r2Key), "the late upload to leave R2");
  });

  it("uploads of an earlier attempt that nothing committed are deleted when the next attempt reserves room", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const first = await run(a.sock, id);
    const orphan = (await (await upload(agent, first, bigJson(64 * 1024))).json()) as { blob: string };
    a.sock.close();
    const b = await claimant(agent, "b");
    const second = await run(b.sock, id);
    expect((await upload(agent, second, bigJson(1024))).status).toBe(201);
    await waitFor(async () => !(await r2Keys(agent)).some((k) => k.endsWith(orphan.blob)), "the orphaned upload to leave R2");
  });

  it("a blob is committed once: a step's blob cannot also become the checkpoint or the reply, so replacing a checkpoint never deletes a step's result", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const staged = (await (await upload(agent, m, bigJson(64 * 1024))).json()) as { blob: string };
    const stepWrite = { type: "step", id, token: m.token, name: "draft", kind: "step", phase: "done", blob: staged.blob };
    expect(await write(a.sock, stepWrite)).toMatchObject({ op: "step", status: "done" });
    expect(await write(a.sock, stepWrite)).toMatchObject({ op: "step", duplicate: true });
    expect(await write(a.sock, { type: "checkpoint", id, token: m.token, blob: staged.blob })).toMatchObject({ type: "error", code: "bad_request", message: expect.stringMatching(/already committed/) });
    expect(await write(a.sock, { type: "reply", id, token: m.token, key: `${id}:reply`, text: "", blob: staged.blob })).toMatchObject({ type: "error", code: "bad_request" });
    expect(await write(a.sock, { type: "checkpoint", id, token: m.token, value: { small: true } })).toMatchObject({ op: "checkpoint" });
    await sleep(200);
    const read = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/blobs/${staged.blob}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(read.status).toBe(200);
    expect((await read.arrayBuffer()).byteLength).toBe(64 * 1024);
  });
});

describe("uploads nobody committed end with their message", () => {
  const keyOf = async (agent: string, blob: string) => (await r2Keys(agent)).filter((k) => k.endsWith(`/${blob}`));
  const readable = async (agent: string, id: number, blob: string) =>
    (await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/blobs/${blob}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status;

  it("a message acknowledged with uploads it never committed: those are deleted from R2 at once; its committed step and reply blobs stay", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const staged = async () => ((await (await upload(agent, m, bigJson(100 * 1024))).json()) as { blob: string }).blob;
    const [step, reply, ...orphans] = [await staged(), await staged(), await staged(), await staged(), await staged()];
    expect(await write(a.sock, { type: "step", id, token: m.token, name: "draft", kind: "step", phase: "done", blob: step })).toMatchObject({ status: "done" });
    for (const o of orphans) expect(await readable(agent, id, o!)).toBe(200);
    expect(await write(a.sock, { type: "reply", id, token: m.token, key: `${id}:reply`, text: "", blob: reply })).toMatchObject({ op: "reply" });
    for (const o of orphans) await expect.poll(() => keyOf(agent, o!), { timeout: 3000 }).toEqual([]);
    for (const o of orphans) expect(await readable(agent, id, o!)).toBe(404);
    expect(await keyOf(agent, step!)).toHaveLength(1);
    expect(await keyOf(agent, reply!)).toHaveLength(1);
    expect(await readable(agent, id, reply!)).toBe(200);
  });

  it("a message that fails for good: the uploads its last attempt never committed are deleted from R2 at once", async () => {
    const agent = await frozenAgent();
    expect((await call("PUT", `/agents/${agent}/policy`, { max_attempts: 1 })).status).toBe(200);
    const a = await claimant(agent, "a");
    const id = await post(agent, "work");
    const m = await run(a.sock, id);
    const orphan = ((await (await upload(agent, m, bigJson(100 * 1024))).json()) as { blob: string }).blob;
    expect(await keyOf(agent, orphan)).toHaveLength(1);
    expect(await write(a.sock, { type: "fail", id, token: m.token, reason: "gave up" })).toMatchObject({ status: "failed" });
    await expect.poll(() => keyOf(agent, orphan), { timeout: 3000 }).toEqual([]);
  });
});
