// A served command never outlives what stops it, end to end with a real `baton serve`: kill -9 of
// serve itself takes its command's whole tree down (the lifeline), and a cancel reaches a process
// that left the group and the session (setsid, its parent gone) and one that ignores SIGTERM while
// the command itself exits at once.
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { authHeaders, postMessage, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { alive } from "./process-tree-fixture.ts";

const fx = sharedServeFixture();
const pids: number[] = [];
afterEach(() => pids.splice(0).forEach((pid) => {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone, as it should be
  }
}));

/**
 * Per message: a sleeper in a session of its own whose parent exits at once (`.esc`), and a
 * grandchild that ignores SIGTERM and appends a millisecond timestamp to `.ticks` every 20 ms
 * (`.stub`); the command itself exits at SIGTERM.
 */
function escapingCommand(dir: string): string {
  const path = join(dir, "escaping.sh");
  writeFileSync(path, [
    "#!/bin/sh",
    "cat >/dev/null",
    'base="$PIDS/$BATON_MESSAGE_ID"',
    `sh -c "setsid sh -c 'echo \\$\\$ > \\"$base.esc\\"; exec sleep 301' >/dev/null 2>&1 &"`,
    `sh -c 'trap "" TERM; echo $$ > "$0.stub"; while :; do date +%s%3N >> "$0.ticks"; sleep 0.02; done' "$base" >/dev/null 2>&1 &`,
    "trap 'exit 0' TERM",
    "wait",
    "",
  ].join("\n"), { mode: 0o755 });
  return path;
}

async function until<T>(what: string, probe: () => T | null | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function pidsOf(dir: string, id: number): { esc: number; stub: number } | null {
  try {
    const read = (part: string) => Number(readFileSync(join(dir, `${id}.${part}`), "utf8").trim());
    const found = { esc: read("esc"), stub: read("stub") };
    if (!found.esc || !found.stub) return null;
    pids.push(found.esc, found.stub);
    return found;
  } catch {
    return null;
  }
}

function lastTick(dir: string, id: number): number {
  const lines = readFileSync(join(dir, `${id}.ticks`), "utf8").trim().split("\n");
  return Number(lines[lines.length - 1]);
}

describe.runIf(process.platform === "linux")("a served command's whole tree", () => {
  it("kill -9 of baton serve kills its command's tree (what escaped with setsid and what ignores SIGTERM) at once: no write after it", async () => {
    const agent = uniqueAgent("lifeline");
    const dir = mkdtempSync(join(tmpdir(), "baton-lifeline-"));
    const served = startServe({ url: fx.dev.url, agent, tag: "a", command: escapingCommand(dir), sink: join(dir, "sink"), env: { PIDS: dir } });
    fx.started.push(served);
    await served.waitFor(/holder/);
    const id = await postMessage(fx.dev.url, agent, "work");
    const tree = await until("the tree's pids and a first tick", () => (readdirSync(dir).includes(`${id}.ticks`) ? pidsOf(dir, id) : null));
    expect(alive(tree.esc) && alive(tree.stub)).toBe(true);
    served.proc.kill("SIGKILL");
    const killedAt = Date.now();
    await until("the whole tree gone", () => (alive(tree.esc) || alive(tree.stub) ? null : true), 10_000);
    const gapMs = lastTick(dir, id) - killedAt;
    console.log(`lifeline: last write ${gapMs} ms after kill -9 of serve; tree gone ${Date.now() - killedAt} ms after`);
    expect(gapMs).toBeLessThan(1000);
  });

  it("a cancel stops a process that left the group and the session, and SIGKILLs one that ignores SIGTERM after --grace though the command exited at once", async () => {
    const agent = uniqueAgent("escape");
    const dir = mkdtempSync(join(tmpdir(), "baton-escape-"));
    const served = startServe({ url: fx.dev.url, agent, tag: "a", command: escapingCommand(dir), sink: join(dir, "sink"), env: { PIDS: dir } });
    fx.started.push(served);
    await served.waitFor(/holder/);
    const id = await postMessage(fx.dev.url, agent, "work");
    const tree = await until("the tree's pids", () => pidsOf(dir, id));
    expect(runBaton(["cancel", agent, String(id)], { BATON_URL: fx.dev.url }).code).toBe(0);
    const cancelledAt = Date.now();
    await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "cancelled");
    // --grace 1 (startServe): SIGKILL at 1 s, whatever the command itself did.
    await until("the escaped and the stubborn process gone", () => (alive(tree.esc) || alive(tree.stub) ? null : true), 8_000);
    expect(Date.now() - cancelledAt).toBeGreaterThanOrEqual(900);
    expect(statSync(join(dir, `${id}.ticks`)).size).toBeGreaterThan(0);
  });

  it("in a pool, the next run of a cancelled message's group on that runner starts only once the cancelled tree is gone (its SIGTERM grace included)", async () => {
    const agent = uniqueAgent("overlap");
    const dir = mkdtempSync(join(tmpdir(), "baton-overlap-"));
    const command = join(dir, "grouped.sh");
    writeFileSync(command, [
      "#!/bin/sh",
      'text=$(cat)',
      'base="$PIDS/$BATON_MESSAGE_ID"',
      'case "$text" in',
      `  long) sh -c 'trap "" TERM; echo $$ > "$0.stub"; while :; do date +%s%3N >> "$0.ticks"; sleep 0.02; done' "$base" >/dev/null 2>&1 &`,
      "        trap 'exit 0' TERM; wait ;;",
      '  *) date +%s%3N > "$base.start"; echo "did: $text" ;;',
      "esac",
      "",
    ].join("\n"), { mode: 0o755 });
    const policy = await fetch(`${fx.dev.url}/agents/${agent}/policy`, { method: "PUT", headers: authHeaders(), body: JSON.stringify({ mode: "pool" }) });
    expect(policy.status).toBe(200);
    const served = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env: { PIDS: dir }, serveArgs: ["--concurrency", "2"] });
    fx.started.push(served);
    await served.waitFor(/serving|holder|standby/);
    const post = async (text: string) => {
      const res = await fetch(`${fx.dev.url}/agents/${agent}/messages`, { method: "POST", headers: authHeaders(), body: JSON.stringify({ text, group: "g" }) });
      return ((await res.json()) as { id: number }).id;
    };
    const long = await post("long");
    const next = await post("next");
    const stub = await until("the stubborn writer's first tick", () => (readdirSync(dir).includes(`${long}.ticks`) ? Number(readFileSync(join(dir, `${long}.stub`), "utf8")) : null));
    pids.push(stub);
    expect(runBaton(["cancel", agent, String(long)], { BATON_URL: fx.dev.url }).code).toBe(0);
    await waitForMessage(fx.dev.url, agent, next, (m) => m.status === "acknowledged");
    expect(alive(stub)).toBe(false);
    const started = Number(readFileSync(join(dir, `${next}.start`), "utf8"));
    expect(started).toBeGreaterThan(lastTick(dir, long));
  });
});

