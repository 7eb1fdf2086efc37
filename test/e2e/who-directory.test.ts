// `baton who` against a real `wrangler dev`: one agent's table, every agent from the directory,
// --json for scripts, --watch following changes live, and one-line errors for user mistakes.
import type { Presence } from "../../worker/wire/server-frames.ts";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, runBaton, sharedServeFixture, startServe, token, uniqueAgent, writeSinkCommand, type ServeProc } from "./serve-helpers.ts";
import { ROOT } from "./wrangler-dev.ts";

// `baton who` without AGENT lists the whole account: an account of its own, with no other file's agents.
const fixture = sharedServeFixture({ account: "who-directory" });
const { started } = fixture;

async function serveAgent(agent: string, tags: string[]): Promise<ServeProc[]> {
  const { command, sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-sink-")));
  const procs: ServeProc[] = [];
  for (const [i, tag] of tags.entries()) {
    const s = startServe({ url: fixture.dev.url, agent, tag, command, sink });
    started.push(s);
    procs.push(s);
    await s.waitFor(i === 0 ? /holder \(fence \d+\)/ : /standby/);
  }
  return procs;
}

describe("baton who", () => {
  it("shows one agent's holder and standbys as a table and as JSON", async () => {
    const agent = uniqueAgent("who");
    await serveAgent(agent, ["a", "b", "c"]);
    const json = runBaton(["who", agent, "--json"], { BATON_URL: fixture.dev.url });
    expect(json.code).toBe(0);
    const p = JSON.parse(json.stdout) as Presence;
    expect(p.holder?.machine).toBe("machine-a");
    expect(p.serve_standbys).toBe(2);
    expect(p.connections.map((c) => [c.machine, c.held])).toEqual([["machine-a", true], ["machine-b", false], ["machine-c", false]]);

    const table = runBaton(["who", agent], { BATON_URL: fixture.dev.url });
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split("\n");
    expect(lines[0]).toMatch(new RegExp(`^${agent}: holder claim \\d+ on machine-a \\(fence \\d+, since .+\\), 2 standbys, heartbeat TTL 2s$`));
    expect(lines.filter((l) => l.trimStart().startsWith("*"))).toHaveLength(1);
    expect(lines.find((l) => l.trimStart().startsWith("*"))).toMatch(/machine-a\s+\d+\s+holder/);
    expect(lines.filter((l) => /\sstandby\s/.test(l))).toHaveLength(2);
  });

  it("without AGENT lists every agent that has connections", async () => {
    const one = uniqueAgent("dir");
    const two = uniqueAgent("dir");
    await serveAgent(one, ["a", "b"]);
    await serveAgent(two, ["c"]);
    const out = runBaton(["who", "--json"], { BATON_URL: fixture.dev.url });
    expect(out.code).toBe(0);
    const { agents } = JSON.parse(out.stdout) as { agents: Presence[] };
    const byName = new Map(agents.map((a) => [a.agent, a]));
    expect(byName.get(one)).toMatchObject({ serve_standbys: 1, holder: { machine: "machine-a" } });
    expect(byName.get(two)).toMatchObject({ serve_standbys: 0, holder: { machine: "machine-c" } });
    // The table reads the summary listing.
    const table = runBaton(["who"], { BATON_URL: fixture.dev.url });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^${one}: holder claim \\d+ on machine-a .*1 standby`, "m"));
    expect(table.stdout).toMatch(new RegExp(`^${two}: holder claim \\d+ on machine-c .*0 standbys`, "m"));
  });

  it("--watch --json prints the new holder soon after the old one is killed", async () => {
    const agent = uniqueAgent("watch");
    const [a] = await serveAgent(agent, ["a", "b"]);
    const watcher = spawn(process.execPath, [BIN, "who", agent, "--watch", "--json"], {
      cwd: ROOT,
      env: { ...process.env, BATON_URL: fixture.dev.url, BATON_TOKEN: token() },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const holders: string[] = [];
      let buffer = "";
      let notify: () => void = () => {};
      watcher.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
        buffer += chunk;
        for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
          const p = JSON.parse(buffer.slice(0, nl)) as Presence | null;
          buffer = buffer.slice(nl + 1);
          holders.push(p?.holder?.machine ?? "none");
          notify();
        }
      });
      const seen = (machine: string, timeoutMs: number) =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`watch never showed ${machine}: ${holders.join(",")}`)), timeoutMs);
          notify = () => holders.includes(machine) && (clearTimeout(timer), resolve());
          notify();
        });
      await seen("machine-a", 10_000);
      const killedAt = performance.now();
      a!.proc.kill("SIGKILL");
      await seen("machine-b", 6000);
      expect(performance.now() - killedAt).toBeLessThan(4000);
    } finally {
      watcher.kill("SIGKILL");
    }
  });

  it("user mistakes are one line on stderr: a refused token exits 1, a bad name is a usage error (2)", () => {
    const badToken = runBaton(["who", "x", "--token", "wrong-token"], { BATON_URL: fixture.dev.url });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toBe(`baton: the coordinator at ${fixture.dev.url} refused the token (run \`baton login\`, or pass --token or BATON_TOKEN)\n`);
    const badName = runBaton(["who", "Not A Name"], { BATON_URL: fixture.dev.url });
    expect(badName.code).toBe(2);
    expect(badName.stderr).toMatch(/^baton: bad agent name "Not A Name": [^\n]+\n$/);
  });
});
