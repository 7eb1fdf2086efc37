// The on_busy policy in a real agent object: reject refuses a post while the group is busy (409
// busy, naming the holder, nothing stored); interrupt cancels the group's running message (its
// runner told) and the new one runs; replace supersedes never-started queued ones, and with a
// debounce a burst becomes one run. Other groups are not touched.
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { runInDurableObject } from "cloudflare:test";
import { call, claimant, message, post, presence, sayStopping, settle, stubFor, uniqueAgent, write, type TestSocket } from "./helpers.ts";
import { freezeClock, passTime } from "./clock.ts";

const run = (sock: TestSocket, id: number, timeoutMs?: number): Promise<MessageFrame> => sock.next("message", (f) => f.run && f.id === id, timeoutMs);
const setPolicy = async (agent: string, body: Record<string, unknown>) => {
  const res = await call("PUT", `/agents/${agent}/policy`, body);
  expect(res.status).toBe(200);
  return res.body;
};

describe("on_busy", () => {
  it("the policy shows on_busy and debounce_ms; queue is the default; a bad value is 400 and changes nothing", async () => {
    const agent = uniqueAgent();
    expect((await call("GET", `/agents/${agent}/policy`)).body).toMatchObject({ on_busy: "queue", debounce_ms: null });
    expect(await setPolicy(agent, { on_busy: "replace", debounce_ms: 250 })).toMatchObject({ on_busy: "replace", debounce_ms: 250 });
    expect((await call("PUT", `/agents/${agent}/policy`, { on_busy: "drop" })).status).toBe(400);
    expect((await call("PUT", `/agents/${agent}/policy`, { debounce_ms: 600_001 })).status).toBe(400);
    expect((await call("GET", `/agents/${agent}/policy`)).body).toMatchObject({ on_busy: "replace", debounce_ms: 250, debounce_max_ms: 2500 });
    expect(await setPolicy(agent, { debounce_max_ms: 1000 })).toMatchObject({ debounce_ms: 250, debounce_max_ms: 1000 });
    expect((await call("PUT", `/agents/${agent}/policy`, { debounce_max_ms: 3_600_001 })).status).toBe(400);
    expect((await call("PUT", `/agents/${agent}/policy`, { debounce_max_ms: -1 })).status).toBe(400);
    expect((await call("GET", `/agents/${agent}/policy`)).body).toMatchObject({ debounce_ms: 250, debounce_max_ms: 1000 });
  });

  it("a debounce outside on_busy replace is refused by the server with 400 and nothing changes; leaving replace drops the debounce", async () => {
    const agent = uniqueAgent();
    const refused = await call("PUT", `/agents/${agent}/policy`, { on_busy: "queue", debounce_ms: 300 });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("only applies with on_busy replace");
    expect((await call("PUT", `/agents/${agent}/policy`, { debounce_max_ms: 900 })).status).toBe(400);
    expect((await call("GET", `/agents/${agent}/policy`)).body).toMatchObject({ on_busy: "queue", debounce_ms: null, debounce_max_ms: null });
    await setPolicy(agent, { on_busy: "replace", debounce_ms: 300 });
    expect((await call("PUT", `/agents/${agent}/policy`, { on_busy: "interrupt", debounce_ms: 300 })).status).toBe(400);
    expect((await call("GET", `/agents/${agent}/policy`)).body).toMatchObject({ on_busy: "replace", debounce_ms: 300 });
    expect(await setPolicy(agent, { on_busy: "reject" })).toMatchObject({ on_busy: "reject", debounce_ms: null, debounce_max_ms: null });
    expect(await setPolicy(agent, { on_busy: "queue", debounce_ms: 0 })).toMatchObject({ on_busy: "queue", debounce_ms: null });
  });

  it("reject: a post while its group is queued or running is 409 busy naming the holder, and nothing is stored; another group is free", async () => {
    const agent = uniqueAgent();
    await setPolicy(agent, { on_busy: "reject" });
    const first = await post(agent, "one", { group: "chat" });
    const refused = await call("POST", `/agents/${agent}/messages`, { text: "two", group: "chat" });
    expect(refused).toMatchObject({ status: 409, body: { error: "busy", holder: first, message: `group "chat" is busy: message ${first} is queued (on_busy reject); nothing was stored` } });
    const other = await post(agent, "elsewhere", { group: "other" });
    expect(other).toBe(first + 1);
    expect((await presence(agent)).work.counts.queued).toBe(2);
  });

  it("interrupt: the group's running message is cancelled (its runner told why) and the new one runs", async () => {
    const agent = uniqueAgent();
    await setPolicy(agent, { on_busy: "interrupt" });
    const a = await claimant(agent, "a");
    const first = await post(agent, "long", { group: "chat" });
    const m = await run(a.sock, first);
    const second = await post(agent, "newer", { group: "chat" });
    expect(await a.sock.next("cancel", (f) => f.id === first)).toEqual({ type: "cancel", id: first, token: m.token, reason: `interrupted by message ${second}`, by: "default" });
    await run(a.sock, second);
    expect(await message(agent, first)).toMatchObject({ status: "cancelled", cancelled: { reason: `interrupted by message ${second}`, token: "default" } });
  });

  it("interrupt: the new one runs next, before an older queued message of its group, which stays queued and runs after", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const first = await post(agent, "long", { group: "chat" });
    const m = await run(a.sock, first);
    const older = await post(agent, "older, queued", { group: "chat" });
    await setPolicy(agent, { on_busy: "interrupt" });
    const newest = await post(agent, "stop, do this", { group: "chat" });
    await a.sock.next("cancel", (f) => f.id === first);
    const next = await run(a.sock, newest);
    expect(await message(agent, older)).toMatchObject({ status: "queued" });
    expect(await write(a.sock, { type: "ack", id: newest, token: next.token })).toMatchObject({ op: "ack" });
    await run(a.sock, older);
    expect(m.token).toBeLessThan(next.token!);
  });

  it("replace: queued never-started messages of the group end superseded by the new one, which alone runs; a running one finishes", async () => {
    const agent = uniqueAgent();
    await setPolicy(agent, { on_busy: "replace" });
    const ids = [await post(agent, "v1", { group: "doc" }), await post(agent, "v2", { group: "doc" }), await post(agent, "v3", { group: "doc" })];
    expect(await message(agent, ids[0]!)).toMatchObject({ status: "superseded", superseded_by: ids[1] });
    expect(await message(agent, ids[1]!)).toMatchObject({ status: "superseded", superseded_by: ids[2] });
    const a = await claimant(agent, "a");
    await run(a.sock, ids[2]!);
    const later = await post(agent, "v4", { group: "doc" });
    expect(await message(agent, ids[2]!)).toMatchObject({ status: "running" });
    expect(await message(agent, later)).toMatchObject({ status: "queued" });
    expect(a.sock.framesOf("message").filter((f) => f.run && f.id !== ids[2]).map((f) => f.id)).toEqual([]);
  });

  describe("replace supersedes a queued message that has not started since its latest retry (message-store.ts busyGroup's never-started read)", () => {
    it("a queued message whose only hand-out a stopping runner declined is superseded by a replace post in its group", async () => {
      const agent = uniqueAgent();
      await setPolicy(agent, { on_busy: "replace" });
      const a = await claimant(agent, "a");
      const first = await post(agent, "v1", { group: "doc" });
      const handed = await run(a.sock, first);
      await sayStopping(a.sock);
      expect(await write(a.sock, { type: "decline", id: first, token: handed.token })).toMatchObject({ op: "decline" });
      expect(await message(agent, first)).toMatchObject({ status: "queued", attempts: 1, declined: 1 });
      const second = await post(agent, "v2", { group: "doc" });
      expect(await message(agent, first)).toMatchObject({ status: "superseded", superseded_by: second, attempts: 1 });
      expect(await message(agent, second)).toMatchObject({ status: "queued" });
    });

    it("a failed message a person retried, not handed out again, is superseded by a replace post in its group", async () => {
      const agent = uniqueAgent();
      await setPolicy(agent, { on_busy: "replace", max_attempts: 1 });
      const a = await claimant(agent, "a");
      const first = await post(agent, "v1", { group: "doc" });
      const handed = await run(a.sock, first);
      expect(await write(a.sock, { type: "fail", id: first, token: handed.token, reason: "exit 1" })).toMatchObject({ op: "fail", status: "failed" });
      await sayStopping(a.sock);
      expect(await call("POST", `/agents/${agent}/messages/${first}/retry`, {})).toMatchObject({ status: 200, body: { status: "queued", attempts: 1, retried_after: 1 } });
      const second = await post(agent, "v2", { group: "doc" });
      expect(await message(agent, first)).toMatchObject({ status: "superseded", superseded_by: second, attempts: 1, retried_after: 1 });
    });

    it("a queued message whose declines outnumber its hand-outs (attempts 0, declined 2: tries clamped at 0) is superseded by a replace post in its group", async () => {
      const agent = uniqueAgent();
      await setPolicy(agent, { on_busy: "replace" });
      const first = await post(agent, "v1", { group: "doc" });
      // As a retry that started attempts again at 0 and kept the declines would have left it.
      await runInDurableObject(stubFor(agent), (_i, state) => {
        state.storage.sql.exec(`UPDATE messages SET declined = 2, token = 5 WHERE id = ?`, first);
      });
      const second = await post(agent, "v2", { group: "doc" });
      expect(await message(agent, first)).toMatchObject({ status: "superseded", superseded_by: second, attempts: 0, declined: 2 });
    });
  });

  it("replace with a debounce: a burst becomes one run, of the last message, once the debounce passed", async () => {
    const agent = uniqueAgent();
    await setPolicy(agent, { on_busy: "replace", debounce_ms: 300 });
    await freezeClock(agent);
    const a = await claimant(agent, "a");
    const burst = [await post(agent, "a"), await post(agent, "ab"), await post(agent, "abc")];
    await passTime(agent, 250);
    await settle(a.sock);
    expect(a.sock.framesOf("message").filter((f) => f.run)).toEqual([]);
    await passTime(agent, 50);
    const m = await run(a.sock, burst[2]!);
    expect(m.text).toBe("abc");
    expect(a.sock.framesOf("message").filter((f) => f.run && f.id !== burst[2]).map((f) => f.id)).toEqual([]);
    for (const id of burst.slice(0, 2)) expect((await message(agent, id)).status).toBe("superseded");
  });

  it("replace with a debounce: a steady trickle under the debounce still runs, its latest message debounce_max after the burst's first", async () => {
    const agent = uniqueAgent();
    await setPolicy(agent, { on_busy: "replace", debounce_ms: 300, debounce_max_ms: 1000 });
    await freezeClock(agent);
    const a = await claimant(agent, "a");
    // One message every 200 ms, each inside the last one's debounce: without a ceiling none would ever run.
    const trickle: number[] = [];
    for (let i = 0; i < 5; i++) {
      if (i > 0) await passTime(agent, 200);
      trickle.push(await post(agent, `part ${i}`));
    }
    await passTime(agent, 150);
    await settle(a.sock);
    expect(a.sock.framesOf("message").filter((f) => f.run)).toEqual([]);
    await passTime(agent, 50);
    expect((await run(a.sock, trickle[4]!)).text).toBe("part 4");
    for (const id of trickle.slice(0, 4)) expect((await message(agent, id)).status).toBe("superseded");
    // The next post begins a burst of its own (held a whole debounce), queued behind the running one.
    const next = await post(agent, "after");
    const held = await message(agent, next);
    expect(held.retry_at).toBe((held.created_at as number) + 300);
  });

  describe("decides on the whole group, past any window of it", () => {
    // 505 posts through HTTP take most of a minute in workerd, so the rows are copied in SQL:
    // queued ones as a post inserts them (column defaults) into an object nothing has read yet, and
    // questions for a person as copies of one posted for real. Those copies change neither the open
    // messages an event reads nor the park deadline (they have none), so nothing cached goes stale.
    const N = 505;
    async function seedQueued(agent: string, group: string): Promise<void> {
      await runInDurableObject(stubFor(agent), (_i, state) => {
        state.storage.sql.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
          INSERT INTO messages (text, created_at, msg_group) SELECT 'm' || i, 1, ? FROM n`, N, group);
      });
    }
    async function questions(agent: string): Promise<void> {
      const id = await post(agent, "Ship it?", { question: { text: "Ship it?", choices: ["ship", "hold"] } });
      await runInDurableObject(stubFor(agent), (_i, state) => {
        const columns = state.storage.sql.exec<{ name: string }>(`SELECT name FROM pragma_table_info('messages') WHERE name != 'id'`).toArray().map((c) => c.name).join(", ");
        state.storage.sql.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
          INSERT INTO messages (${columns}) SELECT ${columns} FROM messages, n WHERE id = ?`, N - 1, id);
      });
    }

    it("replace: all 505 queued messages of the group end superseded by the new one, which alone runs", async () => {
      const agent = uniqueAgent();
      await seedQueued(agent, "doc");
      await setPolicy(agent, { on_busy: "replace" });
      const newest = await post(agent, "v506", { group: "doc" });
      expect(newest).toBe(N + 1);
      expect((await presence(agent)).work.counts).toMatchObject({ queued: 1, superseded: N });
      for (const id of [1, 500, N]) expect(await message(agent, id)).toMatchObject({ status: "superseded", superseded_by: newest });
      const a = await claimant(agent, "a");
      await run(a.sock, newest);
    });

    it("reject: behind 505 questions for a person, a post while the agent's one message runs is 409 busy and nothing is stored", async () => {
      const agent = uniqueAgent();
      await questions(agent);
      const a = await claimant(agent, "a");
      const first = await post(agent, "long");
      await run(a.sock, first);
      await setPolicy(agent, { on_busy: "reject" });
      const refused = await call("POST", `/agents/${agent}/messages`, { text: "two" });
      expect(refused).toMatchObject({ status: 409, body: { error: "busy", holder: first } });
      expect((await presence(agent)).work.counts).toMatchObject({ running: 1, queued: 0, parked: N });
    });

    it("interrupt: behind 505 questions for a person, the running message is cancelled and the new one runs", async () => {
      const agent = uniqueAgent();
      await questions(agent);
      const a = await claimant(agent, "a");
      const first = await post(agent, "long");
      await run(a.sock, first);
      await setPolicy(agent, { on_busy: "interrupt" });
      const second = await post(agent, "newer");
      await a.sock.next("cancel", (f) => f.id === first);
      await run(a.sock, second);
      expect(await message(agent, first)).toMatchObject({ status: "cancelled", cancelled: { reason: `interrupted by message ${second}` } });
    });
  });
});
