// Accounts are walls: a token of account "other" cannot see or claim anything of account "dev",
// even under the same agent or session name. Both sides hold their own lease at the same time.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, connect, DEV_TOKEN, OTHER_TOKEN, presence, settle, uniqueAgent } from "./helpers.ts";

async function claimAs(agent: string, token: string, machine: string) {
  const sock = await connect(agent, { machine, token });
  sock.send({ type: "serve_lease", op: "claim" });
  const lease = await sock.next("serve_lease");
  return { sock, lease };
}

function call(token: string, method: string, path: string, body?: unknown): Promise<Response> {
  return SELF.fetch(`${BASE}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function messagesOf(agent: string, token: string): Promise<{ text: string }[]> {
  const res = await call(token, "GET", `/agents/${agent}/messages`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { messages: { text: string }[] }).messages;
}

describe("accounts", () => {
  it("the same agent name in two accounts: both hold, each presence shows only its own", async () => {
    const agent = uniqueAgent();
    const dev = await claimAs(agent, DEV_TOKEN, "dev-box");
    const other = await claimAs(agent, OTHER_TOKEN, "other-box");
    expect(dev.lease).toMatchObject({ held: true, fence: 1 });
    expect(other.lease).toMatchObject({ held: true, fence: 1 });
    const seenByDev = await presence(agent, DEV_TOKEN);
    const seenByOther = await presence(agent, OTHER_TOKEN);
    expect(seenByDev).toMatchObject({ connection_count: 1, serve_candidates: 1, holder: { machine: "dev-box" } });
    expect(seenByOther).toMatchObject({ connection_count: 1, serve_candidates: 1, holder: { machine: "other-box" } });
    expect(seenByDev.connections.map((c) => c.machine)).toEqual(["dev-box"]);
    expect(seenByOther.connections.map((c) => c.machine)).toEqual(["other-box"]);
  });

  it("claims are independent: one account's release and close move nothing in the other", async () => {
    const agent = uniqueAgent();
    const dev = await claimAs(agent, DEV_TOKEN, "dev-a");
    const devStandby = await claimAs(agent, DEV_TOKEN, "dev-b");
    const other = await claimAs(agent, OTHER_TOKEN, "other-a");
    dev.sock.send({ type: "serve_lease", op: "release" });
    await devStandby.sock.next("serve_lease", (f) => f.held);
    devStandby.sock.close();
    await dev.sock.next("serve_lease", (f) => f.held === false);
    await settle(other.sock);
    expect(other.sock.framesOf("serve_lease")).toHaveLength(0);
    expect(await presence(agent, OTHER_TOKEN)).toMatchObject({ fence: 1, holder: { machine: "other-a" }, transitions: [{ reason: "claimed" }] });
    expect((await presence(agent, DEV_TOKEN)).fence).toBe(2);
  });

  it("messages posted in one account are neither listed nor pushed in the other", async () => {
    const agent = uniqueAgent();
    const other = await claimAs(agent, OTHER_TOKEN, "other-box");
    const posted = await call(DEV_TOKEN, "POST", `/agents/${agent}/messages`, { text: "for dev only" });
    expect(posted.status).toBe(201);
    const id = ((await posted.json()) as { id: number }).id;
    expect(await messagesOf(agent, DEV_TOKEN)).toMatchObject([{ text: "for dev only" }]);
    expect(await messagesOf(agent, OTHER_TOKEN)).toEqual([]);
    expect((await call(OTHER_TOKEN, "GET", `/agents/${agent}/messages/${id}`)).status).toBe(404);
    await settle(other.sock);
    expect(other.sock.framesOf("message")).toHaveLength(0);
  });

  it("session leases with the same key are independent per account", async () => {
    const session = `s-${crypto.randomUUID()}`;
    const devRun = crypto.randomUUID();
    const otherRun = crypto.randomUUID();
    const devGrant = await call(DEV_TOKEN, "POST", `/leases/${session}/acquire`, { run_id: devRun, ttl_seconds: 60 });
    expect(devGrant.status).toBe(201);
    // A key its shard never saw starts above the shard's fence floor, which earlier files' pruned
    // keys raise in a shared workerd: each account's fence is read from its own grant.
    const devFence = ((await devGrant.json()) as { fence: number }).fence;
    const otherGrant = await call(OTHER_TOKEN, "POST", `/leases/${session}/acquire`, { run_id: otherRun, ttl_seconds: 60 });
    expect(otherGrant.status).toBe(201);
    expect(await otherGrant.json()).toMatchObject({ run_id: otherRun, fence: expect.any(Number) });
    // The other account cannot release or renew dev's run, even knowing its run_id.
    expect(await (await call(OTHER_TOKEN, "POST", `/leases/${session}/release`, { run_id: devRun })).json()).toMatchObject({ released: false });
    expect((await call(OTHER_TOKEN, "POST", `/leases/${session}/renew`, { run_id: devRun })).status).toBe(409);
    const devState = await (await call(DEV_TOKEN, "GET", `/leases/${session}`)).json();
    expect(devState).toMatchObject({ held: true, fence: devFence });
    const check = await (await call(DEV_TOKEN, "POST", `/leases/${session}/check`, { run_id: devRun, fence: devFence })).json();
    expect(check).toMatchObject({ current: true });
  });

  it("the directory of one account does not list the other's agents", async () => {
    const agent = uniqueAgent();
    const res = await SELF.fetch(`${BASE}/observe`, { headers: { Upgrade: "websocket", Authorization: `Bearer ${DEV_TOKEN}` } });
    const observer = res.webSocket!;
    observer.accept();
    const reported = new Promise<void>((resolve) => {
      observer.addEventListener("message", (e) => {
        const frame = JSON.parse(e.data as string) as { type: string; presence?: { agent: string } };
        if (frame.type === "presence" && frame.presence?.agent === agent) resolve();
      });
    });
    const dev = await claimAs(agent, DEV_TOKEN, "dev-box");
    await reported;
    const listed = async (token: string) =>
      ((await (await call(token, "GET", "/agents")).json()) as { agents: { agent: string }[] }).agents.map((a) => a.agent);
    expect(await listed(DEV_TOKEN)).toContain(agent);
    expect(await listed(OTHER_TOKEN)).not.toContain(agent);
    dev.sock.close();
    observer.close(1000, "done");
  });
});
