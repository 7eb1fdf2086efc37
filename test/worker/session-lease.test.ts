// The session-lease HTTP API in the real runtime: races, expiry takeover, fencing across a
// rebuilt shard object and across pruning, keys sharing a shard, release semantics, account
// isolation and rejected bodies.
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { leaseShardCount } from "../../worker/config.ts";
import { LeaseShard, leaseShardStub } from "../../worker/objects/lease-shard.ts";
import { IDLE_KEY_RETENTION_MS } from "../../worker/objects/lease-store.ts";
import { shardOf } from "../../worker/rules/session-lease.ts";
import { BASE, DEV_TOKEN, OTHER_TOKEN } from "./helpers.ts";
import { advanceClock } from "./clock.ts";
import { call, state, uniqueSession, type Op } from "./session-lease-calls.ts";

describe("session leases", () => {
  it("many independent clients race for one key and exactly one wins", async () => {
    const session = uniqueSession();
    const runs = Array.from({ length: 20 }, () => crypto.randomUUID());
    const results = await Promise.all(runs.map((run_id) => call(session, "acquire", { run_id, ttl_seconds: 30 })));
    const winners = results.filter((r) => r.status === 201);
    expect(winners).toHaveLength(1);
    const winner = winners[0]!.body;
    expect(winner).toMatchObject({ fence: 1, fence_token: "0000000000000001", ttl_seconds: 30 });
    const losers = results.filter((r) => r.status !== 201);
    expect(losers).toHaveLength(19);
    for (const loser of losers) {
      expect(loser.status).toBe(409);
      expect(loser.body).toMatchObject({ error: "lease_held", expires_at: winner.expires_at });
      expect(JSON.stringify(loser.body)).not.toContain(String(winner.run_id));
    }
    expect(await state(session)).toMatchObject({ held: true, fence: 1, expires_at: winner.expires_at });
  });

  it("different keys never block each other", async () => {
    const [a, b] = [uniqueSession(), uniqueSession()];
    const [ra, rb] = await Promise.all([
      call(a, "acquire", { run_id: crypto.randomUUID() }),
      call(b, "acquire", { run_id: crypto.randomUUID() }),
    ]);
    expect(ra.status).toBe(201);
    expect(rb.status).toBe(201);
    expect(ra.body.fence).toBe(1);
    expect(rb.body.fence).toBe(1);
  });

  it("a live lease cannot be overwritten, renewed or released by another run", async () => {
    const session = uniqueSession();
    const [holder, intruder] = [crypto.randomUUID(), crypto.randomUUID()];
    const granted = await call(session, "acquire", { run_id: holder, ttl_seconds: 30 });
    expect(granted.status).toBe(201);
    expect(granted.body.ttl_seconds).toBe(30);
    expect((await call(session, "acquire", { run_id: intruder, ttl_seconds: 1 })).status).toBe(409);
    expect(await call(session, "renew", { run_id: intruder })).toMatchObject({ status: 409, body: { error: "lease_lost" } });
    expect(await call(session, "release", { run_id: intruder })).toEqual({ status: 200, body: { released: false } });
    expect(await state(session)).toMatchObject({ held: true, fence: 1, expires_at: granted.body.expires_at });
    const renewed = await call(session, "renew", { run_id: holder });
    expect(renewed).toMatchObject({ status: 200, body: { run_id: holder, fence: 1, ttl_seconds: 30 } });
  });

  it("the holder re-acquiring its live lease renews it under the same fence", async () => {
    const session = uniqueSession();
    const run_id = crypto.randomUUID();
    const first = await call(session, "acquire", { run_id, ttl_seconds: 5 });
    await advanceClock(20, { session });
    const again = await call(session, "acquire", { run_id, ttl_seconds: 60 });
    expect(first.status).toBe(201);
    expect(again).toMatchObject({ status: 200, body: { run_id, fence: 1, ttl_seconds: 60 } });
    expect(again.body.expires_at as number).toBeGreaterThan(first.body.expires_at as number);
  });

  it("after expiry a new run takes over; the old run can neither renew nor release it", async () => {
    const session = uniqueSession();
    const [old, next] = [crypto.randomUUID(), crypto.randomUUID()];
    const first = await call(session, "acquire", { run_id: old, ttl_seconds: 1 });
    expect(first.status).toBe(201);
    await advanceClock(1000, { session });
    expect(await state(session)).toMatchObject({ held: false, fence: 1, expires_at: null });
    const second = await call(session, "acquire", { run_id: next, ttl_seconds: 30 });
    expect(second).toMatchObject({ status: 201, body: { run_id: next, fence: 2, fence_token: "0000000000000002" } });
    expect(await call(session, "renew", { run_id: old })).toMatchObject({ status: 409, body: { error: "lease_lost" } });
    expect(await call(session, "release", { run_id: old })).toEqual({ status: 200, body: { released: false } });
    expect(await state(session)).toMatchObject({ held: true, fence: 2, expires_at: second.body.expires_at });
    expect((await call(session, "check", { fence: 1 })).body.current).toBe(false);
    expect((await call(session, "check", { run_id: next, fence: 2 })).body.current).toBe(true);
  });

  it("a late heartbeat never revives an expired lease, even when nobody took the key", async () => {
    const session = uniqueSession();
    const run_id = crypto.randomUUID();
    await call(session, "acquire", { run_id, ttl_seconds: 1 });
    await advanceClock(1000, { session });
    expect(await call(session, "renew", { run_id })).toMatchObject({ status: 409, body: { error: "lease_lost" } });
    expect(await state(session)).toMatchObject({ held: false });
    const regrant = await call(session, "acquire", { run_id });
    expect(regrant).toMatchObject({ status: 201, body: { fence: 2 } });
  });

  it("release frees the key at once, is idempotent, and works through DELETE too", async () => {
    const session = uniqueSession();
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    await call(session, "acquire", { run_id: a });
    expect((await call(session, "release", { run_id: a })).body).toEqual({ released: true });
    expect((await call(session, "release", { run_id: a })).body).toEqual({ released: false });
    expect((await call(session, "acquire", { run_id: b })).body.fence).toBe(2);
    const del = await SELF.fetch(`${BASE}/leases/${session}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${DEV_TOKEN}` },
      body: JSON.stringify({ run_id: b }),
    });
    expect(await del.json()).toEqual({ released: true });
    expect(await state(session)).toMatchObject({ held: false, fence: 2 });
  });

  it("the fence grows on every grant and survives a rebuilt object instance", async () => {
    const session = uniqueSession();
    const fences: number[] = [];
    for (let i = 0; i < 3; i++) {
      const run_id = crypto.randomUUID();
      fences.push((await call(session, "acquire", { run_id })).body.fence as number);
      await call(session, "release", { run_id });
    }
    expect(fences).toEqual([1, 2, 3]);
    const rebuilt = await runInDurableObject(leaseShardStub(env, "dev", session), (_instance: LeaseShard, ctx: DurableObjectState) => {
      return new LeaseShard(ctx, env).acquire("dev", session, crypto.randomUUID(), 30);
    });
    expect(rebuilt).toMatchObject({ kind: "granted", lease: { fence: 4 } });
    expect(await state(session)).toMatchObject({ held: true, fence: 4, fence_token: "0000000000000004" });
  });

  it("check says whether a fence (and run) is current", async () => {
    const session = uniqueSession();
    const run_id = crypto.randomUUID();
    expect((await call(session, "check", { fence: 0 })).body).toEqual({ current: false, latest_fence: 0, latest_fence_token: "0000000000000000" });
    await call(session, "acquire", { run_id });
    expect((await call(session, "check", { fence: 1 })).body.current).toBe(true);
    expect((await call(session, "check", { run_id, fence: 1 })).body.current).toBe(true);
    expect((await call(session, "check", { run_id: crypto.randomUUID(), fence: 1 })).body.current).toBe(false);
    expect((await call(session, "check", { run_id, fence: 2 })).body.current).toBe(false);
    await call(session, "release", { run_id });
    expect((await call(session, "check", { run_id, fence: 1 })).body).toEqual({ current: false, latest_fence: 1, latest_fence_token: "0000000000000001" });
  });

  it("accounts are isolated: another account can neither see nor release the lease", async () => {
    const session = uniqueSession();
    const run_id = crypto.randomUUID();
    const mine = await call(session, "acquire", { run_id });
    expect(await state(session, OTHER_TOKEN)).toMatchObject({ held: false, fence: 0 });
    expect((await call(session, "release", { run_id }, OTHER_TOKEN)).body).toEqual({ released: false });
    expect((await call(session, "check", { run_id, fence: 1 }, OTHER_TOKEN)).body.current).toBe(false);
    expect((await call(session, "acquire", { run_id: crypto.randomUUID() }, OTHER_TOKEN)).status).toBe(201);
    expect(await state(session)).toMatchObject({ held: true, fence: 1, expires_at: mine.body.expires_at });
  });

  it("bad bodies get 400 and change nothing", async () => {
    const session = uniqueSession();
    const run_id = crypto.randomUUID();
    const granted = await call(session, "acquire", { run_id, ttl_seconds: 30 });
    const before = await state(session);
    const bad: [Op, unknown][] = [
      ["acquire", "{not json"],
      ["acquire", { run_id: "not-a-uuid" }],
      ["acquire", { run_id: crypto.randomUUID(), ttl_seconds: 0 }],
      ["acquire", { run_id: crypto.randomUUID(), ttl_seconds: 3601 }],
      ["acquire", { run_id: crypto.randomUUID(), ttl_seconds: 1.5 }],
      ["acquire", { run_id: crypto.randomUUID(), ttl_seconds: "30" }],
      ["acquire", { run_id: crypto.randomUUID(), holder: "me" }],
      ["acquire", [run_id]],
      ["renew", { run_id, ttl_seconds: 3601 }],
      ["renew", { run_id, extra: true }],
      ["release", { run_id, force: true }],
      ["release", {}],
      ["check", { run_id, fence: -1 }],
      ["check", { run_id }],
    ];
    for (const [op, body] of bad) {
      const res = await call(session, op, body);
      expect(res.status, `${op} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body.error).toBe(body === "{not json" ? "bad_json" : "bad_request");
      expect(typeof res.body.message).toBe("string");
    }
    expect(await state(session)).toMatchObject({ ...before, expires_in_ms: expect.any(Number) });
    expect((await state(session)).expires_at).toBe(granted.body.expires_at);
    expect((await call(session, "acquire", { run_id: crypto.randomUUID(), ttl_seconds: 3600 })).status).toBe(409);
  });

  it("rejects bad session names, unknown routes and missing tokens", async () => {
    const res = await SELF.fetch(`${BASE}/leases/-bad/acquire`, {
      method: "POST",
      headers: { Authorization: `Bearer ${DEV_TOKEN}` },
      body: JSON.stringify({ run_id: crypto.randomUUID() }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "bad_name" });
    const unknown = await SELF.fetch(`${BASE}/leases/ok/steal`, { method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}` }, body: "{}" });
    expect(unknown.status).toBe(404);
    const anonymous = await SELF.fetch(`${BASE}/leases/ok`);
    expect(anonymous.status).toBe(401);
  });

  it("accepts the TTL bounds 1 and 3600 seconds", async () => {
    const longSession = uniqueSession();
    const long = await call(longSession, "acquire", { run_id: crypto.randomUUID(), ttl_seconds: 3600 });
    expect(long.status).toBe(201);
    expect(await state(longSession)).toMatchObject({ ttl_seconds: 3600 });
    const short = await call(uniqueSession(), "acquire", { run_id: crypto.randomUUID(), ttl_seconds: 1 });
    expect(short).toMatchObject({ status: 201, body: { ttl_seconds: 1 } });
  });
});

/** `count` fresh session names of the dev account that all hash to one shard. */
function sessionsInOneShard(count: number): string[] {
  const shards = leaseShardCount(env);
  const target = shardOf("dev", uniqueSession(), shards);
  const found: string[] = [];
  while (found.length < count) {
    const session = uniqueSession();
    if (shardOf("dev", session, shards) === target) found.push(session);
  }
  return found;
}

describe("session-lease shards", () => {
  it("two keys in one shard are independent: each has its own holder, fence and release", async () => {
    const [a, b] = sessionsInOneShard(2) as [string, string];
    const [runA, runB] = [crypto.randomUUID(), crypto.randomUUID()];
    expect(await call(a, "acquire", { run_id: runA })).toMatchObject({ status: 201, body: { fence: 1 } });
    expect(await call(b, "acquire", { run_id: runB })).toMatchObject({ status: 201, body: { fence: 1 } });
    expect((await call(a, "acquire", { run_id: runB })).status).toBe(409);
    expect((await call(a, "release", { run_id: runB })).body).toEqual({ released: false });
    expect((await call(b, "release", { run_id: runB })).body).toEqual({ released: true });
    expect(await state(a)).toMatchObject({ held: true, fence: 1 });
    expect(await state(b)).toMatchObject({ held: false, fence: 1 });
    expect(await call(b, "acquire", { run_id: runA })).toMatchObject({ status: 201, body: { fence: 2 } });
    expect(await state(a)).toMatchObject({ held: true, fence: 1 });
    const rows = await runInDurableObject(leaseShardStub(env, "dev", a), (shard: LeaseShard) => shard.keyCount());
    expect(rows).toBeGreaterThanOrEqual(2);
  });

  it("acquisitions arriving together in one shard share commits, and a rebuilt shard instance sees every one", async () => {
    const sessions = sessionsInOneShard(12);
    const results = await Promise.all(sessions.map((session) => call(session, "acquire", { run_id: crypto.randomUUID(), ttl_seconds: 60 })));
    expect(results.map((r) => r.status)).toEqual(sessions.map(() => 201));
    const views = await runInDurableObject(leaseShardStub(env, "dev", sessions[0]!), (_instance: LeaseShard, ctx: DurableObjectState) => {
      const fresh = new LeaseShard(ctx, env);
      return Promise.all(sessions.map((session) => fresh.view("dev", session)));
    });
    expect(views.map((v) => [v.lastFence, v.live?.expiresAt])).toEqual(results.map((r) => [1, r.body.expires_at]));
  });

  it("a key's fence survives pruning: after its row is gone its next grant is above every fence it had", async () => {
    const [idle, live, never] = sessionsInOneShard(3) as [string, string, string];
    const run_id = crypto.randomUUID();
    for (let i = 0; i < 3; i++) {
      const r = crypto.randomUUID();
      await call(idle, "acquire", { run_id: r });
      await call(idle, "release", { run_id: r });
    }
    const held = await call(live, "acquire", { run_id, ttl_seconds: 3600 });
    const shard = leaseShardStub(env, "dev", idle);
    // A minute from now with a 30 s retention: the released key is past it, the hour-long lease is not.
    const pruned = await runInDurableObject(shard, (s: LeaseShard) => s.pruneIdle(Date.now() + 60_000, 30_000));
    expect(pruned).toBeGreaterThanOrEqual(1);
    const after = await call(idle, "acquire", { run_id: crypto.randomUUID() });
    expect(after.status).toBe(201);
    expect(after.body.fence as number).toBeGreaterThan(3);
    expect((await call(never, "acquire", { run_id: crypto.randomUUID() })).body.fence as number).toBeGreaterThan(3);
    // Pruning only forgets keys idle past the retention: a live lease is kept as it is.
    expect(await state(live)).toMatchObject({ held: true, fence: 1, expires_at: held.body.expires_at });
  });

  it("with the default retention a key released now is remembered, so its fence grows by one", async () => {
    const [session] = sessionsInOneShard(1) as [string];
    const [first, run_id] = [crypto.randomUUID(), crypto.randomUUID()];
    // A shard shared with an earlier test may start above fence 1 (its pruning floor), so compare with the first grant.
    const firstFence = (await call(session, "acquire", { run_id: first })).body.fence as number;
    await call(session, "release", { run_id: first });
    const shard = leaseShardStub(env, "dev", session);
    await runInDurableObject(shard, (s: LeaseShard) => s.pruneIdle(Date.now() + IDLE_KEY_RETENTION_MS - 60_000));
    const granted = await call(session, "acquire", { run_id, ttl_seconds: 60 });
    expect(granted).toMatchObject({ status: 201, body: { fence: firstFence + 1 } });
    expect(await call(session, "renew", { run_id })).toMatchObject({ status: 200, body: { fence: firstFence + 1 } });
  });
});
