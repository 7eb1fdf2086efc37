// The agent directory in the real runtime: agent objects report only real changes by RPC,
// observers get a snapshot and then live updates, agents leave with their last connection,
// accounts stay apart, and reading the directory never calls an agent object. Its agents are of
// account directory, whose directory no other file fills (they share one workerd).
import { env, runDurableObjectAlarm, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { DirectoryEntry, ObserverFrame, ServerFrame } from "../../worker/wire/protocol.ts";
import { BASE, claimant, connect, DIRECTORY_TOKEN, OTHER_TOKEN, presence, settle, uniqueAgent } from "./helpers.ts";

interface Observer {
  next<T extends ServerFrame["type"]>(type: T, match?: (f: Extract<ServerFrame, { type: T }>) => boolean): Promise<Extract<ServerFrame, { type: T }>>;
  send(frame: unknown): void;
  sendRaw(text: string): void;
  closed: Promise<number>;
  /** Frames about one agent, in arrival order: its presences and its agent_gone. */
  about(agent: string): ObserverFrame[];
  close(): void;
}

function agentOf(frame: ServerFrame): string | null {
  if (frame.type === "presence") return frame.presence.agent;
  if (frame.type === "agent_gone") return frame.agent;
  return null;
}

/** Opens an observer socket the way a browser does: the token rides in the subprotocol list. */
async function observe(token = DIRECTORY_TOKEN): Promise<Observer> {
  const carrier = `baton.token.${btoa(token).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
  const res = await SELF.fetch(`${BASE}/observe`, { headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": `baton, ${carrier}` } });
  const ws = res.webSocket;
  if (!ws) throw new Error(`observer upgrade failed: ${res.status} ${await res.text()}`);
  expect(res.headers.get("sec-websocket-protocol")).toBe("baton");
  ws.accept();
  const frames: ServerFrame[] = [];
  const waiters = new Set<() => void>();
  ws.addEventListener("message", (e) => {
    frames.push(JSON.parse(e.data as string) as ServerFrame);
    for (const w of [...waiters]) w();
  });
  let consumed = 0;
  const closed = new Promise<number>((resolve) => ws.addEventListener("close", (e) => resolve(e.code)));
  return {
    closed,
    next(type, match) {
      return new Promise((resolve, reject) => {
        const check = () => {
          for (; consumed < frames.length; consumed++) {
            const f = frames[consumed]!;
            if (f.type === type && (!match || match(f as never))) {
              consumed++;
              waiters.delete(check);
              clearTimeout(timer);
              resolve(f as never);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for a ${type} frame; saw ${JSON.stringify(frames)}`));
        }, 5000);
        waiters.add(check);
        check();
      });
    },
    about: (agent) => frames.filter((f): f is ObserverFrame => agentOf(f) === agent),
    send: (frame) => ws.send(JSON.stringify(frame)),
    sendRaw: (text) => ws.send(text),
    close: () => ws.close(1000, "test done"),
  };
}

function directoryStub(account = "directory") {
  return env.DIRECTORY.get(env.DIRECTORY.idFromName(`directory:${account}`));
}

async function listed(token = DIRECTORY_TOKEN): Promise<DirectoryEntry[]> {
  const res = await SELF.fetch(`${BASE}/agents`, { headers: { Authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { agents: DirectoryEntry[] }).agents;
}

const isPresenceOf = (agent: string, connections: number) => (f: { presence: DirectoryEntry }) =>
  f.presence.agent === agent && f.presence.connection_count === connections;
/** A presence where every one of `connections` connections has claimed. */
const isClaimedPresenceOf = (agent: string, connections: number) => (f: { presence: DirectoryEntry }) =>
  isPresenceOf(agent, connections)(f) && f.presence.serve_candidates === connections;

describe("agent directory", () => {
  it("an observer gets the directory on connect, then each change within the same second", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "alpha", { token: DIRECTORY_TOKEN });
    const claimed = Date.now();
    const first = await observe();
    const snapshot = await first.next("directory");
    let listed = snapshot.agents.find((e) => e.agent === agent);
    if (listed) expect(snapshot.server_time).toBeGreaterThanOrEqual(listed.reported_at);
    // Reports are built 10 ms after a change: the claim may not have reached the directory yet.
    if (listed?.holder?.machine !== "alpha") {
      listed = (await first.next("presence", (f) => f.presence.agent === agent && f.presence.holder?.machine === "alpha")).presence;
      expect(Date.now() - claimed).toBeLessThan(1000);
    }
    expect(listed.reported_at).toBeGreaterThan(0);

    const b = await claimant(agent, "beta", { token: DIRECTORY_TOKEN });
    const joined = await first.next("presence", (f) => isPresenceOf(agent, 2)(f) && f.presence.serve_standbys === 1);
    expect(joined.presence.connections.map((c) => c.machine)).toEqual(["alpha", "beta"]);
    a.sock.close();
    const started = Date.now();
    const handover = await first.next("presence", (f) => f.presence.agent === agent && f.presence.holder?.machine === "beta");
    expect(Date.now() - started).toBeLessThan(1000);
    expect(handover.presence.fence).toBe(2);
    expect(handover.presence.transitions[0]).toMatchObject({ reason: "closed", fence: 2 });
    b.sock.close();
    first.close();
  });

  it("a connection shows up before it claims, and a hello relabels it", async () => {
    const agent = uniqueAgent();
    const watcher = await observe();
    await watcher.next("directory");
    const idle = await connect(agent, { machine: "first-name", token: DIRECTORY_TOKEN });
    const seen = await watcher.next("presence", isPresenceOf(agent, 1));
    expect(seen.presence).toMatchObject({ serve_candidates: 0, holder: null });
    expect(seen.presence.connections[0]).toMatchObject({ machine: "first-name", claim_seq: null, held: false });
    idle.send({ type: "hello", machine: "second-name" });
    const relabelled = await watcher.next("presence", (f) => f.presence.agent === agent && f.presence.connections[0]?.machine === "second-name");
    expect(relabelled.presence.connection_count).toBe(1);
    idle.close();
    watcher.close();
  });

  it("agent objects report only when presence changes, not on every reconcile", async () => {
    const agent = uniqueAgent();
    const watcher = await observe();
    await watcher.next("directory");
    const a = await claimant(agent, "alpha", { token: DIRECTORY_TOKEN });
    await watcher.next("presence", isClaimedPresenceOf(agent, 1));
    // A repeated claim and heartbeats run through the object but change nothing anyone should see.
    a.sock.send({ type: "serve_lease", op: "claim" });
    await settle(a.sock);
    a.sock.send({ type: "serve_lease", op: "claim" });
    await settle(a.sock);
    const b = await claimant(agent, "beta", { token: DIRECTORY_TOKEN });
    await watcher.next("presence", isClaimedPresenceOf(agent, 2));
    // Each connection is reported when it opens and when it claims; nothing else in between. A
    // report still in flight is replaced by a newer one (the directory ends with the latest), so
    // under load a step may be skipped, never repeated.
    const steps = ["1,0", "1,1", "2,1", "2,2"];
    const reported = watcher.about(agent).map((f) => f.type === "presence" && `${f.presence.connection_count},${f.presence.serve_candidates}`);
    expect(reported.at(-1)).toBe("2,2");
    expect(reported.map((r) => steps.indexOf(String(r)))).toEqual([...new Set(reported.map((r) => steps.indexOf(String(r))))].sort());
    expect(reported.every((r) => steps.includes(String(r)))).toBe(true);
    a.sock.close();
    b.sock.close();
    watcher.close();
  });

  it("an agent leaves the directory when its last connection closes", async () => {
    const agent = uniqueAgent();
    const watcher = await observe();
    await watcher.next("directory");
    const a = await claimant(agent, "alpha", { token: DIRECTORY_TOKEN });
    const b = await claimant(agent, "beta", { token: DIRECTORY_TOKEN });
    await watcher.next("presence", isPresenceOf(agent, 2));
    expect((await listed()).find((e) => e.agent === agent)?.connection_count).toBe(2);
    a.sock.close();
    await watcher.next("presence", isPresenceOf(agent, 1));
    b.sock.close();
    const gone = await watcher.next("agent_gone", (f) => f.agent === agent);
    expect(gone.agent).toBe(agent);
    expect((await listed()).map((e) => e.agent)).not.toContain(agent);
    watcher.close();
  });

  it("an observer of account other never sees another account's agents", async () => {
    const devAgent = uniqueAgent();
    const otherAgent = uniqueAgent();
    const devWatcher = await observe(DIRECTORY_TOKEN);
    const otherWatcher = await observe(OTHER_TOKEN);
    await devWatcher.next("directory");
    const otherSnapshot = await otherWatcher.next("directory");
    expect(otherSnapshot.agents.map((e) => e.agent)).not.toContain(devAgent);
    const dev = await claimant(devAgent, "dev-box", { token: DIRECTORY_TOKEN });
    await devWatcher.next("presence", isPresenceOf(devAgent, 1));
    const other = await connectAs(otherAgent, OTHER_TOKEN);
    // Frames arrive in order, so the other account's own agent showing up proves nothing of dev's came before.
    await otherWatcher.next("presence", isPresenceOf(otherAgent, 1));
    expect(otherWatcher.about(devAgent)).toEqual([]);
    expect((await listed(OTHER_TOKEN)).map((e) => e.agent)).not.toContain(devAgent);
    expect((await listed(DIRECTORY_TOKEN)).map((e) => e.agent)).not.toContain(otherAgent);
    dev.sock.close();
    other.close();
    devWatcher.close();
    otherWatcher.close();
  });

  it("GET /agents wakes no agent object and shows no made-up heartbeat age, only the bound and how long the entry is vouched for", async () => {
    const agent = uniqueAgent();
    const watcher = await observe();
    await watcher.next("directory");
    // Silent, so no heartbeat of its own wakes the object between the two presence reads; its
    // clock stands still (connect stops it), so it does not go stale either.
    const a = await claimant(agent, "alpha", { token: DIRECTORY_TOKEN, silent: true });
    const reported = await watcher.next("presence", isClaimedPresenceOf(agent, 1));
    const wakesBefore = (await presence(agent, DIRECTORY_TOKEN)).wakes;
    const first = (await listed()).find((e) => e.agent === agent)!;
    const second = (await listed()).find((e) => e.agent === agent)!;
    // Only the presence read below wakes the agent object; both listings read the directory alone.
    const direct = await presence(agent, DIRECTORY_TOKEN);
    expect(direct.wakes).toBe(wakesBefore + 1);
    // The agent object measures the age itself; the directory cannot, so it gives none.
    expect(direct.connections[0]!.heartbeat_age_seconds).toBeTypeOf("number");
    for (const e of [reported.presence, first, second]) {
      expect(e.fence).toBe(reported.presence.fence);
      expect(e.connections[0]!.heartbeat_age_seconds).toBeNull();
      expect(e.confirmed).toBe(true);
      expect(e.confirmed_until).toBe(e.reported_at + 3 * e.heartbeat_ttl_seconds * 1000);
    }
    a.sock.close();
    watcher.close();
  });

  it("GET /agents?view=summary leaves out each agent's history; ?view=who lists only what baton who prints", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "alpha", { token: DIRECTORY_TOKEN });
    const posted = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { Authorization: `Bearer ${DIRECTORY_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "hello" }),
    });
    expect(posted.status).toBe(201);
    let full: DirectoryEntry | undefined;
    await expect.poll(async () => (full = (await listed()).find((e) => e.agent === agent))?.recent_messages.length).toBe(1);
    const view = async (name: string) => {
      const res = await SELF.fetch(`${BASE}/agents?view=${name}`, { headers: { Authorization: `Bearer ${DIRECTORY_TOKEN}` } });
      expect(res.headers.get("content-type")).toContain("application/json");
      return ((await res.json()) as { agents: Record<string, unknown>[] }).agents.find((e) => e.agent === agent)!;
    };
    const { transitions: _t, recent_messages: _r, ...rest } = full!;
    expect(await view("summary")).toEqual(rest);
    const who = await view("who");
    for (const left of ["transitions", "recent_messages", "webhook", "wakes", "reported_at", "connection_count"]) expect(who).not.toHaveProperty(left);
    const { fence, holder, connections, confirmed, confirmed_until, work } = full!;
    expect(who).toEqual({
      agent, fence, holder, connections, confirmed, confirmed_until, serve_standbys: 0, heartbeat_ttl_seconds: full!.heartbeat_ttl_seconds,
      work: { mode: work.mode, counts: work.counts, running: work.running.map(({ id }) => ({ id })), parked: [], failed: [] },
      controls: { paused: false, paused_since: null, drained: [], reserved_until: null },
    });
    expect(JSON.stringify(who).length).toBeLessThan(JSON.stringify(full).length / 2);
    a.sock.close();
  });

  it("while observed, the directory sets no alarm: nothing is pulled, only reports arrive", async () => {
    const watcher = await observe();
    await watcher.next("directory");
    const a = await claimant(uniqueAgent(), "alpha", { token: DIRECTORY_TOKEN });
    await watcher.next("presence", (f) => f.presence.serve_candidates === 1);
    expect(await runDurableObjectAlarm(directoryStub())).toBe(false);
    a.sock.close();
    watcher.close();
  });

  it("observers only listen, and the directory routes need a token", async () => {
    const watcher = await observe();
    await watcher.next("directory");
    watcher.sendRaw('{"type": "ping"}'); // the spacing defeats the auto-response: the object answers
    await watcher.next("pong");
    watcher.send({ type: "serve_lease", op: "claim" });
    expect((await watcher.next("error")).code).toBe("bad_frame");
    expect(await watcher.closed).toBe(4009);
    expect((await SELF.fetch(`${BASE}/agents`)).status).toBe(401);
    expect((await SELF.fetch(`${BASE}/observe`, { headers: { Upgrade: "websocket" } })).status).toBe(401);
    const res = await SELF.fetch(`${BASE}/report`, {
      method: "POST", headers: { Authorization: `Bearer ${DIRECTORY_TOKEN}` }, body: "{}",
    });
    expect(res.status).toBe(404);
    watcher.close();
  });
});
/** A serve connection of another account that claims; resolves once it holds. */
async function connectAs(agent: string, token: string) {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/serve?machine=other-box`, {
    headers: { Upgrade: "websocket", Authorization: `Bearer ${token}` },
  });
  const ws = res.webSocket!;
  ws.accept();
  const held = new Promise<void>((resolve) => ws.addEventListener("message", (e) => {
    if ((JSON.parse(e.data as string) as { type: string }).type === "serve_lease") resolve();
  }));
  ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
  await held;
  return { close: () => ws.close(1000, "test done") };
}
