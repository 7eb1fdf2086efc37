// The test clock (worker/objects/clock.ts, POST /test/clock): it moves one object's time by
// exactly the advance and holds it there until the next move, runs the alarm that falls due, keeps
// every other object's time, refuses a bad body, and without BATON_TEST_CLOCK is a 404 that moves nothing.
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../worker/index.ts";
import { BASE, claimant, CLOCK_TOKEN, DEV_TOKEN, presence, uniqueAgent } from "./helpers.ts";
import { advanceClock, passTime } from "./clock.ts";

const HOUR = 3_600_000;

/** How far an object's clock is ahead of the runtime's, read by an advance of nothing. */
async function lead(target: { agent?: string; session?: string; token?: string }): Promise<number> {
  const before = Date.now();
  const { now } = await advanceClock(0, target);
  return now - before;
}

function hook(body: unknown, testEnv: typeof env = env): Promise<Response> {
  const request = new Request(`${BASE}/test/clock`, {
    method: "POST",
    headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return testEnv === env ? SELF.fetch(request) : worker.fetch(request, testEnv, createExecutionContext());
}

describe("test clock", () => {
  it("moves only the named object, by exactly the advance, and its time stands still until the next move", async () => {
    const agent = uniqueAgent();
    const other = uniqueAgent();
    const session = `s-${crypto.randomUUID()}`;
    // A session's shard is shared with every other test file that ran in this workerd, which may
    // have moved its clock: what must hold is that this move did not. The directory read is account
    // clock's, as a read stops that directory's clock and dev's must keep running for later files.
    const before = { other: await lead({ agent: other }), session: await lead({ session }), directory: await lead({ token: CLOCK_TOKEN }) };
    const { now: start } = await advanceClock(0, { agent });
    expect(Math.abs(start - Date.now())).toBeLessThan(1000);
    expect((await advanceClock(HOUR, { agent })).now).toBe(start + HOUR);
    await claimant(agent, "a");
    expect((await advanceClock(0, { agent })).now).toBe(start + HOUR);
    expect((await advanceClock(1, { agent })).now).toBe(start + HOUR + 1);
    expect(await lead({ agent: other }) - before.other).toBeLessThan(1000);
    expect(await lead({ session }) - before.session).toBeLessThan(1000);
    expect(await lead({ token: CLOCK_TOKEN }) - before.directory).toBeLessThan(1000);
  });

  it("runs the alarm the advance makes due: one jump past the TTL is time nobody heartbeat in, so the scan closes them all", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "silent", { silent: true });
    const b = await claimant(agent, "alive");
    await b.sock.beat();
    const { alarmsRun } = await advanceClock(1500, { agent });
    expect(alarmsRun).toBeGreaterThan(0);
    expect((await a.sock.waitForClose()).code).toBe(4008);
    expect((await b.sock.waitForClose()).code).toBe(4008);
    expect((await presence(agent)).holder).toBeNull();
  });

  it("passTime lets connections that heartbeat live through it: only the silent holder is replaced", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "silent", { silent: true });
    const b = await claimant(agent, "alive");
    await passTime(agent, 1500);
    expect((await a.sock.waitForClose()).code).toBe(4008);
    expect(await b.sock.next("serve_lease", (f) => f.held)).toMatchObject({ held: true, fence: 2 });
    expect((await presence(agent)).transitions[0]).toMatchObject({ reason: "stale", to_machine: "alive" });
  });

  it("a session lease expires at its TTL on the shard's clock", async () => {
    const session = `s-${crypto.randomUUID()}`;
    const acquire = () => SELF.fetch(`${BASE}/leases/${session}/acquire`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ run_id: crypto.randomUUID(), ttl_seconds: 60 }),
    });
    // A shard another file pruned starts a fresh key above fence 1 (its floor): compare with the first grant.
    const first = await acquire();
    expect(first.status).toBe(201);
    const { fence } = (await first.json()) as { fence: number };
    await advanceClock(59_000, { session });
    expect((await acquire()).status).toBe(409);
    await advanceClock(1_000, { session });
    expect(await (await acquire()).json()).toMatchObject({ fence: fence + 1 });
  });

  it("a move with run lets the clock run on from its new time: a lease granted after it expires by the runtime's pace", async () => {
    const session = `s-${crypto.randomUUID()}`;
    await advanceClock(0, { session });
    const moved = await advanceClock(HOUR, { session, run: true });
    const waited = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const later = await advanceClock(0, { session, run: true });
    expect(later.now - moved.now).toBeGreaterThanOrEqual(300);
    expect(later.now - moved.now).toBeLessThanOrEqual(Date.now() - waited + 1000);
    const acquire = (ttl_seconds?: number) => SELF.fetch(`${BASE}/leases/${session}/acquire`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ run_id: crypto.randomUUID(), ttl_seconds }),
    });
    expect((await acquire(1)).status).toBe(201);
    await expect.poll(async () => (await acquire()).status, { timeout: 5_000, interval: 100 }).toBe(201);
  });

  it("refuses a bad body with 400 and moves nothing", async () => {
    const agent = uniqueAgent();
    for (const body of [{ advance_ms: -1, agent }, { advance_ms: "1000", agent }, { advance_ms: HOUR + 1, agent }, { advance_ms: 1.5, agent }, { advance_ms: 1000, agent, session: "s" }, { advance_ms: 1000, agent: "Bad Name" }, { advance_ms: 1000, agent, run: "yes" }]) {
      const res = await hook(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe("bad_request");
    }
    expect(await lead({ agent })).toBeLessThan(1000);
  });

  it("without BATON_TEST_CLOCK the hook is an unknown route, a 404, and no clock moves", async () => {
    const agent = uniqueAgent();
    const production = { ...env, BATON_TEST_CLOCK: undefined };
    const res = await hook({ advance_ms: HOUR, agent }, production);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: "not_found" });
    expect(await lead({ agent })).toBeLessThan(1000);
  });
});
