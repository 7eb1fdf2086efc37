// Reconnect backoff: the delay schedule, and the client library's socket following it against a
// local WebSocket server that accepts and drops every connection.
import WebSocket, { WebSocketServer } from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_BACKOFF, reconnectDelay, type BackoffOptions } from "../../client/backoff.ts";
import { CoordinatorSocket, type SocketListener } from "../../client/socket.ts";
import type { ProbeResult } from "../../client/http.ts";
import type { WebSocketConstructor } from "../../client/websocket.ts";

const servers: WebSocketServer[] = [];
const sockets: CoordinatorSocket[] = [];
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => s.stop()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function server(onConnection: (ws: import("ws").WebSocket) => void): Promise<string> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  servers.push(wss);
  await new Promise((r) => wss.once("listening", r));
  wss.on("connection", onConnection);
  const addr = wss.address();
  return `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
}

function socket(url: string, listener: SocketListener, backoff?: BackoffOptions, probe?: () => Promise<ProbeResult>): CoordinatorSocket {
  const s = new CoordinatorSocket({
    WebSocket: WebSocket as unknown as WebSocketConstructor,
    url, token: "t", path: "/agents/a/serve?machine=m", listener, backoff,
    probe: probe ?? (async () => ({ fatal: false, reason: "probe says no" })),
  });
  sockets.push(s);
  return s;
}

describe("reconnectDelay", () => {
  it("grows by the factor from the minimum and stops at the maximum", () => {
    const opts = { minTimeout: 100, maxTimeout: 1000, factor: 2, randomize: false };
    expect([0, 1, 2, 3, 4, 5].map((a) => reconnectDelay(a, opts))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("jitter stays between one and two times the base delay, capped by the maximum", () => {
    const opts = { minTimeout: 100, maxTimeout: 1000, factor: 2, randomize: true };
    for (let i = 0; i < 200; i += 1) {
      const attempt = i % 5;
      const base = 100 * 2 ** attempt;
      const d = reconnectDelay(attempt, opts);
      expect(d).toBeGreaterThanOrEqual(Math.min(base, 1000));
      expect(d).toBeLessThanOrEqual(Math.min(2 * base, 1000));
    }
  });

  it("after a dropped holder's connection the delay stops at holderMaxTimeout (4 s by default), never above maxTimeout", () => {
    const opts = { minTimeout: 100, maxTimeout: 1000, factor: 2, randomize: false, holderMaxTimeout: 300 };
    expect([0, 1, 2, 3, 4].map((a) => reconnectDelay(a, opts, true))).toEqual([100, 200, 300, 300, 300]);
    expect(reconnectDelay(10, { ...opts, holderMaxTimeout: 5000 }, true)).toBe(1000);
    expect(reconnectDelay(10, DEFAULT_BACKOFF, true)).toBe(4000);
    expect(reconnectDelay(10, DEFAULT_BACKOFF)).toBe(15_000);
  });

  it("rejects a minimum above the maximum", () => {
    expect(() => reconnectDelay(0, { minTimeout: 10, maxTimeout: 5, factor: 2, randomize: false })).toThrow(/minTimeout/);
  });
});

describe("CoordinatorSocket reconnects", () => {
  it("waits min, min*factor, ... up to max between attempts against a server that drops it", async () => {
    const arrivals: number[] = [];
    let done: () => void = () => {};
    const enough = new Promise<void>((r) => (done = r));
    const url = await server((ws) => {
      arrivals.push(performance.now());
      ws.close(1011, "go away");
      if (arrivals.length === 6) done();
    });
    const scheduled: number[] = [];
    socket(url, { retrying: (_attempt, delay) => scheduled.push(delay) }, { minTimeout: 40, maxTimeout: 160, factor: 2, randomize: false }).start();
    await enough;
    expect(scheduled.slice(0, 5)).toEqual([40, 80, 160, 160, 160]);
    const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]!);
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(scheduled[i]! - 2);
      // the upper bound only catches a schedule not followed at all; a loaded machine adds latency
      expect(gap).toBeLessThan(scheduled[i]! + 1000);
    });
  });

  it("starts over from the minimum once a connection hears from the server", async () => {
    let connections = 0;
    let done: () => void = () => {};
    const enough = new Promise<void>((r) => (done = r));
    const url = await server((ws) => {
      connections += 1;
      ws.send(JSON.stringify({ type: "welcome", agent: "a", heartbeat_ttl_ms: 3000, limits: {} }));
      ws.close(1011, "go away");
      if (connections === 4) done();
    });
    const scheduled: number[] = [];
    socket(url, { retrying: (_attempt, delay) => scheduled.push(delay) }, { minTimeout: 30, maxTimeout: 1000, factor: 3, randomize: false }).start();
    await enough;
    expect(scheduled.slice(0, 3)).toEqual([30, 30, 30]);
  });

  it("a connection that held the lease when it dropped retries at most holderMaxTimeout apart, until it hears the lease again", async () => {
    let connections = 0;
    let done: () => void = () => {};
    const enough = new Promise<void>((r) => (done = r));
    const lease = (held: boolean) => JSON.stringify({ type: "serve_lease", held, fence: 1, claim_seq: connections, position: held ? 0 : 1, ttl_ms: 3000, holder: null });
    const url = await server((ws) => {
      connections += 1;
      // The first connection holds, then the coordinator goes away; the sixth hears it is a standby now.
      if (connections === 1) ws.send(lease(true));
      if (connections === 6) ws.send(lease(false));
      ws.close(1011, "go away");
      if (connections === 10) done();
    });
    const scheduled: number[] = [];
    const backoff = { minTimeout: 20, maxTimeout: 1000, factor: 2, randomize: false, holderMaxTimeout: 50 };
    socket(url, { retrying: (_attempt, delay) => scheduled.push(delay) }, backoff).start();
    await enough;
    expect(scheduled.slice(0, 9)).toEqual([20, 40, 50, 50, 50, 20, 40, 80, 160]);
  });

  it("sends the exact ping text every third of the TTL and reports each pong with its send time", async () => {
    const pings: number[] = [];
    const url = await server((ws) => {
      ws.send(JSON.stringify({ type: "welcome", agent: "a", heartbeat_ttl_ms: 300, limits: {} }));
      ws.on("message", (data) => {
        if (data.toString() === '{"type":"ping"}') {
          pings.push(performance.now());
          ws.send('{"type":"pong"}');
        }
      });
    });
    const pongs: number[] = [];
    let resolveThree: () => void = () => {};
    const three = new Promise<void>((resolve) => (resolveThree = resolve));
    socket(url, { pong: (sentAt) => pongs.push(sentAt) === 3 && resolveThree() }).start();
    await three;
    const gaps = pings.slice(1, 3).map((t, i) => t - pings[i]!);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(90);
      expect(gap).toBeLessThan(250);
    }
    pongs.forEach((sentAt, i) => expect(sentAt).toBeLessThanOrEqual(pings[i]!));
  });

  it("a connection that never opens is explained by the probe, and a fatal probe stops the retries", async () => {
    const reasons: string[] = [];
    let fatal: Error | null = null;
    let probes = 0;
    let gaveUp: () => void = () => {};
    const stopped = new Promise<void>((r) => (gaveUp = r));
    socket("http://127.0.0.1:1", {
      retrying: (_attempt, _delay, reason) => reasons.push(reason),
      fatal: (error) => {
        fatal = error;
        gaveUp();
      },
    }, { minTimeout: 5, maxTimeout: 5, factor: 1, randomize: false }, async () => {
      probes += 1;
      return probes < 3 ? { fatal: false, reason: `refused ${probes}` } : { fatal: true, error: new Error("wrong token") };
    }).start();
    await stopped;
    expect(reasons).toEqual(["refused 1", "refused 2"]);
    expect(fatal).toEqual(new Error("wrong token"));
  });

  it("a server that stops answering pings (no close ever arrives) is dropped after one TTL and dialed again", async () => {
    let connections = 0;
    const url = await server((ws) => {
      connections += 1;
      ws.send(JSON.stringify({ type: "welcome", agent: "a", heartbeat_ttl_ms: 300, limits: {} }));
    });
    const retries: string[] = [];
    let second: () => void = () => {};
    const redialed = new Promise<void>((r) => (second = r));
    socket(url, { retrying: (_a, _d, reason) => retries.push(reason), open: () => connections >= 1 && retries.length > 0 && second() },
      { minTimeout: 10, maxTimeout: 10, factor: 1, randomize: false }).start();
    await redialed;
    expect(retries[0]).toBe("heartbeats went unanswered");
  });
});
