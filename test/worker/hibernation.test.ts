// Hibernation for real: workerd evicts an object after about ten seconds without events while its
// hibernatable sockets stay open. Both socket objects must wake up as a new instance that knows
// every connection from its attachment. Runs with a 60 s TTL (see vitest.workers.config.ts), so
// heartbeats, answered by the runtime, are the only traffic while the objects sleep.
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { directoryObjectName } from "../../worker/objects/names.ts";
import type { ServerFrame } from "../../worker/wire/protocol.ts";
import { tokenProtocol } from "../../worker/auth.ts";
import { BASE, claimant, presence, QUIET_TOKEN, sleep, uniqueAgent } from "./helpers.ts";

/** workerd's idle eviction is ten seconds; the test checks below that eviction really happened. */
const IDLE_LONG_ENOUGH_TO_BE_EVICTED_MS = 12_000;

/** Instances seen so far: tests and objects share one isolate, so identity is visible without reading fields. */
const seen = new WeakSet<object>();
const remember = (stub: DurableObjectStub) => runInDurableObject(stub, (instance: object) => void seen.add(instance));
const isNewInstance = (stub: DurableObjectStub) => runInDurableObject(stub, (instance: object) => !seen.has(instance));

async function observeQuietAccount(): Promise<{ frames: ServerFrame[]; closed: () => boolean; close(): void }> {
  const res = await SELF.fetch(`${BASE}/observe`, {
    headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": `baton, ${tokenProtocol(QUIET_TOKEN)}` },
  });
  const ws = res.webSocket!;
  ws.accept();
  const frames: ServerFrame[] = [];
  let closed = false;
  ws.addEventListener("message", (e) => {
    frames.push(JSON.parse(e.data as string) as ServerFrame);
  });
  ws.addEventListener("close", () => {
    closed = true;
  });
  return { frames, closed: () => closed, close: () => ws.close(1000, "test done") };
}

describe("hibernation", () => {
  it("both objects are evicted with sockets open and wake as new instances that know every connection", async () => {
    const agent = uniqueAgent();
    const agentStub = env.AGENTS.get(env.AGENTS.idFromName(`quiet:${agent}`));
    const directoryStub = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName("quiet")));
    const observer = await observeQuietAccount();
    // The holder proves liveness with fenced pings that the object itself answers (they wake it), so
    // it stays quiet here; its 60 s TTL outlasts the sleep. The standby's pings are auto-answered.
    const a = await claimant(agent, "first", { token: QUIET_TOKEN, silent: true });
    const b = await claimant(agent, "second", { token: QUIET_TOKEN });
    expect(a.lease).toMatchObject({ held: true, fence: 1 });
    expect(b.lease).toMatchObject({ held: false, position: 1 });
    await remember(agentStub);
    await remember(directoryStub);

    await sleep(IDLE_LONG_ENOUGH_TO_BE_EVICTED_MS);

    // The release wakes the agent object from its hibernated socket: it must find b's claim in b's attachment.
    a.sock.send({ type: "serve_lease", op: "release" });
    expect(await b.sock.next("serve_lease", (f) => f.held)).toMatchObject({ held: true, fence: 2, claim_seq: b.lease.claim_seq });
    expect(await a.sock.next("result")).toMatchObject({ op: "release", released: true });
    // The directory wakes for the report and finds the observer, accepted by the old instance, in its socket list.
    const deadline = Date.now() + 5000;
    while (!observer.frames.some((f) => f.type === "presence" && f.presence.agent === agent && f.presence.fence === 2)) {
      if (Date.now() > deadline) throw new Error(`no presence with fence 2 reached the observer: ${JSON.stringify(observer.frames)}`);
      await sleep(20);
    }
    expect(await isNewInstance(agentStub)).toBe(true);
    expect(await isNewInstance(directoryStub)).toBe(true);
    expect([a.sock.closed, b.sock.closed, observer.closed()]).toEqual([null, null, false]);
    const p = await presence(agent, QUIET_TOKEN);
    expect(p.connections.map((c) => [c.machine, c.claim_seq, c.held])).toEqual([
      ["first", a.lease.claim_seq, false],
      ["second", b.lease.claim_seq, true],
    ]);
    a.sock.close();
    b.sock.close();
    observer.close();
  });
});
