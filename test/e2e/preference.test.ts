// Where an agent runs, with real `baton serve` processes against `wrangler dev` (2 s hysteresis):
// a preferred runner takes over only between messages and only after the hysteresis, a flapping
// one cannot move the lease more often, drain hands the lease on and keeps the runner connected,
// and pause queues work without moving the lease. Served commands write one sink line per run,
// keyed by BATON_MESSAGE_ID, so a message run twice shows.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Presence } from "../../worker/wire/server-frames.ts";
import {
  getJson, postMessage, readSink, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage, waitForSink, writeSinkCommand, type ServeProc,
} from "./serve-helpers.ts";
import { SHARED_SERVE_VARS } from "./shared-dev.global.ts";

/** The shared server's preference hysteresis (set there for this file: only --priority runners see it). */
const HYSTERESIS_MS = Number(SHARED_SERVE_VARS.BATON_PREFERENCE_HYSTERESIS_SECONDS) * 1000;
const fixture = sharedServeFixture();
const { started } = fixture;
const HOLDER = /holder \(fence \d+\)/;
const STANDBY = /standby \(\d+(st|nd|rd|th) in line\)/;
/** Either role: where a broken rule would give the other one, the assertions after the wait say so. */
const IN_LINE = /holder \(fence \d+\)|standby \(\d+(st|nd|rd|th) in line\)/;

/** A fresh agent with its own sink, and a gate file that holds a GATE-waiting run until written. */
function setup(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), "baton-pref-"));
  return { agent: uniqueAgent(prefix), gate: join(dir, "gate"), ...writeSinkCommand(dir) };
}

function serve(agent: string, tag: string, cmd: { command: string; sink: string }, opts: { priority?: number; env?: Record<string, string> } = {}): ServeProc {
  const serveArgs = opts.priority === undefined ? [] : ["--priority", String(opts.priority)];
  const s = startServe({ url: fixture.dev.url, agent, tag, command: cmd.command, sink: cmd.sink, env: opts.env, serveArgs });
  started.push(s);
  return s;
}

const presence = (agent: string) => getJson<Presence>(`${fixture.dev.url}/agents/${agent}/presence`);

function baton(...args: string[]): string {
  const r = runBaton(args, { BATON_URL: fixture.dev.url });
  if (r.code !== 0) throw new Error(`baton ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

const whoJson = (agent: string) => JSON.parse(baton("who", agent, "--json")) as Presence;

async function until<T>(what: string, probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Asserts on every poll until `untilMs` (wall clock) that `machine` holds at `fence`. */
async function holdsThroughout(agent: string, machine: string, fence: number, untilMs: number): Promise<void> {
  do {
    const p = await presence(agent);
    expect(p.holder?.machine).toBe(machine);
    expect(p.fence).toBe(fence);
    await new Promise((r) => setTimeout(r, 200));
  } while (Date.now() < untilMs);
}

function joinedAt(p: Presence, machine: string): number {
  const c = p.connections.find((c) => c.machine === machine);
  if (!c) throw new Error(`no connection from ${machine}: ${JSON.stringify(p.connections)}`);
  return c.joined_at;
}

/** Every run the sink saw, as [tag, message id], in start order. */
const runs = (sink: string) => readSink(sink).filter((l) => l.phase === "start").map((l) => [l.tag, l.id]);

describe("baton serve --priority", () => {
  it("a busy low-priority holder keeps its message; the lease moves to the preferred runner at its end, with a new fence; nothing runs twice", async () => {
    const s = setup("pref");
    const low = serve(s.agent, "low", s, { env: { GATE: s.gate } });
    await low.waitFor(HOLDER);
    const m1 = await postMessage(fixture.dev.url, s.agent, "long");
    await waitForSink(s.sink, (lines) => lines.some((l) => l.id === m1 && l.phase === "start"));
    const high = serve(s.agent, "high", s, { priority: 10 });
    await high.waitFor(IN_LINE);
    const before = await presence(s.agent);
    // Past the preferred runner's hysteresis the lease stays with the holder while its run goes on.
    await holdsThroughout(s.agent, "machine-low", before.fence, joinedAt(before, "machine-high") + HYSTERESIS_MS + 1000);
    const m2 = await postMessage(fixture.dev.url, s.agent, "after the move");
    expect((await getJson<{ status: string }>(`${fixture.dev.url}/agents/${s.agent}/messages/${m2}`)).status).toBe("queued");

    writeFileSync(s.gate, "");
    const first = await waitForMessage(fixture.dev.url, s.agent, m1, (m) => m.status === "acknowledged");
    await high.waitFor(HOLDER);
    expect(first.reply).toBe("low did: long\n");
    expect(first.acked_fence).toBe(before.fence);
    const second = await waitForMessage(fixture.dev.url, s.agent, m2, (m) => m.status === "acknowledged");
    expect(second.reply).toBe("high did: after the move\n");
    expect(second.acked_fence).toBe(before.fence + 1);

    const p = whoJson(s.agent);
    const move = p.transitions[0]!;
    expect(move).toMatchObject({ reason: "preferred", from_machine: "machine-low", to_machine: "machine-high", fence: before.fence + 1 });
    const ackedAt = (await getJson<{ acked_at: number }>(`${fixture.dev.url}/agents/${s.agent}/messages/${m1}`)).acked_at;
    expect(move.at).toBeGreaterThanOrEqual(ackedAt);
    await low.waitFor(STANDBY);

    const m3 = await postMessage(fixture.dev.url, s.agent, "later");
    expect((await waitForMessage(fixture.dev.url, s.agent, m3, (m) => m.status === "acknowledged")).reply).toBe("high did: later\n");
    expect(runs(s.sink)).toEqual([["low", m1], ["high", m2], ["high", m3]]);
  });

  it("a flapping high-priority runner moves the lease on preference at most once per hysteresis period", async () => {
    const s = setup("flap");
    const low = serve(s.agent, "low", s);
    await low.waitFor(HOLDER);
    // When each high-priority runner joined (the coordinator's clock) and how long it lived.
    const joined = new Map<string, number>();
    const lived = new Map<string, number>();
    for (let i = 0; i < 3; i++) {
      const machine = `machine-flap${i}`;
      const flap = serve(s.agent, `flap${i}`, s, { priority: 10 });
      await flap.waitFor(IN_LINE);
      joined.set(machine, joinedAt(await presence(s.agent), machine));
      await new Promise((r) => setTimeout(r, Math.max(0, joined.get(machine)! + HYSTERESIS_MS / 4 - Date.now())));
      flap.proc.kill("SIGKILL");
      lived.set(machine, Date.now() - joined.get(machine)!);
      await flap.exited;
    }
    // One stays long enough and takes over; killed at once, the lease falls back; a restart waits a whole period again.
    const stay = serve(s.agent, "stay", s, { priority: 10 });
    await stay.waitFor(HOLDER);
    joined.set("machine-stay", joinedAt(await presence(s.agent), "machine-stay"));
    stay.proc.kill("SIGKILL");
    await stay.exited;
    await until("the lease falls back to low", () => presence(s.agent), (p) => p.holder?.machine === "machine-low");
    const again = serve(s.agent, "again", s, { priority: 10 });
    await again.waitFor(HOLDER);

    const p = whoJson(s.agent);
    joined.set("machine-again", joinedAt(p, "machine-again"));
    const moves = p.transitions.filter((t) => t.reason === "preferred").reverse(); // oldest first
    for (const m of moves) expect(m.at - joined.get(m.to_machine!)!).toBeGreaterThanOrEqual(HYSTERESIS_MS);
    for (let i = 1; i < moves.length; i++) expect(moves[i]!.at - moves[i - 1]!.at).toBeGreaterThanOrEqual(HYSTERESIS_MS);
    // A runner killed well inside its period never held (the margin covers the close reaching the coordinator).
    const shortLived = [...lived].filter(([, ms]) => ms < HYSTERESIS_MS - 500).map(([m]) => m);
    expect(shortLived.length).toBeGreaterThan(0);
    expect(moves.filter((m) => shortLived.includes(m.to_machine!))).toEqual([]);
    expect(moves.slice(-2).map((m) => m.to_machine)).toEqual(["machine-stay", "machine-again"]);
    expect(p.fence).toBe(moves.at(-1)!.fence);
  });
});

describe("baton drain and pause", () => {
  it("drain: the holder finishes its message, the other runner takes over (drained), the drained one stays connected; undrain makes it a candidate", async () => {
    const s = setup("drain");
    const a = serve(s.agent, "a", s, { env: { GATE: s.gate } });
    await a.waitFor(HOLDER);
    const b = serve(s.agent, "b", s);
    await b.waitFor(STANDBY);
    const m1 = await postMessage(fixture.dev.url, s.agent, "one");
    await waitForSink(s.sink, (lines) => lines.some((l) => l.id === m1 && l.phase === "start"));
    const fence0 = (await presence(s.agent)).fence;

    expect(baton("drain", s.agent, "--machine", "machine-a")).toBe(`${s.agent}: drained: machine-a\n`);
    const draining = await presence(s.agent);
    expect(draining.holder?.machine).toBe("machine-a");
    expect(draining.connections.find((c) => c.machine === "machine-a")).toMatchObject({ held: true, drained: true, running: 1 });
    expect(baton("who", s.agent)).toMatch(/holder, draining/);
    const m2 = await postMessage(fixture.dev.url, s.agent, "two");

    writeFileSync(s.gate, "");
    await b.waitFor(HOLDER);
    expect((await waitForMessage(fixture.dev.url, s.agent, m1, (m) => m.status === "acknowledged")).acked_fence).toBe(fence0);
    const second = await waitForMessage(fixture.dev.url, s.agent, m2, (m) => m.status === "acknowledged");
    expect(second).toMatchObject({ reply: "b did: two\n", acked_fence: fence0 + 1 });

    const drained = whoJson(s.agent);
    expect(drained.transitions[0]).toMatchObject({ reason: "drained", from_machine: "machine-a", to_machine: "machine-b", fence: fence0 + 1 });
    expect(drained.connections.find((c) => c.machine === "machine-a")).toMatchObject({ held: false, drained: true });
    expect(drained.serve_candidates).toBe(1);
    expect(baton("who", s.agent)).toMatch(/machine-a\s+0\s+drained/);
    expect(a.proc.exitCode).toBeNull();

    expect(baton("undrain", s.agent, "--machine", "machine-a")).toBe(`${s.agent}: no machine drained\n`);
    const back = whoJson(s.agent);
    expect(back.connections.find((c) => c.machine === "machine-a")).toMatchObject({ held: false, drained: false });
    expect(back.serve_candidates).toBe(2);
    expect(back.serve_standbys).toBe(1);
    expect(back.holder?.machine).toBe("machine-b"); // equal priorities: no steal back
    expect(runs(s.sink)).toEqual([["a", m1], ["b", m2]]);
  });

  it("draining the last runner leaves messages visibly queued; undrain runs them once", async () => {
    const s = setup("last");
    const a = serve(s.agent, "a", s);
    await a.waitFor(HOLDER);
    expect(baton("drain", s.agent)).toBe(`${s.agent}: drained: machine-a\n`);
    const none = await until("no holder", () => presence(s.agent), (p) => p.holder === null);
    expect(none.transitions[0]).toMatchObject({ reason: "drained", from_machine: "machine-a", to_machine: null });
    const m1 = await postMessage(fixture.dev.url, s.agent, "waits");
    // The runner has seen the message (its cursor), yet nobody was handed it.
    await until("the runner sees the message", () => presence(s.agent), (p) => p.connections[0]?.cursor === m1);
    const who = whoJson(s.agent);
    expect(who.recent_messages.find((m) => m.id === m1)?.status).toBe("queued");
    expect(who.work.counts.queued).toBe(1);
    expect(baton("who", s.agent)).toMatch(/no holder[\s\S]*1 queued/);
    expect(baton("history", s.agent)).toMatch(new RegExp(`^\\s*${m1}\\s+queued\\s+attempts 0`, "m"));

    expect(baton("undrain", s.agent)).toBe(`${s.agent}: no machine drained\n`);
    const done = await waitForMessage(fixture.dev.url, s.agent, m1, (m) => m.status === "acknowledged");
    expect(done).toMatchObject({ reply: "a did: waits\n", attempts: 1 });
    expect(runs(s.sink)).toEqual([["a", m1]]);
  });

  it("pause: sent messages queue and the lease stays where it is; unpause runs each once on the holder", async () => {
    const s = setup("pause");
    const a = serve(s.agent, "a", s);
    await a.waitFor(HOLDER);
    const b = serve(s.agent, "b", s);
    await b.waitFor(STANDBY);
    const before = await presence(s.agent);

    expect(baton("pause", s.agent)).toBe(`${s.agent}: paused: messages queue, nothing is handed out; a run in progress finishes\n`);
    const ids = [await postMessage(fixture.dev.url, s.agent, "one"), await postMessage(fixture.dev.url, s.agent, "two")];
    const paused = await until("both runners see both messages", () => presence(s.agent), (p) => p.connections.every((c) => c.cursor === ids[1]));
    expect(paused.recent_messages.filter((m) => ids.includes(m.id)).map((m) => m.status)).toEqual(["queued", "queued"]);
    expect(paused).toMatchObject({ fence: before.fence, holder: { machine: "machine-a" }, controls: { paused: true } });
    expect(baton("who", s.agent)).toMatch(/paused since .* ago: messages queue/);

    expect(baton("unpause", s.agent)).toBe(`${s.agent}: unpaused: queued messages are handed out again\n`);
    for (const [i, id] of ids.entries()) {
      const m = await waitForMessage(fixture.dev.url, s.agent, id, (m) => m.status === "acknowledged");
      expect(m).toMatchObject({ reply: `a did: ${["one", "two"][i]}\n`, attempts: 1, acked_fence: before.fence });
    }
    expect(runs(s.sink)).toEqual(ids.map((id) => ["a", id]));
    expect((await presence(s.agent)).transitions).toEqual(before.transitions);
  });
});
