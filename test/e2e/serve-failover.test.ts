// Two `baton serve` processes of one agent against a real `wrangler dev` with a 2 s heartbeat
// TTL: exactly one runs each message, and crashes, pauses and signals move the work correctly.
import type { Presence } from "../../worker/wire/server-frames.ts";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  getJson, postMessage, readSink, runBaton, startServe, uniqueAgent, waitForMessage, waitForSink, writeSinkCommand, sharedServeFixture, type ServeProc,
} from "./serve-helpers.ts";

const TTL_MS = 2000;
const fixture = sharedServeFixture();
const { started } = fixture;

function serve(agent: string, tag: string, command: string, sink: string, env: Record<string, string> = {}): ServeProc {
  const s = startServe({ url: fixture.dev.url, agent, tag, command, sink, env });
  started.push(s);
  return s;
}

/** Polls `done` (a real process's state, which no clock of ours moves) until it holds, or fails after 5 s. */
async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  for (const start = performance.now(); !(await done());) {
    if (performance.now() - start > 5000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A holder A and a standby B of a fresh agent. */
async function pair(env: Record<string, string> = {}) {
  const agent = uniqueAgent("fo");
  const { command, sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-sink-")));
  const a = serve(agent, "a", command, sink, env);
  await a.waitFor(/holder \(fence \d+\)/);
  const b = serve(agent, "b", command, sink, env);
  await b.waitFor(/standby \(1st in line\)/);
  return { agent, sink, a, b };
}

describe("baton serve: two machines, one agent", () => {
  it("exactly one holds, who --json agrees, and each message runs once on the holder", async () => {
    const { agent, sink, b } = await pair();
    const who = runBaton(["who", agent, "--json"], { BATON_URL: fixture.dev.url });
    expect(who.code).toBe(0);
    const presence = JSON.parse(who.stdout) as Presence;
    expect(presence.connections.filter((c) => c.held)).toHaveLength(1);
    expect(presence.holder?.machine).toBe("machine-a");
    expect(presence.serve_standbys).toBe(1);

    const ids = [await postMessage(fixture.dev.url, agent, "one"), await postMessage(fixture.dev.url, agent, "two"), await postMessage(fixture.dev.url, agent, "three")];
    for (const id of ids) {
      const m = await waitForMessage(fixture.dev.url, agent, id, (m) => m.status === "acknowledged");
      expect(m.reply).toBe(`a did: ${["one", "two", "three"][ids.indexOf(id)]}\n`);
    }
    const runs = readSink(sink).filter((l) => l.phase === "start");
    expect(runs.map((l) => [l.tag, l.id])).toEqual(ids.map((id) => ["a", id]));
    expect(b.stderr()).not.toMatch(/ran message/);
  });

  it("kill -9 the holder: the standby takes over within the TTL and runs the next message", async () => {
    const { agent, sink, a, b } = await pair();
    const fenceBefore = (await getJson<Presence>(`${fixture.dev.url}/agents/${agent}/presence`)).fence;
    a.proc.kill("SIGKILL");
    await b.waitFor(/holder \(fence \d+\)/, TTL_MS * 3);
    const id = await postMessage(fixture.dev.url, agent, "after crash");
    const m = await waitForMessage(fixture.dev.url, agent, id, (m) => m.status === "acknowledged");
    expect(m.reply).toBe("b did: after crash\n");
    expect(m.acked_fence).toBeGreaterThan(fenceBefore);
    expect(readSink(sink).filter((l) => l.phase === "start").map((l) => l.tag)).toEqual(["b"]);
  });

  it("SIGTERM hands over at once: the holder releases, the standby holds well before the TTL, exit 0", async () => {
    const { agent, a, b } = await pair();
    const from = b.stderr().length;
    const signalledAt = performance.now();
    a.proc.kill("SIGTERM");
    const heldAt = await b.waitFor(/holder \(fence \d+\)/, TTL_MS * 3, from);
    expect(heldAt - signalledAt).toBeLessThan(TTL_MS / 2);
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(a.stderr()).toMatch(/released the lease/);
    const presence = await getJson<Presence>(`${fixture.dev.url}/agents/${agent}/presence`);
    // Newest first. The idle holder's hello {stopping} is its safe point: the lease moves then, before the release.
    expect(presence.transitions[0]?.reason).toBe("stopping");
  });

  it("a message posted while the SIGTERMed holder stops its runs is not handed to it: the standby runs it as attempt 1", async () => {
    const agent = uniqueAgent("fo");
    const dir = mkdtempSync(join(tmpdir(), "baton-sink-"));
    const { command, sink } = writeSinkCommand(dir);
    // A's command ignores SIGTERM and waits on a gate that never opens: A's stop lasts its whole --grace (1 s).
    const stubborn = join(dir, "stubborn.sh");
    writeFileSync(stubborn, `#!/bin/sh\ntrap '' TERM\nexec ${command}\n`, { mode: 0o755 });
    const a = startServe({ url: fixture.dev.url, agent, tag: "a", command: stubborn, sink, env: { GATE: join(dir, "never") }, serveArgs: ["--concurrency", "2"] });
    started.push(a);
    await a.waitFor(/holder \(fence \d+\)/);
    const b = serve(agent, "b", command, sink);
    await b.waitFor(/standby \(1st in line\)/);
    const first = await postMessage(fixture.dev.url, agent, "running at the stop");
    await waitForSink(sink, (lines) => lines.some((l) => l.tag === "a" && l.id === first && l.phase === "start"));
    a.proc.kill("SIGTERM");
    // A told the coordinator it is stopping; it keeps the lease (and a free slot) until its run is gone.
    await until(async () => (await getJson<Presence>(`${fixture.dev.url}/agents/${agent}/presence`)).connections.some((c) => c.machine === "machine-a" && c.stopping === true && c.held), "A stopping in presence");
    const second = await postMessage(fixture.dev.url, agent, "posted during the stop");
    const m = await waitForMessage(fixture.dev.url, agent, second, (m) => m.status === "acknowledged");
    expect(m).toMatchObject({ attempts: 1, reply: "b did: posted during the stop\n" });
    expect(readSink(sink).filter((l) => l.id === second && l.phase === "start").map((l) => [l.tag, l.attempt])).toEqual([["b", 1]]);
    expect(await a.exited).toEqual({ code: 0, signal: null });
  });

  it("SIGSTOP the holder mid-run past the TTL: the standby redoes the work; after SIGCONT the old one posts nothing", async () => {
    const { agent, sink, a, b } = await pair({ RUN_SLEEP: "0.5" });
    const id = await postMessage(fixture.dev.url, agent, "slow");
    await waitForSink(sink, (lines) => lines.some((l) => l.tag === "a" && l.id === id && l.phase === "start"));
    a.proc.kill("SIGSTOP");
    await b.waitFor(/holder \(fence \d+\)/, TTL_MS * 4);
    const m = await waitForMessage(fixture.dev.url, agent, id, (m) => m.status === "acknowledged");
    expect(m.reply).toBe("b did: slow\n");
    expect(m.attempts).toBe(2);
    // A's command finished while A was stopped: its output waits in A's pipe.
    await waitForSink(sink, (lines) => lines.some((l) => l.tag === "a" && l.phase === "end"));

    const from = a.stderr().length;
    a.proc.kill("SIGCONT");
    // Whichever A notices first (its own clock or the close sent while it slept), it demotes.
    await a.waitFor(/lease lapsed on the local clock|reconnecting/, 5000, from);
    await a.waitFor(/standby \(\d+(st|nd|rd|th) in line\)/, 10_000, from);
    const after = await getJson<MessageView>(`${fixture.dev.url}/agents/${agent}/messages/${id}`);
    expect(after.reply).toBe("b did: slow\n");
    // Nothing of the stale run was posted or even attempted (no reply, refused or unconfirmed).
    expect(a.stderr().slice(from)).not.toMatch(/ran message|refused|not confirmed/);
    const next = await postMessage(fixture.dev.url, agent, "next");
    await waitForMessage(fixture.dev.url, agent, next, (m) => m.status === "acknowledged");
    const aRuns = readSink(sink).filter((l) => l.tag === "a" && l.phase === "start");
    expect(aRuns.map((l) => l.id)).toEqual([id]);
  });

  it("a second serve of the same agent under the same machine label is refused; a stale lock is taken over", async () => {
    const agent = uniqueAgent("lock");
    const { command, sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-sink-")));
    const lockDir = mkdtempSync(join(tmpdir(), "baton-lock-"));
    const first = startServe({ url: fixture.dev.url, agent, tag: "one", command, sink, lockDir });
    started.push(first);
    await first.waitFor(/holder \(fence \d+\)/);
    const second = runBaton(["serve", agent, "--machine", "machine-one", "--", command], { BATON_URL: fixture.dev.url, BATON_LOCK_DIR: lockDir });
    expect(second.code).toBe(1);
    expect(second.stderr.trim()).toBe(
      `baton: agent ${agent} is already served as machine "machine-one" on this host by pid ${first.pid} ` +
      `(lock ${second.stderr.match(/\(lock (.+)\)/)?.[1]}); to try failover on one host, give the second serve another --machine`,
    );
    expect(second.stderr.trim().split("\n")).toHaveLength(1);

    first.proc.kill("SIGKILL");
    await first.exited;
    // The same label again: the dead pid's lock is taken over.
    const third = startServe({ url: fixture.dev.url, agent, tag: "one", command, sink, lockDir });
    started.push(third);
    await third.waitFor(/holder \(fence \d+\)/, TTL_MS * 4);
  });
});

interface MessageView {
  reply: string | null;
}

