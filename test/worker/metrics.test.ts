/// <reference path="../unit/parse-prometheus-text-format.d.ts" />
// GET /metrics in workerd: agents' figures reach the account's directory as they change, the
// scrape is answered from what the directory holds (no agent object is called), values follow a
// handoff, refused writes, messages and session leases, and the token rules hold.
import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ParsedFamily } from "parse-prometheus-text-format";
import { agentMetrics, parseMetrics, sampleValue } from "../e2e/prometheus.ts";
import { EMPTY_COUNTERS, type AgentMetrics } from "../../worker/rules/metrics.ts";
import { AgentMetricsKeeper } from "../../worker/objects/metrics-agent.ts";
import { BASE, claimant, DEV_TOKEN, LEASES_TOKEN, OTHER_TOKEN, post, presence, sayStopping, sleep, stubFor, uniqueAgent, write } from "./helpers.ts";
import { advanceClock, freezeClock, frozenAgent, passTime } from "./clock.ts";

async function scrape(token = DEV_TOKEN): Promise<string> {
  const res = await SELF.fetch(`${BASE}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return res.text();
}

/** Scrapes until one agent's figures satisfy `done`: reports travel to the directory after the change. */
async function until(agent: string, done: (m: Map<string, ParsedFamily>) => boolean, timeoutMs = 5000): Promise<Map<string, ParsedFamily>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const families = agentMetrics(await scrape(), agent);
    if (done(families)) return families;
    if (Date.now() > deadline) throw new Error(`metrics of ${agent} never matched: ${JSON.stringify([...families.values()])}`);
    await sleep(20);
  }
}

describe("GET /metrics", () => {
  it("needs the bearer token, and one account never sees another's agents", async () => {
    expect((await SELF.fetch(`${BASE}/metrics`)).status).toBe(401);
    expect((await SELF.fetch(`${BASE}/metrics`, { headers: { Authorization: "Bearer nope" } })).status).toBe(401);
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    await until(agent, (m) => sampleValue(m, "baton_agent_holders") === 1);
    expect(await scrape(OTHER_TOKEN)).not.toContain(agent);
    a.sock.close();
  });

  it("a handoff moves the fence, counts the transition by its reason and observes its gap", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const before = await until(agent, (m) => sampleValue(m, "baton_agent_standbys") === 1);
    expect(sampleValue(before, "baton_agent_holders")).toBe(1);
    expect(sampleValue(before, "baton_agent_connections")).toBe(2);
    expect(sampleValue(before, "baton_agent_fence")).toBe(1);
    expect(sampleValue(before, "baton_lease_transitions_total", { reason: "claimed" })).toBe(1);
    expect(before.get("baton_lease_gap_seconds")?.metrics[0]?.count).toBe("0");

    a.sock.close();
    await b.sock.next("serve_lease", (f) => f.held);
    const after = await until(agent, (m) => sampleValue(m, "baton_agent_fence") === 2);
    expect(sampleValue(after, "baton_agent_holders")).toBe(1);
    expect(sampleValue(after, "baton_agent_standbys")).toBe(0);
    // "closed", or "stale" if this loaded machine held a's last heartbeat past the one-second TTL.
    const reason = (await presence(agent)).transitions[0]!.reason;
    expect(sampleValue(after, "baton_lease_transitions_total", { reason })).toBe(1);
    const gap = after.get("baton_lease_gap_seconds")?.metrics[0];
    expect(gap?.count).toBe("1");
    if (reason === "closed") expect(gap?.buckets?.["0.01"]).toBe("1");

    b.sock.close();
    const empty = await until(agent, (m) => sampleValue(m, "baton_agent_holders") === 0);
    expect(sampleValue(empty, "baton_agent_connections")).toBe(0);
  });

  it("a silent holder's replacement is a stale transition whose gap starts at its heartbeat deadline", async () => {
    const agent = uniqueAgent();
    await freezeClock(agent);
    await claimant(agent, "silent", { silent: true });
    const b = await claimant(agent, "alive");
    await passTime(agent, 1200);
    await b.sock.next("serve_lease", (f) => f.held);
    const m = await until(agent, (f) => sampleValue(f, "baton_lease_transitions_total", { reason: "stale" }) === 1);
    const gap = m.get("baton_lease_gap_seconds")?.metrics[0];
    expect(gap?.count).toBe("1");
    // The deadline passed before the alarm ran, so the gap is positive; the alarm ran at the first
    // step of the clock past it, so the gap is at most one step.
    expect(Number(gap?.sum)).toBeGreaterThan(0);
    expect(Number(gap?.sum)).toBeLessThanOrEqual(0.4);
    b.sock.close();
  });

  it("refused writes are counted by code: a stale fence, a standby's write, a stale message token", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    a.sock.send({ type: "checkpoint", fence: 0, value: { step: 1 } });
    await a.sock.next("error", (f) => f.code === "stale_fence");
    b.sock.send({ type: "checkpoint", fence: 1, value: { step: 1 } });
    await b.sock.next("error", (f) => f.code === "not_holder");
    a.sock.send({ type: "checkpoint", fence: 7, value: { step: 2 } });
    await a.sock.next("error", (f) => f.code === "stale_fence");
    const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}` }, body: JSON.stringify({ text: "one" }),
    });
    expect(res.status).toBe(201);
    const handed = await a.sock.next("message", (f) => f.run);
    a.sock.send({ type: "checkpoint", id: handed.id, token: (handed.token ?? 0) + 1, value: { step: 3 } });
    await a.sock.next("error", (f) => f.code === "stale_token");
    const m = await until(agent, (f) => sampleValue(f, "baton_fence_rejections_total", { code: "stale_token" }) === 1);
    expect(sampleValue(m, "baton_fence_rejections_total", { code: "stale_fence" })).toBe(2);
    expect(sampleValue(m, "baton_fence_rejections_total", { code: "not_holder" })).toBe(1);
    a.sock.close();
    b.sock.close();
  });

  it("messages are tallied by status, with posts, deliveries and redeliveries", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    for (const text of ["one", "two"]) {
      const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
        method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}` }, body: JSON.stringify({ text }),
      });
      expect(res.status).toBe(201);
    }
    // One message runs at a time on the holder: the second is handed out once the first is done.
    const first = await a.sock.next("message", (f) => f.run);
    a.sock.send({ type: "ack", id: first.id, token: first.token });
    await a.sock.next("result");
    await a.sock.next("message", (f) => f.run && f.id !== first.id);
    const acked = await until(agent, (f) => sampleValue(f, "baton_messages", { status: "acknowledged" }) === 1
      && sampleValue(f, "baton_message_deliveries_total") === 2);
    expect(sampleValue(acked, "baton_messages", { status: "running" })).toBe(1);
    expect(sampleValue(acked, "baton_messages_posted_total")).toBe(2);
    expect(sampleValue(acked, "baton_message_redeliveries_total")).toBe(0);

    a.sock.close();
    const again = await b.sock.next("message", (f) => f.run);
    expect(again.attempt).toBe(2);
    const handed = await until(agent, (f) => sampleValue(f, "baton_message_redeliveries_total") === 1);
    expect(sampleValue(handed, "baton_message_deliveries_total")).toBe(3);
    expect(sampleValue(handed, "baton_messages", { status: "running" })).toBe(1);
    b.sock.close();
  });

  it("a hand-out after one a stopping runner declined is a delivery, not a redelivery: nothing was left unfinished", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const id = await post(agent, "handed out as the stop began");
    const first = await a.sock.next("message", (f) => f.run && f.id === id);
    await sayStopping(a.sock);
    expect(await write(a.sock, { type: "decline", id, token: first.token })).toMatchObject({ op: "decline" });
    expect(await b.sock.next("message", (f) => f.run && f.id === id)).toMatchObject({ attempt: 2 });
    const handed = await until(agent, (f) => sampleValue(f, "baton_message_deliveries_total") === 2);
    expect(sampleValue(handed, "baton_message_redeliveries_total")).toBe(0);
    a.sock.close();
    b.sock.close();
  });

  it("attempt 1 fails, 2 is declined, 3 runs: three deliveries and one redelivery (the one right after the declined hand-out is none), live and as the tally rebuilt from the stored messages alike", async () => {
    const agent = await frozenAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const id = await post(agent, "fails, then crosses a stop");
    const first = await a.sock.next("message", (f) => f.run && f.id === id);
    expect(await write(a.sock, { type: "fail", id, token: first.token, reason: "exit 1" })).toMatchObject({ op: "fail", status: "queued" });
    await passTime(agent, 1000);
    const second = await a.sock.next("message", (f) => f.run && f.id === id);
    expect(second).toMatchObject({ attempt: 2 });
    await sayStopping(a.sock);
    expect(await write(a.sock, { type: "decline", id, token: second.token })).toMatchObject({ op: "decline" });
    expect(await b.sock.next("message", (f) => f.run && f.id === id)).toMatchObject({ attempt: 3 });
    const live = await until(agent, (f) => sampleValue(f, "baton_message_deliveries_total") === 3);
    expect(sampleValue(live, "baton_message_redeliveries_total")).toBe(1);
    // An agent from before metrics starts its tally from the messages it stores (the backfill): the same count.
    const rebuilt = await runInDurableObject(stubFor(agent), (_i, state) => {
      const { sql } = state.storage;
      sql.exec(`DROP TABLE message_tally`);
      sql.exec(`DELETE FROM schema_versions WHERE store = 'message_tally'`);
      new AgentMetricsKeeper(sql);
      return Object.fromEntries(sql.exec<{ key: string; value: number }>(`SELECT key, value FROM message_tally WHERE key IN ('deliveries', 'redeliveries')`).toArray().map((r) => [r.key, r.value]));
    });
    expect(rebuilt).toEqual({ deliveries: 3, redeliveries: 1 });
    a.sock.close();
    b.sock.close();
  });

  it("session leases of the account are counted active, and expired once their TTL passed", async () => {
    const session = `s-${crypto.randomUUID()}`;
    // In an account of its own: shards hold every account's keys, and a move of this shard's clock
    // (or time) also ends other files' leases, which the dev account would count.
    const res = await SELF.fetch(`${BASE}/leases/${session}/acquire`, {
      method: "POST", headers: { Authorization: `Bearer ${LEASES_TOKEN}` },
      body: JSON.stringify({ run_id: crypto.randomUUID(), ttl_seconds: 1 }),
    });
    expect(res.status).toBe(201);
    const before = parseMetrics(await scrape(LEASES_TOKEN));
    expect(sampleValue(before, "baton_session_leases", { state: "active" })).toBe(1);
    await advanceClock(1000, { session, token: LEASES_TOKEN });
    const after = parseMetrics(await scrape(LEASES_TOKEN));
    expect(sampleValue(after, "baton_session_leases", { state: "active" }) ?? 0).toBe(0);
    expect(sampleValue(after, "baton_session_leases", { state: "expired" })).toBe(1);
  });

  it("1,000 agents' reports are answered from the directory alone, without any agent object", async () => {
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName("directory:dev"));
    const prefix = `bulk-${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    await Promise.all(Array.from({ length: 1000 }, (_, i): Promise<void> => {
      const snapshot: AgentMetrics = {
        agent: `${prefix}-${i}`, reported_at: now, connections: 2, holders: 1, standbys: 1, fence: i + 1,
        counters: { transitions: { claimed: 1 }, gapSeconds: EMPTY_COUNTERS.gapSeconds, refusals: {} },
        messages: { byStatus: {}, posted: 0, deliveries: 0, redeliveries: 0 },
      };
      return directory.reportMetrics(snapshot);
    }));
    await scrape(); // wakes the lease shards, so the timing below is of a warm scrape
    const started = Date.now();
    const text = await scrape();
    console.log(`a scrape of ${text.split("\n").length} lines (${text.length} bytes) took ${Date.now() - started} ms`);
    const holders = parseMetrics(text).get("baton_agent_holders")?.metrics.filter((m) => m.labels?.agent?.startsWith(prefix));
    expect(holders).toHaveLength(1000);
    expect(sampleValue(agentMetrics(text, `${prefix}-999`), "baton_agent_fence")).toBe(1000);
  });
});
