// The client library (baton-client) as a real client of a real `wrangler dev`: serve() hands the
// agent over with its checkpoint, aborts a handler's signal when the lease is lost (a network cut
// that never closes the socket), and a stale holder's writes are refused; withSessionLease()
// aborts when renewals stop getting through, and the coordinator refuses the old fence.
import WebSocket from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { LeaseLostError, serve, withSessionLease, type MessageHandler, type ServeHandle, type ServeStatus } from "../../client/node.ts";
import type { WebSocketConstructor } from "../../client/websocket.ts";
import { authHeaders, getJson, postMessage, sharedServeFixture, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { SHARED_SERVE_VARS } from "./shared-dev.global.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

const fx = sharedServeFixture();

/** The shared server's heartbeat TTL. */
const TTL_MS = Number(SHARED_SERVE_VARS.BATON_HEARTBEAT_TTL_SECONDS) * 1000;
const handles: ServeHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
});

/** A `ws` WebSocket whose outgoing frames can be dropped: a network cut that sends no close. */
class CuttableSocket extends WebSocket {
  static cut = new Set<CuttableSocket>();
  override send(data: string): void {
    if (!CuttableSocket.cut.has(this)) super.send(data);
  }
}
const live: CuttableSocket[] = [];
class Tracked extends CuttableSocket {
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols);
    live.push(this);
  }
}

function start(agent: string, machine: string, handler: MessageHandler) {
  const statuses: ServeStatus[] = [];
  const waiters: { pick: (s: ServeStatus) => boolean; resolve: () => void }[] = [];
  const handle = serve(agent, handler, {
    url: fx.dev.url, token: DEV_TOKEN, machine, WebSocket: Tracked as unknown as WebSocketConstructor,
    onStatus(s) {
      statuses.push(s);
      for (const w of waiters.splice(0)) (w.pick(s) ? w.resolve() : waiters.push(w));
    },
  });
  handles.push(handle);
  const until = (pick: (s: ServeStatus) => boolean, timeoutMs = 15_000) => new Promise<void>((resolve, reject) => {
    if (pick(handle.status)) return resolve();
    const timer = setTimeout(() => reject(new Error(`${machine}: no such status; saw ${JSON.stringify(statuses)}`)), timeoutMs);
    waiters.push({ pick, resolve: () => (clearTimeout(timer), resolve()) });
  });
  return { handle, statuses, until };
}

const holder = (s: ServeStatus) => s.kind === "holder";
const standby = (s: ServeStatus) => s.kind === "standby";

describe("serve()", () => {
  it("hands over: A handles and checkpoints, A stops and releases, B holds at once and sees A's checkpoint", async () => {
    const agent = uniqueAgent("lib-handoff");
    const a = start(agent, "a", async (m, ctx) => {
      await ctx.saveCheckpoint({ by: "a", fence: ctx.fence });
      return `a did ${m.text}`;
    });
    await a.until(holder);
    const seenByB: unknown[] = [];
    const b = start(agent, "b", (m, ctx) => {
      seenByB.push(ctx.checkpoint);
      return `b did ${m.text}`;
    });
    await b.until(standby);
    const first = await postMessage(fx.dev.url, agent, "one");
    expect((await waitForMessage(fx.dev.url, agent, first, (m) => m.status === "acknowledged")).reply).toBe("a did one");
    const fenceA = a.handle.status.kind === "holder" ? a.handle.status.fence : -1;
    const stoppedAt = performance.now();
    await a.handle.stop();
    await b.until(holder);
    expect(performance.now() - stoppedAt).toBeLessThan(TTL_MS);
    const second = await postMessage(fx.dev.url, agent, "two");
    const done = await waitForMessage(fx.dev.url, agent, second, (m) => m.status === "acknowledged");
    expect(done.reply).toBe("b did two");
    expect(done.acked_fence).toBeGreaterThan(fenceA);
    expect(seenByB).toEqual([{ by: "a", fence: fenceA }]);
  });

  it("a cut that never closes the socket: A's signal aborts by its own clock, its late checkpoint is refused, B redoes the message", async () => {
    const agent = uniqueAgent("lib-cut");
    let started: () => void = () => {};
    const running = new Promise<void>((r) => (started = r));
    let aborted: { reason: unknown; after: number; lateWrite: unknown } | null = null;
    const a = start(agent, "a", async (_m, ctx) => {
      started();
      const since = performance.now();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      const lateWrite = await ctx.saveCheckpoint({ by: "late a" }).then(() => "stored", (e: unknown) => e);
      aborted = { reason: ctx.signal.reason, after: performance.now() - since, lateWrite };
      return "a should never be the reply";
    });
    await a.until(holder);
    const b = start(agent, "b", (m, ctx) => `b did ${m.text} at attempt ${m.attempt} with checkpoint ${JSON.stringify(ctx.checkpoint)}`);
    await b.until(standby);
    const id = await postMessage(fx.dev.url, agent, "work");
    await running;
    for (const ws of live.splice(0)) if (ws.url.includes(agent) && !ws.url.includes("machine=b")) CuttableSocket.cut.add(ws);
    await b.until(holder, TTL_MS * 4);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged");
    expect(done.reply).toBe("b did work at attempt 2 with checkpoint null");
    expect(aborted).not.toBeNull();
    const { reason, after, lateWrite } = aborted!;
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect((reason as LeaseLostError).code).toBe("lapsed");
    expect(after).toBeLessThan(TTL_MS + 1000);
    expect(lateWrite).toBeInstanceOf(LeaseLostError);
    expect(a.statuses.map((s) => s.kind)).toContain("lapsed");
    const presence = await getJson<{ holder: { machine: string } | null }>(`${fx.dev.url}/agents/${agent}/presence`);
    expect(presence.holder?.machine).toBe("b");
  });
});

describe("withSessionLease()", () => {
  it("renewals that stop getting through abort the signal before the coordinator's expiry; the old fence is refused", async () => {
    const session = `lib-${Math.random().toString(36).slice(2, 10)}`;
    let cut = false;
    const cuttableFetch: typeof fetch = (input, init) =>
      cut && String(input).endsWith("/renew") ? Promise.reject(new TypeError("fetch failed")) : fetch(input, init);
    let fenceA = -1;
    let abortedAfter = -1;
    const a = withSessionLease(session, async (lease) => {
      fenceA = lease.fence;
      cut = true;
      const since = performance.now();
      await new Promise((resolve) => lease.signal.addEventListener("abort", resolve, { once: true }));
      abortedAfter = performance.now() - since;
      return "a finished";
    }, { url: fx.dev.url, token: DEV_TOKEN, ttlSeconds: 2, fetch: cuttableFetch });
    await expect(a).rejects.toBeInstanceOf(LeaseLostError);
    expect(abortedAfter).toBeLessThanOrEqual(2000);
    const b = await withSessionLease(session, async (lease) => {
      const stale = await fetch(`${fx.dev.url}/leases/${session}/check`, { method: "POST", headers: authHeaders(), body: JSON.stringify({ fence: fenceA }) });
      return { fence: lease.fence, current: await lease.check(), staleCurrent: ((await stale.json()) as { current: boolean }).current };
    }, { url: fx.dev.url, token: DEV_TOKEN, ttlSeconds: 2, wait: true, waitTimeoutMs: 10_000 });
    expect(b.fence).toBeGreaterThan(fenceA);
    expect(b.current).toBe(true);
    expect(b.staleCurrent).toBe(false);
  });
});
