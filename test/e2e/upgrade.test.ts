// An upgrade, for real: the previous release (a commit of this repository, run from `git archive`
// under `wrangler dev --persist-to`) leaves queued, running and parked messages, a question, a step
// journal with a blob, an effect whose outcome is unknown, webhook configurations and a session
// lease; it stops, and this checkout starts on the same state, as a `wrangler deploy` restarts
// every object on the rows the last version left. Nothing is lost, and every item still works:
// the queued and running messages run (the running one replays its journal), the question and the
// unknown effect take their answers, the webhooks sign and deliver, the lease renews.
import { spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyBatonWebhook } from "../../examples/verify-webhook.mjs";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { rawRunner, type RawServe } from "./raw-serve.ts";
import { startReceiver, type Receiver } from "./receiver.ts";
import { authHeaders, getJson, uniqueAgent } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";

/** The release before this one: the last commit CI landed before stored state had schema versions. */
const PREVIOUS_RELEASE = "34b1f2632c44442abc15b1f780323dadeabede27";
const VARS = { BATON_HEARTBEAT_TTL_SECONDS: "2", BATON_PRESENCE_SCAN_SECONDS: "1", BATON_RESTART_GRACE_SECONDS: "1" };
const SECRET = `whsec_${Buffer.from("upgrade-webhook-secret-0123456789").toString("base64")}`;
const BLOB = new TextEncoder().encode(JSON.stringify("b".repeat(200 * 1024)));

/** The previous release's files in a temporary directory, using this checkout's node_modules. */
function checkOut(commit: string): string {
  if (spawnSync("git", ["cat-file", "-e", `${commit}^{commit}`], { cwd: ROOT }).status !== 0) {
    throw new Error(`the upgrade test needs commit ${commit} (the previous release) in this clone's history: fetch it (git fetch --unshallow origin)`);
  }
  const dir = mkdtempSync(join(tmpdir(), "baton-previous-"));
  const unpacked = spawnSync("sh", ["-c", `git archive --format=tar ${commit} | tar -x -C "${dir}"`], { cwd: ROOT, encoding: "utf8" });
  if (unpacked.status !== 0) throw new Error(`git archive ${commit} failed: ${unpacked.stderr}`);
  symlinkSync(realpathSync(join(ROOT, "node_modules")), join(dir, "node_modules"));
  return dir;
}

async function call(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}${path}`, { method, headers: authHeaders(), body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A webhook receiver on 127.0.0.1 that keeps every delivery. */
const receiver = (): Promise<Receiver> => startReceiver("/hooks");

const agent = uniqueAgent("upgrade");
const session = `upgrade-${crypto.randomUUID()}`;
const leaseRun = crypto.randomUUID();
let previous: string;
let dev: DevServer;
let hook: Receiver;
const open: RawServe[] = [];
/** What the previous release stored, as it showed it. */
const before = {
  ids: { parked: 0, effect: 0, running: 0, queued: 0 },
  views: {} as Record<string, Record<string, unknown>>,
  rotatedSecret: "",
  blob: "",
  leaseFence: 0,
  serveFence: 0,
};

async function runner(url: string, machine: string) {
  const r = await rawRunner(url, agent, machine, `run-${machine}`);
  open.push(r.sock);
  return r;
}

async function post(url: string, text: string, group?: string): Promise<number> {
  const res = await call(url, "POST", `/agents/${agent}/messages`, { text, ...(group ? { group } : {}) });
  expect(res.status).toBe(201);
  return res.body.id as number;
}

async function write(sock: RawServe, frame: Record<string, unknown>) {
  const req = crypto.randomUUID();
  sock.send({ ...frame, req });
  // A refusal shows in the timeout's message, with every frame seen.
  return sock.next("result", (f) => f.req === req);
}

const run = (sock: RawServe, id: number, timeoutMs = 10_000): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id, timeoutMs);

/** Everything the previous release is asked to keep. */
async function writeWithPreviousRelease(url: string): Promise<void> {
  hook = await receiver();
  expect((await call(url, "PUT", `/agents/${agent}/webhook`, { url: hook.url, secret: SECRET })).status).toBe(200);
  const rotated = await call(url, "PUT", `/agents/${agent}/webhook`, { url: hook.url, rotate_secret: true, keep_old_secret_seconds: 3600 });
  before.rotatedSecret = rotated.body.secret as string;
  expect((await call(url, "PUT", "/webhook", { url: hook.url, secret: SECRET })).status).toBe(200);
  const lease = await call(url, "POST", `/leases/${session}/acquire`, { run_id: leaseRun, ttl_seconds: 300 });
  expect(lease.status).toBe(201);
  before.leaseFence = lease.body.fence as number;

  const a = await runner(url, "m1");
  before.serveFence = a.lease.fence!;
  const ids = before.ids;
  ids.parked = await post(url, "ship it?");
  const p = await run(a.sock, ids.parked);
  await write(a.sock, { type: "park", id: p.id, token: p.token, question: { text: "Ship v2?", choices: ["ship", "hold"], step: "ask:1" }, deadline_seconds: 3600 });

  ids.effect = await post(url, "pay the invoice");
  const e = await run(a.sock, ids.effect);
  const upload = await fetch(`${url}/agents/${agent}/messages/${e.id}/blobs`, {
    method: "PUT",
    headers: { authorization: `Bearer ${DEV_TOKEN}`, "x-baton-token": String(e.token), "x-baton-run-key": e.run_key!, "content-length": String(BLOB.byteLength) },
    body: BLOB,
  });
  expect(upload.status).toBe(201);
  before.blob = ((await upload.json()) as { blob: string }).blob;
  await write(a.sock, { type: "step", id: e.id, token: e.token, name: "draft", kind: "step", phase: "done", blob: before.blob });
  await write(a.sock, { type: "step", id: e.id, token: e.token, name: "plan", kind: "step", phase: "done", value: { total: 42 } });
  await write(a.sock, { type: "step", id: e.id, token: e.token, name: "pay", kind: "effect", phase: "intent", on_unknown: "ask" });
  await write(a.sock, { type: "fail", id: e.id, token: e.token, reason: "crashed while paying" });

  ids.running = await post(url, "long job", "g");
  const r = await run(a.sock, ids.running);
  await write(a.sock, { type: "step", id: r.id, token: r.token, name: "half", kind: "step", phase: "done", value: { n: 1 } });
  ids.queued = await post(url, "after the long job", "g");

  for (const [name, id] of Object.entries(ids)) before.views[name] = await getJson(`${url}/agents/${agent}/messages/${id}`);
  expect(before.views).toMatchObject({
    parked: { status: "parked", question: { text: "Ship v2?" } }, effect: { status: "parked", waiting_on: "pay" },
    running: { status: "running" }, queued: { status: "queued" },
  });
}

beforeAll(async () => {
  previous = checkOut(PREVIOUS_RELEASE);
  const old = await startWranglerDev({ vars: VARS, root: previous });
  try {
    await writeWithPreviousRelease(old.url);
  } finally {
    for (const s of open.splice(0)) s.close();
    await old.stop();
  }
  dev = await startWranglerDev({ vars: VARS, persistDir: old.persistDir });
});

afterAll(async () => {
  for (const s of open) s.close();
  await dev?.stop();
  await hook?.close();
  if (previous) rmSync(previous, { recursive: true, force: true });
  if (dev) rmSync(dev.persistDir, { recursive: true, force: true });
});

describe("after an upgrade from the previous release", () => {
  it("every message is there as it was: texts, statuses, questions, steps with their blob, the unknown effect", async () => {
    for (const name of ["parked", "effect", "queued"] as const) {
      expect(await getJson(`${dev.url}/agents/${agent}/messages/${before.ids[name]}`)).toMatchObject(before.views[name]!);
    }
    const { text, steps, attempts } = before.views.running!;
    expect(await getJson(`${dev.url}/agents/${agent}/messages/${before.ids.running}`)).toMatchObject({ text, steps, attempts });
  });

  it("the running message runs again with its journal, then the queued one of its group runs", async () => {
    const a = await runner(dev.url, "m1");
    expect(a.lease).toMatchObject({ held: true, fence: before.serveFence + 1 });
    const again = await run(a.sock, before.ids.running, 15_000);
    expect(again).toMatchObject({ attempt: 2, steps: [expect.objectContaining({ name: "half", value: { n: 1 } })] });
    await write(a.sock, { type: "reply", id: again.id, token: again.token, key: "done", text: "finished" });
    const next = await run(a.sock, before.ids.queued);
    await write(a.sock, { type: "reply", id: next.id, token: next.token, key: "done", text: "next" });
    for (const id of [before.ids.running, before.ids.queued]) {
      expect(await getJson(`${dev.url}/agents/${agent}/messages/${id}`)).toMatchObject({ status: "acknowledged" });
    }
  });

  it("the question takes its answer, which reaches the next attempt", async () => {
    const a = open.at(-1)!;
    expect((await call(dev.url, "POST", `/agents/${agent}/messages/${before.ids.parked}/answer`, { choice: "ship" })).status).toBe(200);
    const m = await run(a, before.ids.parked);
    expect(m).toMatchObject({ resume_choice: "ship", steps: [expect.objectContaining({ name: "ask:1", kind: "answer", value: expect.objectContaining({ choice: "ship" }) })] });
    await write(a, { type: "reply", id: m.id, token: m.token, key: "done", text: "shipped" });
  });

  it("the unknown effect is settled by a person; the next attempt replays the journal, and its blob reads back whole", async () => {
    const a = open.at(-1)!;
    expect((await call(dev.url, "POST", `/agents/${agent}/messages/${before.ids.effect}/resume`, { outcome: "done", input: "paid" })).status).toBe(200);
    const m = await run(a, before.ids.effect);
    expect(m.steps).toEqual([
      expect.objectContaining({ name: "draft", status: "done", blob: { id: before.blob, bytes: BLOB.byteLength } }),
      expect.objectContaining({ name: "plan", value: { total: 42 } }),
      expect.objectContaining({ name: "pay", kind: "effect", status: "done", value: "paid" }),
    ]);
    const read = await fetch(`${dev.url}/agents/${agent}/messages/${m.id}/blobs/${before.blob}`, { headers: authHeaders() });
    expect(Buffer.from(await read.arrayBuffer()).equals(Buffer.from(BLOB))).toBe(true);
    await write(a, { type: "reply", id: m.id, token: m.token, key: "done", text: "done" });
  });

  it("the webhooks keep their url and both secrets: a test event verifies with the rotated secret and the one it replaced", async () => {
    expect((await call(dev.url, "GET", `/agents/${agent}/webhook`)).body).toMatchObject({ url: hook.url, old_secret_expires_at: expect.any(Number) });
    expect((await call(dev.url, "GET", "/webhook")).body).toMatchObject({ url: hook.url });
    const sent = hook.got.length;
    expect((await call(dev.url, "POST", `/agents/${agent}/webhook/test`)).body).toMatchObject({ delivered: true });
    const delivery = hook.got[sent]!;
    for (const secret of [before.rotatedSecret, SECRET]) expect(verifyBatonWebhook(secret, delivery.headers as Record<string, string>, delivery.body)).toMatchObject({ type: "webhook.test" });
  });

  it("the session lease renews under its fence, and the directory still lists the agent", async () => {
    const renewed = await call(dev.url, "POST", `/leases/${session}/renew`, { run_id: leaseRun, ttl_seconds: 300 });
    expect(renewed).toMatchObject({ status: 200, body: { fence: before.leaseFence } });
    const listed = await getJson<{ agents: { agent: string }[] }>(`${dev.url}/agents`);
    expect(listed.agents.map((e) => e.agent)).toContain(agent);
  });
});
