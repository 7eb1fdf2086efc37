// A run's live output in the real runtime: only the attempt that holds the message writes it, a
// second reader sees it while the run goes on (JSON pages and Server-Sent Events), attempts are
// marked where they begin and end, a reader resumes from its last event without loss or repeat,
// past the per-message budget (64 KiB here, vitest.workers.config.ts) the oldest bytes go and
// readers are told how many, and past the agent's budget (128 KiB here) the oldest finished
// messages' output goes whole, never a running one's.
import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LIMITS, type MessageFrame } from "../../worker/wire/protocol.ts";
import type { OutputEvent, OutputPage } from "../../worker/wire/output.ts";
import { auth, BASE, call, claimant, post, settle, stubFor, uniqueAgent, write, type TestSocket } from "./helpers.ts";
import { passTime } from "./clock.ts";
import { OutputStore } from "../../worker/objects/output-store.ts";

function run(sock: TestSocket, id: number): Promise<MessageFrame> {
  return sock.next("message", (f) => f.run && f.id === id);
}

function out(sock: TestSocket, m: MessageFrame, ...texts: string[]) {
  return write(sock, { type: "output", id: m.id, token: m.token, chunks: texts.map((text) => ({ stream: "stdout", text })) });
}

async function page(agent: string, id: number, from = 0): Promise<OutputPage> {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output?format=json&from=${from}`, { headers: auth });
  expect(res.status).toBe(200);
  return (await res.json()) as OutputPage;
}

/** Every stored event after `from`, page by page. */
async function all(agent: string, id: number, from = 0): Promise<OutputEvent[]> {
  const events: OutputEvent[] = [];
  for (let p = await page(agent, id, from); ; p = await page(agent, id, p.cursor)) {
    events.push(...p.events);
    if (!p.more) return events;
  }
}

const texts = (events: OutputEvent[]) => events.flatMap((e) => (e.type === "chunk" ? [e.text ?? ""] : []));

/** Reads SSE text until `done` holds for what arrived, then cancels the stream. */
async function readSse(res: Response, done: (events: { id?: string; event: string; data: OutputEvent }[]) => boolean) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const events: { id?: string; event: string; data: OutputEvent }[] = [];
  while (!done(events)) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    buffer += value;
    let cut: number;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const fields = Object.fromEntries(block.split("\n").filter((l) => !l.startsWith(":") && l.includes(": ")).map((l) => [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)]));
      if (fields.data !== undefined) events.push({ id: fields.id, event: fields.event!, data: JSON.parse(fields.data) as OutputEvent });
    }
  }
  await reader.cancel();
  return events;
}

describe("live output", () => {
  it("the running attempt's chunks are stored in order with offsets, attempt and machine, marked where the attempt began and ended", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "laptop-1");
    const id = await post(agent, "work");
    const m = await run(a, id);
    expect(await out(a, m, "hello ", "wörld\n")).toMatchObject({ type: "result", op: "output", id, token: m.token, offset: 13 });
    expect(await write(a, { type: "output", id, token: m.token, chunks: [{ stream: "stderr", base64: btoa("\xff\x00bad") }] })).toMatchObject({ offset: 18 });
    const running = await page(agent, id);
    expect(running).toMatchObject({ status: "running", final: false, more: false });
    expect(running.events).toMatchObject([
      { type: "attempt", attempt: 1, machine: "laptop-1" },
      { type: "chunk", offset: 0, attempt: 1, machine: "laptop-1", stream: "stdout", text: "hello " },
      { type: "chunk", offset: 6, stream: "stdout", text: "wörld\n" },
      { type: "chunk", offset: 13, stream: "stderr", base64: btoa("\xff\x00bad") },
    ]);
    await write(a, { type: "reply", id, token: m.token, key: "k", text: "done" });
    const done = await page(agent, id, running.cursor);
    expect(done).toMatchObject({ status: "acknowledged", final: true, events: [{ type: "attempt_end", attempt: 1, reason: "replied" }] });
  });

  it("a chunk under a stale token is refused and no reader sees it; the new attempt's output follows the takeover in order", async () => {
    const agent = uniqueAgent();
    await call("PUT", `/agents/${agent}/policy`, { mode: "pool" });
    const { sock: a } = await claimant(agent, "laptop-1");
    const id = await post(agent, "work", { run_timeout_seconds: 1 });
    const first = await run(a, id);
    await out(a, first, "a1 ");
    const { sock: b } = await claimant(agent, "laptop-2");
    await passTime(agent, 1000);
    const second = await run(b, id);
    // A, paused through the takeover, wakes and writes: refused like any stale write.
    expect(await out(a, first, "LATE")).toMatchObject({ type: "error", code: "stale_token" });
    await out(b, second, "b1 ", "b2");
    const events = await all(agent, id);
    expect(texts(events)).toEqual(["a1 ", "b1 ", "b2"]);
    expect(events.map((e) => e.type === "chunk" ? `${e.attempt}:chunk` : e.type === "attempt_end" ? `end:${e.reason}` : e.type === "attempt" ? `${e.attempt}@${e.machine}` : e.type))
      .toEqual(["1@laptop-1", "1:chunk", "end:timed_out", "2@laptop-2", "2:chunk", "2:chunk"]);
  });

  it("a chunk over HTTP needs the attempt's run key: a wrong key is refused and stores nothing", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "m");
    const id = await post(agent, "work");
    const m = await run(a, id);
    const chunks = [{ stream: "text", text: "token 1" }];
    expect((await call("POST", `/agents/${agent}/messages/${id}/output`, { token: m.token, run_key: "x".repeat(32), chunks })).status).toBe(409);
    const ok = await call("POST", `/agents/${agent}/messages/${id}/output`, { token: m.token, run_key: m.run_key, chunks });
    expect(ok).toMatchObject({ status: 200, body: { id, token: m.token, offset: 7 } });
    expect(texts(await all(agent, id))).toEqual(["token 1"]);
    expect((await call("POST", `/agents/${agent}/messages/${id}/output`, { token: m.token, run_key: m.run_key, chunks: [{ stream: "text", text: "a", base64: "YQ==" }] })).status).toBe(400);
    expect((await call("POST", `/agents/${agent}/messages/${id}/output`, { token: m.token, run_key: m.run_key, chunks: [{ stream: "text", text: "x".repeat(LIMITS.outputBatchBytes + 1) }] })).status).toBe(413);
  });

  it("a reader that resumes from its last event misses nothing and sees nothing twice", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "m");
    const id = await post(agent, "work");
    const m = await run(a, id);
    for (let i = 0; i < 10; i++) await out(a, m, `line ${i}\n`);
    const seen: OutputEvent[] = [];
    let cursor = 0;
    // Two events at a time: the reader drops after each and comes back with its last seq.
    while (seen.filter((e) => e.type === "chunk").length < 10) {
      const p = await page(agent, id, cursor);
      seen.push(...p.events.slice(0, 2));
      const last = p.events.slice(0, 2).at(-1);
      cursor = last && "seq" in last ? last.seq : p.cursor;
    }
    expect(texts(seen)).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i}\n`));
  });

  it("past the budget the oldest bytes go and a reader is told how many; nothing newer is lost", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "m");
    const id = await post(agent, "work");
    const m = await run(a, id);
    const block = (i: number) => `${String(i).padStart(4, "0")}${"x".repeat(8 * 1024 - 4)}`;
    for (let i = 0; i < 12; i++) await out(a, m, block(i));
    const events = await all(agent, id);
    // 96 KiB written, 64 KiB kept: the first four 8 KiB chunks went.
    expect(events[0]).toMatchObject({ type: "attempt", attempt: 1 });
    expect(events[1]).toEqual({ type: "dropped", bytes: 4 * 8192, offset: 4 * 8192, reason: "message_budget" });
    expect(texts(events)).toEqual(Array.from({ length: 8 }, (_, i) => block(i + 4)));
    // A reader already past the drop is not told again.
    const last = events.at(-1)!;
    await out(a, m, "tail");
    expect((await page(agent, id, "seq" in last ? last.seq : 0)).events).toMatchObject([{ type: "chunk", text: "tail" }]);
  });

  it("past the agent's budget the oldest finished message's output goes whole, told as agent_budget; a running message's output is kept", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "m");
    const block = (i: number) => `${String(i).padStart(4, "0")}${"x".repeat(8 * 1024 - 4)}`;
    const ids: number[] = [];
    // Three messages of 64 KiB each: two finished ones fill the agent's 128 KiB, the third runs on.
    for (let n = 0; n < 3; n++) {
      const id = await post(agent, `work ${n}`);
      const m = await run(a, id);
      for (let i = 0; i < 8; i++) await out(a, m, block(i));
      if (n < 2) await write(a, { type: "reply", id, token: m.token, key: "k", text: "ok" });
      ids.push(id);
    }
    const [oldest, newer, running] = ids as [number, number, number];
    const gone = await all(agent, oldest);
    expect(gone.map((e) => e.type)).toEqual(["attempt", "dropped", "attempt_end"]);
    expect(gone[1]).toEqual({ type: "dropped", bytes: 64 * 1024, offset: 64 * 1024, reason: "agent_budget" });
    expect(texts(await all(agent, newer))).toEqual(Array.from({ length: 8 }, (_, i) => block(i)));
    expect(texts(await all(agent, running))).toEqual(Array.from({ length: 8 }, (_, i) => block(i)));
    expect((await call("GET", `/agents/${agent}/messages/${oldest}`)).body).toMatchObject({ output_dropped: "agent_budget" });
    expect((await call("GET", `/agents/${agent}/messages/${newer}`)).body).not.toHaveProperty("output_dropped");
  });

  it("past the agent's budget an older message still running keeps its output; the oldest finished one's goes instead", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "m");
    a.send({ type: "hello", concurrency: 2 });
    await settle(a);
    const block = (i: number) => `${String(i).padStart(4, "0")}${"x".repeat(8 * 1024 - 4)}`;
    const eight = async (m: MessageFrame) => { for (let i = 0; i < 8; i++) await out(a, m, block(i)); };
    // The oldest message runs on the whole time; the second finishes; the third's output passes 128 KiB.
    const running = await run(a, await post(agent, "long"));
    await eight(running);
    const finished: number[] = [];
    for (let n = 0; n < 2; n++) {
      const id = await post(agent, `short ${n}`);
      const m = await run(a, id);
      await eight(m);
      await write(a, { type: "reply", id, token: m.token, key: "k", text: "ok" });
      finished.push(id);
    }
    expect(texts(await all(agent, running.id))).toEqual(Array.from({ length: 8 }, (_, i) => block(i)));
    expect((await all(agent, finished[0]!)).find((e) => e.type === "dropped")).toMatchObject({ reason: "agent_budget", bytes: 64 * 1024 });
  });

  it("the output store's migrations are safe to run again (one recorded only after it finished runs again at the next construction)", async () => {
    const agent = uniqueAgent();
    await claimant(agent, "m");
    const version = await runInDurableObject(stubFor(agent), (_, state) => {
      const sql = state.storage.sql;
      sql.exec(`UPDATE schema_versions SET version = 1 WHERE store = 'output'`);
      new OutputStore(sql);
      return sql.exec<{ version: number }>(`SELECT version FROM schema_versions WHERE store = 'output'`).one().version;
    });
    expect(version).toBe(3);
  });

  it("Server-Sent Events: stored events, then live ones as the run writes them, then end; Last-Event-ID resumes after it", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "m");
    const id = await post(agent, "work");
    const m = await run(a, id);
    await out(a, m, "before ");
    const res = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output`, { headers: { Authorization: auth.Authorization } });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reading = readSse(res, (es) => es.some((e) => e.event === "end"));
    await out(a, m, "live");
    await write(a, { type: "reply", id, token: m.token, key: "k", text: "ok" });
    const events = await reading;
    expect(events.map((e) => e.event)).toEqual(["attempt", "chunk", "chunk", "attempt_end", "end"]);
    expect(texts(events.map((e) => e.data))).toEqual(["before ", "live"]);
    expect(events.at(-1)!.data).toEqual({ type: "end", status: "acknowledged" });
    // Resuming after the first chunk gives the rest, once.
    const again = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output`, { headers: { Authorization: auth.Authorization, "Last-Event-ID": events[1]!.id! } });
    expect((await readSse(again, () => false)).map((e) => e.event)).toEqual(["chunk", "attempt_end", "end"]);
  });

  it("a message's output goes with it when history is pruned (BATON_HISTORY_MESSAGES 20 here)", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "m");
    const id = await post(agent, "first");
    const m = await run(a, id);
    await out(a, m, "kept until pruned");
    await write(a, { type: "reply", id, token: m.token, key: "k", text: "ok" });
    expect(texts((await page(agent, id)).events)).toEqual(["kept until pruned"]);
    a.close();
    await a.waitForClose();
    for (let i = 0; i < 21; i++) {
      const later = await post(agent, `later ${i}`);
      expect((await call("POST", `/agents/${agent}/messages/${later}/cancel`, {})).status).toBe(200);
    }
    expect((await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output?format=json`, { headers: auth })).status).toBe(404);
    // Its rows are gone from the object's storage, not only hidden.
    const rows = await runInDurableObject(stubFor(agent), (_, state) => state.storage.sql.exec<{ n: number }>(
      "SELECT (SELECT COUNT(*) FROM message_output WHERE message_id = ?) + (SELECT COUNT(*) FROM message_output_heads WHERE message_id = ?) AS n", id, id).one().n);
    expect(rows).toBe(0);
  });

  it("a bad cursor is 400, an unknown message 404, and the route needs the read scope", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "queued");
    expect((await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output?from=-1`, { headers: auth })).status).toBe(400);
    expect((await SELF.fetch(`${BASE}/agents/${agent}/messages/999/output?format=json`, { headers: auth })).status).toBe(404);
    expect((await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output?format=json`)).status).toBe(401);
    expect(await page(agent, id)).toMatchObject({ status: "queued", events: [], final: false });
  });
});
