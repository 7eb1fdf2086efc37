// Stored JSON read through its codec (worker/rules/stored-json.ts): one corrupt row of each
// store (text that is not JSON, or JSON of the wrong shape) never takes its object down. Each
// store does what it says it does with one: the row is skipped, or read as its named default,
// and every other row and read goes on.
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AgentCheckpointTable } from "../../worker/objects/agent-checkpoint.ts";
import { AgentControls } from "../../worker/objects/agent-controls.ts";
import { AgentStore } from "../../worker/objects/agent-store.ts";
import { MessageStore } from "../../worker/objects/message-store.ts";
import { messageFrame, messageView, questionOf } from "../../worker/objects/message-row.ts";
import { AgentMetricsKeeper } from "../../worker/objects/metrics-agent.ts";
import { MetricsBoard } from "../../worker/objects/metrics-directory.ts";
import { RunPolicyStore } from "../../worker/objects/run-policy-store.ts";
import { ScheduleStore, type NewSchedule } from "../../worker/objects/schedule-store.ts";
import { WebhookOutbox } from "../../worker/objects/webhook-outbox.ts";
import { DEFAULT_POLICY } from "../../worker/rules/message-lease.ts";
import type { AgentMetrics } from "../../worker/rules/metrics.ts";
import { auth, BASE, call, claimant, connect, message, post, presence, stubFor, uniqueAgent, waitFor, write } from "./helpers.ts";
import { frozenAgent, passUntil } from "./clock.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";

const NOT_JSON = "{not json";

const schedule = (text: string): NewSchedule => ({
  cadence: { kind: "every", everyMs: 60_000, from: 0 }, tz: "UTC", text, group: null, runTimeoutMs: null, onBusy: null, catchUp: "none",
  jitterMs: 0, paused: false, createdAt: 0,
});

async function inAgent(fn: (sql: SqlStorage) => void): Promise<void> {
  const agent = uniqueAgent();
  await post(agent, "make the tables");
  await runInDurableObject(stubFor(agent), (_i, state) => fn(state.storage.sql));
}

describe("a corrupt stored JSON row", () => {
  it("a schedule whose cadence is corrupt is skipped; the agent's other schedules are still listed", async () => {
    await inAgent((sql) => {
      const store = new ScheduleStore(sql);
      const bad = store.add(schedule("bad"));
      const good = store.add(schedule("good"));
      sql.exec(`UPDATE schedules SET cadence = ? WHERE id = ?`, NOT_JSON, bad.id);
      expect(new ScheduleStore(sql).all().map((s) => s.id)).toEqual([good.id]);
      sql.exec(`UPDATE schedules SET cadence = ? WHERE id = ?`, JSON.stringify({ kind: "every", everyMs: "soon" }), good.id);
      expect(new ScheduleStore(sql).all()).toEqual([]);
    });
  });

  it("a corrupt policy runs as the default policy; a corrupt reservation holds the lease for nobody", async () => {
    await inAgent((sql) => {
      sql.exec(`INSERT INTO run_meta (key, value) VALUES ('policy', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, JSON.stringify({ maxRunning: "all" }));
      expect(new RunPolicyStore(sql).policy()).toEqual(DEFAULT_POLICY);
      sql.exec(`INSERT INTO controls (key, value) VALUES ('reserved', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, NOT_JSON);
      const controls = new AgentControls(sql, { restartGraceMs: 10_000, hysteresisMs: 0 });
      expect([controls.snapshot(Date.now()).reserved, controls.snapshot(Date.now()).reservedMachine]).toEqual([null, null]);
    });
  });

  it("a corrupt policy is shown as unreadable, beside the defaults it runs with, by the policy route, presence and the who list, until one is saved", async () => {
    const agent = uniqueAgent();
    // Then the object restarts (abort), so it reads the corrupt row as it would after any restart.
    await runInDurableObject(stubFor(agent), (_i, state) => {
      state.storage.sql.exec(`INSERT INTO run_meta (key, value) VALUES ('policy', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, JSON.stringify({ mode: "pool", maxRunning: "all" }));
    });
    await runInDurableObject(stubFor(agent), (_i, state) => state.abort("read the stored policy again")).catch(() => undefined);
    const unreadable = /^run_meta\.policy holds JSON of the wrong shape at maxRunning: /;
    const shown = await call("GET", `/agents/${agent}/policy`);
    expect(shown.body).toMatchObject({ mode: DEFAULT_POLICY.mode, max_running: DEFAULT_POLICY.maxRunning, policy_problem: expect.stringMatching(unreadable) });
    await post(agent, "listed in the directory while it waits");
    expect((await presence(agent)).work).toMatchObject({ mode: DEFAULT_POLICY.mode, policy_problem: expect.stringMatching(unreadable) });
    const whoEntry = async () => ((await call("GET", "/agents?view=who")).body.agents as { agent: string; work: { policy_problem?: string } }[]).find((a) => a.agent === agent);
    await waitFor(async () => (await whoEntry())?.work.policy_problem !== undefined, "the who list to show the unreadable policy");
    expect((await whoEntry())!.work.policy_problem).toMatch(unreadable);
    const saved = await call("PUT", `/agents/${agent}/policy`, { max_running: 2 });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({ max_running: 2 });
    expect(saved.body).not.toHaveProperty("policy_problem");
    expect((await presence(agent)).work).not.toHaveProperty("policy_problem");
  });

  it("a corrupt lease holds for nobody and keeps the latest fence; a corrupt identity is unknown until the next request by name", async () => {
    await inAgent((sql) => {
      const store = new AgentStore(sql);
      store.saveLease({ fence: 7, holderClaim: 3, holderMachine: "m", since: 1 },
        { at: 1, fromClaim: null, toClaim: 3, fromMachine: null, toMachine: "m", fence: 7, reason: "claimed" });
      sql.exec(`UPDATE meta SET value = ? WHERE key = 'lease'`, JSON.stringify({ fence: "seven" }));
      sql.exec(`INSERT INTO meta (key, value) VALUES ('identity', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, NOT_JSON);
      const after = new AgentStore(sql);
      expect(after.lease()).toEqual({ fence: 7, holderClaim: null, holderMachine: null, since: null });
      expect(after.identity(null)).toBeNull();
    });
  });

  it("corrupt lease counters start from empty; a corrupt checkpoint reads as none", async () => {
    await inAgent((sql) => {
      sql.exec(`INSERT INTO metrics_counters (one, counters) VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET counters = excluded.counters`, NOT_JSON);
      expect(() => new AgentMetricsKeeper(sql)).not.toThrow();
      const checkpoint = new AgentCheckpointTable(sql);
      checkpoint.save({ step: 1 }, 1, 1);
      sql.exec(`UPDATE checkpoint SET value = ?`, NOT_JSON);
      expect(checkpoint.get()).toBeNull();
    });
  });

  it("a message's corrupt question, checkpoint, progress and cancel record read as none; the message itself still reads", async () => {
    await inAgent((sql) => {
      const store = new MessageStore(sql);
      const m = store.get(1)!;
      store.patch(1, { status: "cancelled", question: NOT_JSON, checkpoint: NOT_JSON, progress: "[1,", cancel: JSON.stringify({ at: "then" }) });
      const row = store.get(1)!;
      expect(questionOf(row)).toBeNull();
      const view = messageView(row, [], []);
      expect([view.id, view.checkpoint, view.progress, view.cancelled]).toEqual([m.id, null, null, null]);
      expect(messageFrame(row, true, DEFAULT_POLICY).id).toBe(m.id);
    });
  });

  it("an outbox event with corrupt facts is dropped and counted; the events after it are still sent", async () => {
    await inAgent((sql) => {
      const outbox = new WebhookOutbox(sql);
      const facts = { type: "message.failed", message: { id: 1 } } as never;
      const bad = outbox.enqueue(facts, 1);
      const good = outbox.enqueue(facts, 1);
      sql.exec(`UPDATE webhook_outbox SET facts = ? WHERE event_id = ?`, NOT_JSON, bad);
      const dropped = outbox.stats().dropped;
      expect(outbox.claimDue(2).map((e) => e.eventId)).toEqual([good]);
      expect(outbox.stats().dropped).toBe(dropped + 1);
      expect(outbox.pending()).toBe(1);
    });
  });

  it("a directory's corrupt metrics snapshot is left out of /metrics; the other agents' are scraped", async () => {
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(`directory:corrupt-${crypto.randomUUID()}`));
    await runInDurableObject(directory, (_i, state) => {
      const board = new MetricsBoard(state.storage.sql);
      const snapshot = (agent: string) => ({
        agent, reported_at: 1, connections: 0, holders: 0, standbys: 0, fence: 0,
        counters: { transitions: {}, gapSeconds: { buckets: [], count: 0, sum: 0 }, refusals: {} },
        messages: { byStatus: { queued: 1 }, posted: 1, deliveries: 0, redeliveries: 0 },
      } satisfies AgentMetrics);
      board.accept(snapshot("bad"), 10);
      board.accept(snapshot("good"), 10);
      state.storage.sql.exec(`UPDATE agent_metrics SET snapshot = ? WHERE agent = 'bad'`, NOT_JSON);
      expect(board.snapshots(2).map((s) => s.agent)).toEqual(["good"]);
    });
  });

  it("a directory entry that is corrupt is left out of GET /agents until its agent reports again; the others are listed", async () => {
    const [bad, good] = [uniqueAgent(), uniqueAgent()];
    const socks = [await connect(bad), await connect(good)];
    const names = async () => ((await call("GET", "/agents")).body.agents as { agent: string }[]).map((a) => a.agent);
    await waitFor(async () => (await names()).includes(bad) && (await names()).includes(good), "both agents listed");
    await runInDurableObject(env.DIRECTORY.get(env.DIRECTORY.idFromName("directory:dev")), (_i, state) => {
      state.storage.sql.exec(`UPDATE agents SET entry = ? WHERE agent = ?`, NOT_JSON, bad);
    });
    const listed = await names();
    expect([listed.includes(bad), listed.includes(good)]).toEqual([false, true]);
    for (const s of socks) s.close();
  });

  it("a step whose stored value is corrupt answers 500 naming its row; the message and its other steps still read", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "steps");
    await runInDurableObject(stubFor(agent), (_i, state) => {
      for (const [name, value] of [["bad", NOT_JSON], ["good", "1"]]) {
        state.storage.sql.exec(`INSERT INTO message_steps (message_id, name, kind, status, value, attempt, token, at) VALUES (?, ?, 'step', 'done', ?, 1, 1, 1)`, id, name, value);
      }
    });
    const bad = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/steps/bad`, { headers: auth });
    expect(bad.status).toBe(500);
    expect(await bad.json()).toMatchObject({ error: "internal", message: expect.stringContaining("message_steps.value") });
    expect((await call("GET", `/agents/${agent}/messages/${id}/steps/good`)).body).toMatchObject({ value: 1 });
    expect((await call("GET", `/agents/${agent}/messages/${id}`)).status).toBe(200);
  });

  // Before: the escalation's webhook facts parsed the stored question with a bare JSON.parse
  // (rules/webhooks.ts), so its deadline threw inside apply, and the alarm failed on the same row.
  it("a parked message whose stored question is corrupt still escalates at its deadline, and the object goes on", async () => {
    const agent = await frozenAgent();
    // A webhook, so the escalation makes an event and its facts read the question.
    expect((await call("PUT", `/agents/${agent}/webhook`, { url: "http://receiver.test/status/503", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" })).status).toBe(200);
    const a = await claimant(agent, "a");
    const id = await post(agent, "e");
    const m = await a.sock.next("message", (f) => f.run && f.id === id) as MessageFrame;
    await write(a.sock, { type: "park", id, token: m.token, question: { text: "q", on_deadline: "escalate" }, deadline_seconds: 1 });
    const first = (await message(agent, id)).expires_at as number;
    await runInDurableObject(stubFor(agent), (_i, state) => void state.storage.sql.exec(`UPDATE messages SET question = ? WHERE id = ?`, NOT_JSON, id));
    await passUntil(agent, first);
    const escalated = await message(agent, id);
    expect(escalated).toMatchObject({ status: "parked" });
    expect(escalated.expires_at as number).toBeGreaterThan(first);
    const next = await post(agent, "next");
    expect((await message(agent, next)).id).toBe(next);
  });
});
