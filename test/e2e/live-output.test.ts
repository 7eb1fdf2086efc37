// A run's live output with real processes against `wrangler dev` (2 s heartbeat TTL): `baton serve`
// streams its command's stdout and stderr while it runs, a second reader sees them (the client's
// readOutput, `baton logs`), a takeover after kill -9 shows in place with nothing lost or repeated,
// a paused old holder's late chunks are refused and never read, and a reader that drops resumes
// from its last event.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readOutput, type OutputEvent } from "../../client/output.ts";
import { getJson, postMessage, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage, type ServeProc } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

const fixture = sharedServeFixture();
const { started } = fixture;

/** A command that prints `$TAG line I` for I in 1..N, `DELAY` s apart (stderr for odd lines), then exits 0. */
function linesCommand(n: number, delay: number): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-lines-"));
  const path = join(dir, "lines.sh");
  writeFileSync(path, `#!/bin/sh\ni=1\nwhile [ $i -le ${n} ]; do\n  if [ $((i % 2)) -eq 1 ]; then echo "$TAG err $i" >&2; fi\n  echo "$TAG line $i"\n  sleep ${delay}\n  i=$((i+1))\ndone\n`);
  chmodSync(path, 0o755);
  return path;
}

/**
 * linesCommand's lines with no delay, except that its first attempt stops after line `after` until
 * `go()`: a reader looks at a run that is surely still running, and a later attempt runs straight through.
 */
function pausingLinesCommand(n: number, after: number): { command: string; go: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "baton-lines-"));
  const command = join(dir, "lines.sh");
  const gate = join(dir, "go");
  writeFileSync(command, `#!/bin/sh\ni=1\nwhile [ $i -le ${n} ]; do\n  if [ $((i % 2)) -eq 1 ]; then echo "$TAG err $i" >&2; fi\n  echo "$TAG line $i"\n  if [ $i -eq ${after} ] && [ "$BATON_ATTEMPT" = 1 ]; then while [ ! -e ${gate} ]; do sleep 0.05; done; fi\n  i=$((i+1))\ndone\n`);
  chmodSync(command, 0o755);
  return { command, go: () => writeFileSync(gate, "") };
}

function serve(agent: string, tag: string, command: string): ServeProc {
  const s = startServe({ url: fixture.dev.url, agent, tag, command, sink: "/dev/null" });
  started.push(s);
  return s;
}

const conn = () => ({ url: fixture.dev.url, token: DEV_TOKEN });
const texts = (events: OutputEvent[], stream = "stdout") => events.flatMap((e) => (e.type === "chunk" && e.stream === stream ? [e.text ?? ""] : [])).join("");

/** Follows a message's output into `events` until it ends; `until` resolves once `pick` holds. */
function follower(agent: string, id: number) {
  const events: OutputEvent[] = [];
  const done = (async () => {
    for await (const e of readOutput(conn(), agent, id, { backoff: { minTimeout: 50, maxTimeout: 500, factor: 2, randomize: false } })) events.push(e);
  })();
  const until = async (pick: (es: OutputEvent[]) => boolean, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!pick(events)) {
      if (Date.now() > deadline) throw new Error(`output never matched; saw ${JSON.stringify(events)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { events, done, until };
}

describe("live output", () => {
  it("a served command's stdout and stderr show to a second reader while it runs, marked which; the reply stays its stdout", async () => {
    const agent = uniqueAgent("out");
    const { command, go } = pausingLinesCommand(6, 2);
    const a = serve(agent, "a", command);
    await a.waitFor(/holder \(fence \d+\)/);
    const id = await postMessage(fixture.dev.url, agent, "go");
    const f = follower(agent, id);
    await f.until((es) => texts(es).includes("a line 2"));
    // Seen while the run goes on (it waits after line 2), not at its end.
    expect((await getJson<{ status: string }>(`${fixture.dev.url}/agents/${agent}/messages/${id}`)).status).toBe("running");
    const logs = runBaton(["logs", agent, String(id)], { BATON_URL: fixture.dev.url });
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain("a line 1\na line 2\n");
    expect(logs.stderr).toContain("a err 1\n");
    go();
    await f.done;
    expect(texts(f.events)).toBe([1, 2, 3, 4, 5, 6].map((i) => `a line ${i}\n`).join(""));
    expect(texts(f.events, "stderr")).toBe("a err 1\na err 3\na err 5\n");
    expect(f.events.at(-1)).toEqual({ type: "end", status: "acknowledged" });
    const m = await waitForMessage(fixture.dev.url, agent, id, (m) => m.status === "acknowledged");
    expect(m.reply).toBe(texts(f.events));
  });

  it("kill -9 of the holder mid-output: a follower sees attempt 1's output, the takeover, then attempt 2's, in order, nothing lost or repeated", async () => {
    const agent = uniqueAgent("out");
    // Attempt 1 stops after line 3 (killed there, mid-output); attempt 2 prints all 8.
    const { command } = pausingLinesCommand(8, 3);
    const a = serve(agent, "a", command);
    await a.waitFor(/holder \(fence \d+\)/);
    const b = serve(agent, "b", command);
    await b.waitFor(/standby/);
    const id = await postMessage(fixture.dev.url, agent, "go");
    const f = follower(agent, id);
    await f.until((es) => texts(es).includes("a line 3"));
    a.proc.kill("SIGKILL");
    await f.done;
    const kinds = f.events.map((e) => (e.type === "attempt" ? `attempt ${e.attempt} ${e.machine}` : e.type === "attempt_end" ? `end ${e.attempt}` : e.type === "chunk" ? `${e.attempt}` : e.type));
    const takeover = kinds.indexOf("attempt 2 machine-b");
    expect(kinds[0]).toBe("attempt 1 machine-a");
    expect(kinds[takeover - 1]).toBe("end 1");
    expect(kinds.slice(1, takeover - 1).every((k) => k === "1")).toBe(true);
    expect(kinds.slice(takeover + 1, -2).every((k) => k === "2")).toBe(true);
    expect(kinds.slice(-2)).toEqual(["end 2", "end"]);
    // Attempt 1's lines, as far as they got, each once and in order; then all of attempt 2's.
    const out = texts(f.events);
    const [first, second] = [out.slice(0, out.indexOf("b line 1")), out.slice(out.indexOf("b line 1"))];
    const aLines = first.split("\n").filter(Boolean);
    expect(aLines).toEqual(aLines.map((_, i) => `a line ${i + 1}`));
    expect(aLines.length).toBeGreaterThanOrEqual(3);
    expect(second).toBe([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `b line ${i}\n`).join(""));
    const ends = f.events.filter((e) => e.type === "attempt_end");
    expect(ends[0]).toMatchObject({ attempt: 1, reason: "lease_lost" });
    expect(f.events.at(-1)).toEqual({ type: "end", status: "acknowledged" });
  });

  it("a SIGSTOPped old holder resumed after the takeover gets its chunks refused, and no reader sees them", async () => {
    const agent = uniqueAgent("out");
    const naive = naiveOutputWriter(agent);
    await naive.waitFor((l) => l.held !== undefined);
    const id = await postMessage(fixture.dev.url, agent, "go");
    await naive.waitFor((l) => l.got === id);
    await naive.waitFor((l) => l.req === "before" && l.type === "result");
    const b = serve(agent, "b", linesCommand(3, 0.1));
    await b.waitFor(/standby/);
    naive.proc.kill("SIGSTOP");
    await waitForMessage(fixture.dev.url, agent, id, (m) => m.status === "acknowledged", 30_000);
    naive.proc.kill("SIGCONT");
    const late = await naive.waitFor((l) => l.req === "late");
    expect(late).toMatchObject({ type: "error", code: "stale_token" });
    const events: OutputEvent[] = [];
    for await (const e of readOutput(conn(), agent, id, { follow: false })) events.push(e);
    const all = events.flatMap((e) => (e.type === "chunk" ? [e.text] : [])).join("");
    expect(all).toContain("A before\n");
    expect(all).not.toContain("LATE");
    expect(texts(events)).toContain("b line 3\n");
    naive.proc.kill("SIGKILL");
  });

  it("a chatty command (3 MiB of output in many small writes) is never refused for its rate, and every byte reaches the reader in order", async () => {
    const agent = uniqueAgent("out");
    const dir = mkdtempSync(join(tmpdir(), "baton-chatty-"));
    const path = join(dir, "chatty.sh");
    writeFileSync(path, `#!/bin/sh\nseq 1 1000000 | head -c 3145728\n`);
    chmodSync(path, 0o755);
    const a = serve(agent, "a", path);
    await a.waitFor(/holder \(fence \d+\)/);
    const id = await postMessage(fixture.dev.url, agent, "go");
    const started = performance.now();
    const m = await waitForMessage(fixture.dev.url, agent, id, (m) => m.status !== "queued" && m.status !== "running", 120_000);
    const seconds = (performance.now() - started) / 1000;
    expect(m.status).toBe("acknowledged");
    expect(a.stderr().split("\n").filter((l) => /rate_limited|not confirmed|refused/.test(l))).toEqual([]);
    const events: OutputEvent[] = [];
    for await (const e of readOutput(conn(), agent, id, { follow: false })) events.push(e);
    const out = texts(events);
    expect(out.length).toBe(3 * 1024 * 1024);
    expect(out).toBe(`${Array.from({ length: 500_000 }, (_, i) => i + 1).join("\n")}\n`.slice(0, 3 * 1024 * 1024));
    expect(events.filter((e) => e.type === "chunk").length).toBeLessThan(400);
    console.log(`chatty command: 3 MiB of output in ${seconds.toFixed(1)} s (${(3 / seconds).toFixed(2)} MiB/s) through one serve connection`);
  }, 150_000);

  it("baton output inside a served command adds text to the live output under the run's token, in order with its stdout", async () => {
    const agent = uniqueAgent("out");
    const dir = mkdtempSync(join(tmpdir(), "baton-output-cmd-"));
    const path = join(dir, "cmd.sh");
    writeFileSync(path, `#!/bin/sh\necho first\nbaton output "via baton output "\nprintf 'piped\\000' | baton output --stream stderr\necho last\n`);
    chmodSync(path, 0o755);
    const a = serve(agent, "a", path);
    await a.waitFor(/holder \(fence \d+\)/);
    const id = await postMessage(fixture.dev.url, agent, "go");
    const m = await waitForMessage(fixture.dev.url, agent, id, (m) => m.status === "acknowledged");
    expect(m.reply).toBe("first\nlast\n");
    const events: OutputEvent[] = [];
    for await (const e of readOutput(conn(), agent, id, { follow: false })) events.push(e);
    expect(texts(events, "text")).toBe("via baton output ");
    expect(texts(events, "stderr")).toBe("piped\u0000");
    expect(texts(events)).toBe("first\nlast\n");
  });

  it("a reader that drops and resumes from its last event (baton logs --from) misses nothing and repeats nothing", async () => {
    const agent = uniqueAgent("out");
    const a = serve(agent, "a", linesCommand(6, 0.2));
    await a.waitFor(/holder \(fence \d+\)/);
    const id = await postMessage(fixture.dev.url, agent, "go");
    await waitForMessage(fixture.dev.url, agent, id, (m) => m.status === "acknowledged");
    const all = runBaton(["logs", agent, String(id), "--json"], { BATON_URL: fixture.dev.url }).stdout.trim().split("\n").map((l) => JSON.parse(l) as OutputEvent);
    // The chunk that carries line 3: lines written close together may share one chunk.
    const cut = all.findIndex((e) => e.type === "chunk" && (e.text ?? "").includes("a line 3\n"));
    expect(cut).toBeGreaterThanOrEqual(0);
    const seq = (all[cut] as { seq: number }).seq;
    const rest = runBaton(["logs", agent, String(id), "--json", "--from", String(seq)], { BATON_URL: fixture.dev.url }).stdout.trim().split("\n").map((l) => JSON.parse(l) as OutputEvent);
    expect([...all.slice(0, cut + 1), ...rest]).toEqual(all);
  });
});

// A raw holder: takes the message, writes "A before" as output, and when its socket dies (it was
// stopped past its TTL) reconnects and writes "LATE A" under the token it remembers, printing each answer.
const NAIVE_OUTPUT_WRITER = `
const WebSocket = require("ws");
const [url, bearer] = process.argv.slice(1);
const open = () => new WebSocket(url, { headers: { authorization: "Bearer " + bearer } });
let message = null, token = null;
const first = open();
setInterval(() => first.readyState === 1 && first.send('{"type":"ping"}'), 300);
first.on("open", () => first.send(JSON.stringify({ type: "serve_lease", op: "claim" })));
first.on("message", (d) => {
  const f = JSON.parse(String(d));
  if (f.type === "serve_lease" && f.held) console.log(JSON.stringify({ held: f.fence }));
  if (f.type === "message" && f.run) {
    message = f.id; token = f.token; console.log(JSON.stringify({ got: f.id }));
    first.send(JSON.stringify({ type: "output", id: message, token, chunks: [{ stream: "stdout", text: "A before\\n" }], req: "before" }));
  }
  if (f.req) console.log(JSON.stringify(f));
});
first.on("close", () => {
  const late = open();
  late.on("open", () => late.send(JSON.stringify({ type: "output", id: message, token, chunks: [{ stream: "stdout", text: "LATE A\\n" }], req: "late" })));
  late.on("message", (d) => {
    const f = JSON.parse(String(d));
    if (f.req) console.log(JSON.stringify(f));
  });
});
`;

function naiveOutputWriter(agent: string) {
  const url = `${fixture.dev.url.replace("http", "ws")}/agents/${agent}/serve?machine=naive-a`;
  const proc = spawn(process.execPath, ["-e", NAIVE_OUTPUT_WRITER, url, DEV_TOKEN], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  const lines: Record<string, unknown>[] = [];
  let buffer = "";
  proc.stdout!.on("data", (d) => {
    buffer += d;
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    for (const p of parts) if (p) lines.push(JSON.parse(p) as Record<string, unknown>);
  });
  const waitFor = async (pick: (l: Record<string, unknown>) => boolean, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = lines.find(pick);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`naive writer never printed the line; saw ${JSON.stringify(lines)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  started.push({ proc, pid: proc.pid!, tag: "naive", stderr: () => "", waitFor: () => Promise.resolve(0), exited: new Promise(() => {}), stop: async () => void proc.kill("SIGKILL") } as ServeProc);
  return { proc, lines, waitFor };
}

