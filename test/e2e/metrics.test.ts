// GET /metrics against a real `wrangler dev` (the shared one, in an account of the file's own so
// only its agents show): the text parses with a Prometheus parser from npm, and its values change
// with a handoff. The clocks of the agent and of the account's directory stand still (the test
// clock), so no heartbeat TTL lapses on a loaded machine and every change below is one the test made.
import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { ParsedFamily } from "parse-prometheus-text-format";
import { agentMetrics, parseMetrics, sampleValue } from "./prometheus.ts";
import { authHeaders, postMessage, sharedServeFixture, token, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { advanceClock } from "./wrangler-dev.ts";

const fx = sharedServeFixture({ account: "metrics" });
const sockets: WebSocket[] = [];

afterAll(() => {
  for (const ws of sockets) ws.terminate();
});

/** A serve connection that claims, heartbeats every second, and resolves once told whether it holds. */
async function serve(agent: string, machine: string): Promise<{ ws: WebSocket; held: boolean }> {
  const ws = new WebSocket(`${fx.dev.url.replace("http", "ws")}/agents/${agent}/serve?machine=${machine}`, { headers: { authorization: `Bearer ${token()}` } });
  sockets.push(ws);
  const held = await new Promise<boolean>((resolve, reject) => {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { type: string; held?: boolean };
      if (frame.type === "welcome") ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
      if (frame.type === "serve_lease") resolve(frame.held === true);
    });
    ws.once("error", reject);
  });
  const beat = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send('{"type":"ping"}'), 1000);
  ws.once("close", () => clearInterval(beat));
  return { ws, held };
}

async function scrape(): Promise<string> {
  const res = await fetch(`${fx.dev.url}/metrics`, { headers: authHeaders() });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain; version=0.0.4");
  return res.text();
}

/** Scrapes until the agent's figures satisfy `done`; agent objects report to the directory 10 ms after a change. */
async function until(agent: string, done: (m: Map<string, ParsedFamily>) => boolean, timeoutMs = 15_000): Promise<Map<string, ParsedFamily>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const families = agentMetrics(await scrape(), agent);
    if (done(families)) return families;
    if (Date.now() > deadline) throw new Error(`metrics of ${agent} never matched: ${JSON.stringify([...families.values()])}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("GET /metrics", () => {
  it("needs the token, parses as Prometheus text, and a handoff moves the fence, the transitions, the gap and the redeliveries", async () => {
    expect((await fetch(`${fx.dev.url}/metrics`)).status).toBe(401);
    const agent = uniqueAgent("metrics");
    // The account's directory (which judges the heartbeats the agent reports) stands still first, then the agent.
    await advanceClock(fx.dev.url, 0, {}, token());
    await advanceClock(fx.dev.url, 0, { agent }, token());
    const a = await serve(agent, "alpha");
    expect(a.held).toBe(true);
    const b = await serve(agent, "beta");
    expect(b.held).toBe(false);
    const id = await postMessage(fx.dev.url, agent, "work that alpha never finishes");
    await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "running");

    const before = await until(agent, (m) => sampleValue(m, "baton_agent_standbys") === 1 && sampleValue(m, "baton_message_deliveries_total") === 1);
    const all = parseMetrics(await scrape());
    for (const name of ["baton_agent_holders", "baton_agent_fence", "baton_lease_transitions_total", "baton_lease_gap_seconds", "baton_messages", "baton_message_deliveries_total"]) {
      expect(all.has(name), name).toBe(true);
    }
    expect(sampleValue(before, "baton_agent_holders")).toBe(1);
    expect(sampleValue(before, "baton_agent_fence")).toBe(1);
    expect(sampleValue(before, "baton_lease_transitions_total", { reason: "claimed" })).toBe(1);
    expect(sampleValue(before, "baton_lease_transitions_total", { reason: "closed" })).toBeUndefined();
    expect(before.get("baton_lease_gap_seconds")?.metrics[0]?.count).toBe("0");
    expect(sampleValue(before, "baton_messages", { status: "running" })).toBe(1);

    a.ws.terminate();
    const after = await until(agent, (m) => sampleValue(m, "baton_agent_fence") === 2);
    expect(sampleValue(after, "baton_agent_holders")).toBe(1);
    expect(sampleValue(after, "baton_agent_standbys")).toBe(0);
    expect(sampleValue(after, "baton_lease_transitions_total", { reason: "closed" })).toBe(1);
    expect(after.get("baton_lease_gap_seconds")?.metrics[0]?.count).toBe("1");
    expect(sampleValue(after, "baton_message_deliveries_total")).toBe(2);
    expect(sampleValue(after, "baton_message_redeliveries_total")).toBe(1);
  });
});
