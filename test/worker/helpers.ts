// Small socket helpers for tests inside workerd: open a serve connection through the Worker,
// wait for frames that match, and wait for closes. Every wait rejects on timeout.
import { env, SELF } from "cloudflare:test";
import { expect } from "vitest";
import { PING_TEXT, type ServerFrame } from "../../worker/wire/protocol.ts";
import { stopClockOnce } from "./clock.ts";

export const DEV_TOKEN = "baton-dev-token";
export const OTHER_TOKEN = "other-account-token";
/** The coordinator as `npm start` runs it: the public dev token signs requests to loopback names only (worker/origins.ts). */
export const BASE = "http://localhost";

export interface TestSocket {
  ws: WebSocket;
  agent: string;
  /** The token it connected with: its account. */
  token: string;
  /** Sends no heartbeats of its own (ConnectOptions.silent). */
  silent: boolean;
  frames: ServerFrame[];
  closed: { code: number; reason: string } | null;
  send(frame: unknown): void;
  sendRaw(data: string | ArrayBuffer): void;
  next<T extends ServerFrame["type"]>(type: T, match?: (f: Extract<ServerFrame, { type: T }>) => boolean, timeoutMs?: number): Promise<Extract<ServerFrame, { type: T }>>;
  framesOf<T extends ServerFrame["type"]>(type: T): Extract<ServerFrame, { type: T }>[];
  waitForClose(timeoutMs?: number): Promise<{ code: number; reason: string }>;
  /** One heartbeat the object answers itself (fenced while holding, as `baton serve` sends), awaited. */
  beat(): Promise<void>;
  close(): void;
}

export function uniqueAgent(): string {
  return `a-${crypto.randomUUID().slice(0, 13)}`;
}

export interface ConnectOptions {
  machine?: string;
  token?: string;
  /** A silent connection sends no heartbeats of its own, so it goes stale one TTL after its last frame. */
  silent?: boolean;
  /**
   * Leaves the agent object's clock on the runtime's time. By default connect stops it first
   * (clock.ts): with a one-second TTL, a machine stalled for a second would otherwise expire a
   * lease the test never meant to expire; a test that means time to pass says so with passTime.
   */
  realClock?: boolean;
}

/** Every socket a test file opened and has not seen close; setup.ts closes them when the file ends. */
const openSockets = new Set<TestSocket>();

/**
 * Closes what a test file left open and waits for the objects to see each close: a close handled
 * after the file's runner is torn down makes workerd resolve the Worker's module over an RPC
 * channel that is already shut, which it reports as an uncaught EnvironmentTeardownError.
 */
export async function closeLeftoverSockets(): Promise<void> {
  const left = [...openSockets];
  openSockets.clear();
  await Promise.all(left.map(async (sock) => {
    if (sock.closed) return;
    const closed = sock.waitForClose(2000).catch(() => null);
    try {
      sock.close();
    } catch {
      return;
    }
    await closed;
  }));
  if (left.length > 0) await sleep(100);
}

/** The open connections of `agent` that heartbeat on their own: those a passing of time heartbeats for (clock.ts). */
export function heartbeatingSockets(agent: string): TestSocket[] {
  return [...openSockets].filter((s) => s.agent === agent && !s.silent && s.closed === null);
}

/** How often a connection heartbeats in tests: well inside the one-second TTL of the test config. */
const HEARTBEAT_MS = 200;

/**
 * Opens a serve connection that heartbeats like a real client (unless silent). The pongs that answer
 * its own heartbeats are swallowed, so a test's `next("pong")` only ever sees answers to its own pings.
 */
export async function connect(agent: string, opts: ConnectOptions = {}): Promise<TestSocket> {
  if (!opts.realClock) await stopClockOnce(agent, opts.token ?? DEV_TOKEN);
  const machine = opts.machine ? `?machine=${encodeURIComponent(opts.machine)}` : "";
  const res = await SELF.fetch(`${BASE}/agents/${agent}/serve${machine}`, {
    headers: { Upgrade: "websocket", Authorization: `Bearer ${opts.token ?? DEV_TOKEN}` },
  });
  const ws = res.webSocket;
  if (!ws) throw new Error(`upgrade failed: ${res.status} ${await res.text()}`);
  ws.accept();
  const frames: ServerFrame[] = [];
  const waiters = new Set<() => void>();
  const sock: TestSocket = {
    ws,
    agent,
    token: opts.token ?? DEV_TOKEN,
    silent: opts.silent ?? false,
    frames,
    closed: null,
    send: (frame) => ws.send(JSON.stringify(frame)),
    sendRaw: (data) => ws.send(data),
    framesOf: (type) => frames.filter((f) => f.type === type) as never,
    next(type, match, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        // From the start every time: another waiter may have taken an earlier frame, shifting the rest.
        const check = () => {
          for (let i = 0; i < frames.length; i++) {
            const f = frames[i]!;
            if (f.type === type && (!match || match(f as never))) {
              waiters.delete(check);
              clearTimeout(timer);
              frames.splice(i, 1);
              resolve(f as never);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for a ${type} frame; saw ${JSON.stringify(frames)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    waitForClose(timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        if (sock.closed) return resolve(sock.closed);
        const timer = setTimeout(() => reject(new Error("timed out waiting for close")), timeoutMs);
        ws.addEventListener("close", (e) => {
          clearTimeout(timer);
          resolve({ code: e.code, reason: e.reason });
        });
      });
    },
    async beat() {
      // The spacing keeps a standby's ping from matching the runtime's auto-response text.
      ws.send(heldFence === null ? '{"type": "ping"}' : JSON.stringify({ type: "ping", fence: heldFence }));
      await sock.next("pong");
    },
    close: () => {
      if (heartbeat) clearInterval(heartbeat);
      ws.close(1000, "test done");
    },
  };
  let heartbeatsUnanswered = 0;
  let heldFence: number | null = null;
  const heartbeat = opts.silent
    ? null
    : setInterval(() => {
        if (sock.closed) return;
        heartbeatsUnanswered++;
        // Like `baton serve`: a holder pings with its fence (answered by the object), a standby with PING_TEXT.
        ws.send(heldFence === null ? PING_TEXT : JSON.stringify({ type: "ping", fence: heldFence }));
      }, HEARTBEAT_MS);
  ws.addEventListener("message", (e) => {
    const frame = JSON.parse(e.data as string) as ServerFrame;
    if (frame.type === "serve_lease") heldFence = frame.held ? frame.fence : null;
    if (frame.type === "pong" && heartbeatsUnanswered > 0) {
      heartbeatsUnanswered--;
      return;
    }
    frames.push(frame);
    for (const w of [...waiters]) w();
  });
  openSockets.add(sock);
  ws.addEventListener("close", (e) => {
    openSockets.delete(sock);
    sock.closed = { code: e.code, reason: e.reason };
    if (heartbeat) clearInterval(heartbeat);
  });
  await sock.next("welcome");
  return sock;
}

/** Connects and claims; resolves with the first serve_lease frame. */
export async function claimant(agent: string, machine: string, opts: Omit<ConnectOptions, "machine"> = {}) {
  const sock = await connect(agent, { ...opts, machine });
  sock.send({ type: "serve_lease", op: "claim" });
  const lease = await sock.next("serve_lease");
  return { sock, lease };
}

export async function presence(agent: string, token = DEV_TOKEN) {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/presence`, { headers: { Authorization: `Bearer ${token}` } });
  return (await res.json()) as import("../../worker/wire/server-frames.ts").Presence;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Resolves once `done` holds, asking again every 20 ms: for what the runtime finishes on its own
 * time (an R2 delete in waitUntil, a report reaching the directory). Rejects naming `what` after
 * `timeoutMs`.
 */
export async function waitFor(done: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * Round-trips a ping that the object itself answers (the spacing defeats the exact-text
 * auto-response), proving every earlier frame on this socket was processed.
 */
export async function settle(sock: TestSocket): Promise<void> {
  sock.sendRaw('{"type": "ping"}');
  await sock.next("pong");
}

/** The runner says its `baton serve` is stopping (SIGTERM), and the object has taken it in: it is handed nothing new. */
export async function sayStopping(sock: TestSocket): Promise<void> {
  sock.send({ type: "hello", stopping: true });
  await settle(sock);
}

/** Tokens of accounts that only one test uses, so nothing else touches their directory. */
export const LIMITS_TOKEN = "limits-account-token";
export const QUIET_TOKEN = "quiet-account-token";
/** Account directory: directory.test.ts counts its directory's entries and wakes, which other files' agents would move. */
export const DIRECTORY_TOKEN = "directory-account-token";
/** Account hooks: its account webhook would reach other tests' agents, so only webhooks.test.ts uses it. */
export const HOOKS_TOKEN = "hooks-account-token";
/** Account clock: clock.test.ts stops its directory's clock, which would freeze time for every later file's dev directory. */
export const CLOCK_TOKEN = "clock-account-token";
/** Account leases: metrics.test.ts counts its session leases, which other files' leases (expiring on a shard's moved clock) would move. */
export const LEASES_TOKEN = "leases-account-token";

/** The agent object of one agent of one account. */
export function stubFor(agent: string, account = "dev") {
  return env.AGENTS.get(env.AGENTS.idFromName(`${account}:${agent}`));
}

/** Headers of a JSON request with the dev token. */
export const auth = { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };

/** One HTTP call through the Worker with the dev token: the status and the JSON body. */
export async function call(method: string, path: string, body?: unknown) {
  const res = await SELF.fetch(`${BASE}${path}`, { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Posts a message (expecting 201) and resolves with its id. */
export async function post(agent: string, text: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await call("POST", `/agents/${agent}/messages`, { text, ...extra });
  expect(res.status).toBe(201);
  return res.body.id as number;
}

/** GET /agents/{agent}/messages/{id}. */
export async function message(agent: string, id: number) {
  return (await call("GET", `/agents/${agent}/messages/${id}`)).body;
}

/** Sends a frame with a fresh req and resolves with the result or error frame that answers it. */
export async function write(sock: TestSocket, frame: Record<string, unknown>) {
  const req = `w${Math.random().toString(36).slice(2, 10)}`;
  sock.send({ ...frame, req });
  return (await Promise.race([sock.next("result", (f) => f.req === req), sock.next("error", (f) => f.req === req)])) as Record<string, unknown>;
}
