// Cancel through the real CLI against a real `wrangler dev`: `baton serve` runs a command that
// spawns a grandchild, `baton cancel` stops the whole tree (every pid gone), the message ends
// `cancelled` with who and why, and the runner takes the next message. `send --wait` on Ctrl-C
// prints the command that cancels, and with --cancel-on-interrupt cancels.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, postMessage, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { alive, killLeftovers, treeCommand, treePids } from "./process-tree-fixture.ts";

const fx = sharedServeFixture();
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach(killLeftovers));

async function until<T>(what: string, probe: () => T | null | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("cancel end to end", () => {
  it("baton cancel stops the command's whole tree (a grandchild included), the message ends cancelled, and the runner takes the next one", async () => {
    const agent = uniqueAgent("cancel");
    const dir = mkdtempSync(join(tmpdir(), "baton-cancel-"));
    dirs.push(dir);
    const served = startServe({ url: fx.dev.url, agent, tag: "a", command: treeCommand(dir), sink: join(dir, "sink"), env: { PIDS: dir } });
    fx.started.push(served);
    await served.waitFor(/holder/);
    const long = await postMessage(fx.dev.url, agent, "long");
    const next = await postMessage(fx.dev.url, agent, "short");
    const pids = await until("the tree's pids", () => treePids(dir, long));
    expect(pids.every(alive)).toBe(true);
    const res = runBaton(["cancel", agent, String(long), "--reason", "wrong branch"], { BATON_URL: fx.dev.url });
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`message ${long} of ${agent} cancelled by the unnamed token \\(cli\\) at .*: wrong branch; it will not run again`));
    await until("every pid of the tree gone", () => (pids.some(alive) ? null : true), 10_000);
    const done = await waitForMessage(fx.dev.url, agent, next, (m) => m.status === "acknowledged");
    expect(done.reply).toBe("did: short\n");
    expect(await waitForMessage(fx.dev.url, agent, long, (m) => m.status === "cancelled")).toMatchObject({ attempts: 1, reply: null });
    await served.waitFor(new RegExp(`message ${long} \\(token \\d+\\) was cancelled by the unnamed token \\(wrong branch\\)`));
    const again = runBaton(["cancel", agent, String(long), "--json"], { BATON_URL: fx.dev.url });
    expect(JSON.parse(again.stdout)).toMatchObject({ status: "cancelled", cancelled: { reason: "wrong branch", token: "default", via: "cli" } });
    const late = runBaton(["cancel", agent, String(next)], { BATON_URL: fx.dev.url });
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/cannot cancel: .*message \d+ is acknowledged: it ended before the cancel/);
    const retried = runBaton(["retry", agent, String(long)], { BATON_URL: fx.dev.url });
    expect(retried.code).toBe(1);
    expect(retried.stderr).toMatch(/a cancelled message is final/);
    const history = runBaton(["history", agent], { BATON_URL: fx.dev.url });
    expect(history.stdout).toMatch(/cancelled "wrong branch" by the unnamed token \(dev, cli\)/);
  });

  it("agent set --on-busy reject: a second send while the first is queued is refused with the holder named (exit 9, JSON with --json); a debounce outside replace is refused; replace supersedes it and send --wait says so", async () => {
    const agent = uniqueAgent("busy");
    const set = runBaton(["agent", "set", agent, "--on-busy", "reject"], { BATON_URL: fx.dev.url });
    expect(set.stdout).toMatch(/on busy reject/);
    expect(runBaton(["agent", "set", agent, "--on-busy", "drop"], { BATON_URL: fx.dev.url })).toMatchObject({ code: 2, stderr: expect.stringMatching(/--on-busy must be queue, reject, interrupt or replace/) });
    expect(runBaton(["send", agent, "first"], { BATON_URL: fx.dev.url }).code).toBe(0);
    const refused = runBaton(["send", agent, "second"], { BATON_URL: fx.dev.url });
    expect(refused.code, "busy has its own exit code").toBe(9);
    expect(refused.stderr).toMatch(/busy: message 1 is queued \(on_busy reject\); nothing was stored/);
    const refusedJson = runBaton(["send", agent, "second", "--json"], { BATON_URL: fx.dev.url });
    expect(refusedJson.code).toBe(9);
    expect(JSON.parse(refusedJson.stdout)).toMatchObject({ error: "busy", holder: 1, message: expect.stringMatching(/on_busy reject/) });
    // A debounce means something only under replace: refused with the reason, and nothing changed.
    const debounced = runBaton(["agent", "set", agent, "--on-busy", "queue", "--debounce-ms", "500"], { BATON_URL: fx.dev.url });
    expect(debounced).toMatchObject({ code: 2, stderr: expect.stringContaining(`--debounce-ms only applies with --on-busy replace (${agent}'s would be queue); nothing was changed`) });
    expect(runBaton(["agent", "set", agent, "--debounce-ms", "500"], { BATON_URL: fx.dev.url })).toMatchObject({ code: 2, stderr: expect.stringContaining(`(${agent}'s would be reject)`) });
    expect(runBaton(["agent", "set", agent], { BATON_URL: fx.dev.url }).stdout).toMatch(/on busy reject\n$/);
    const ceiling = runBaton(["agent", "set", agent, "--on-busy", "replace", "--debounce-ms", "200", "--debounce-max", "900"], { BATON_URL: fx.dev.url });
    expect(ceiling.stdout).toMatch(/on busy replace \(debounce 200 ms, at most 900 ms after a burst's first\)/);
    expect(runBaton(["agent", "set", agent, "--debounce-max", "3600001"], { BATON_URL: fx.dev.url })).toMatchObject({ code: 2, stderr: expect.stringMatching(/debounce-max/) });
    expect(runBaton(["agent", "set", agent, "--on-busy", "replace", "--debounce-ms", "0"], { BATON_URL: fx.dev.url }).stdout).toMatch(/on busy replace/);
    const waiting = spawn(process.execPath, [BIN, "send", agent, "v1", "--wait", "--timeout", "30"], {
      cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN }, stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    waiting.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const exited = new Promise<number | null>((r) => waiting.once("exit", (code) => r(code)));
    for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 50))) {
      if ((await fetch(`${fx.dev.url}/agents/${agent}/messages/2`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).ok) break;
      if (Date.now() > deadline) throw new Error("send --wait never posted message 2");
    }
    expect(runBaton(["send", agent, "v2"], { BATON_URL: fx.dev.url }).code).toBe(0);
    expect(await exited).toBe(8);
    expect(stderr).toMatch(/message 2 was superseded by message 3 before it started/);
    expect(runBaton(["show", agent, "2"], { BATON_URL: fx.dev.url }).stdout).toMatch(/superseded  by message 3/);
  });

  it("send --wait: Ctrl-C prints the exact cancel command and exits 130, leaving the message; with --cancel-on-interrupt it cancels it", async () => {
    const agent = uniqueAgent("sigint");
    const dir = mkdtempSync(join(tmpdir(), "baton-sigint-"));
    dirs.push(dir);
    const served = startServe({ url: fx.dev.url, agent, tag: "a", command: treeCommand(dir), sink: join(dir, "sink"), env: { PIDS: dir } });
    fx.started.push(served);
    await served.waitFor(/holder/);
    const interrupt = async (extra: string[], id: number) => {
      const send = spawn(process.execPath, [BIN, "send", agent, "long", "--wait", ...extra], {
        cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN }, stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      send.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
      const exited = new Promise<number | null>((r) => send.once("exit", (code) => r(code)));
      // Every pid of the tree recorded, not only the shell's: a cancel before the rest wrote theirs left none to check (a clean-clone run).
      await until(`message ${id}'s tree running`, () => treePids(dir, id));
      send.kill("SIGINT");
      return { code: await exited, stderr };
    };
    const left = await interrupt([], 1);
    expect(left.code).toBe(130);
    expect(left.stderr).toContain(`baton cancel ${agent} 1\n`);
    expect((await waitForMessage(fx.dev.url, agent, 1, () => true)).status).toBe("running");
    runBaton(["cancel", agent, "1"], { BATON_URL: fx.dev.url });
    const cancelled = await interrupt(["--cancel-on-interrupt"], 2);
    expect(cancelled.code).toBe(130);
    expect(cancelled.stderr).toMatch(/message 2 of .* cancelled by the unnamed token \(cli\) at .*: interrupted: Ctrl-C on baton send --wait/);
    expect((await waitForMessage(fx.dev.url, agent, 2, (m) => m.status === "cancelled")).status).toBe("cancelled");
    const pids = treePids(dir, 2)!;
    await until("every pid of message 2's tree gone", () => (pids.some(alive) ? null : true), 10_000);
    expect(readFileSync(join(dir, "2.sh"), "utf8").trim()).toMatch(/^\d+$/);
  });

  it("send --wait --cancel-on-interrupt: a Ctrl-C while the post's answer is on its way still cancels the message it posted", async () => {
    const agent = uniqueAgent("sigint-early");
    const proxy = await holdingProxy(fx.dev.url);
    try {
      const send = spawn(process.execPath, [BIN, "send", agent, "early", "--wait", "--cancel-on-interrupt"], {
        cwd: ROOT, env: { ...process.env, BATON_URL: proxy.url, BATON_TOKEN: DEV_TOKEN }, stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      send.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
      const exited = new Promise<number | null>((r) => send.once("exit", (code) => r(code)));
      // The coordinator has stored the message; its answer is held until Ctrl-C has reached send.
      await proxy.posted;
      send.kill("SIGINT");
      await new Promise((r) => setTimeout(r, 200));
      proxy.release();
      expect(await exited).toBe(130);
      expect(stderr).toMatch(/message 1 of .* cancelled by the unnamed token \(cli\)/);
      expect((await waitForMessage(fx.dev.url, agent, 1, (m) => m.status === "cancelled")).status).toBe("cancelled");
    } finally {
      proxy.server.close();
    }
  });
});

/** A proxy to the coordinator that holds the answer to the first message post until release(). */
async function holdingProxy(target: string): Promise<{ url: string; server: Server; posted: Promise<void>; release(): void }> {
  let posted = () => {};
  let release = () => {};
  const postedP = new Promise<void>((r) => (posted = r));
  const released = new Promise<void>((r) => (release = r));
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "connection") as [string, string][]);
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    const answer = await fetch(new URL(req.url!, target), { method: req.method, headers, body });
    const text = Buffer.from(await answer.arrayBuffer());
    if (req.method === "POST" && /\/messages$/.test(req.url!)) {
      posted();
      await released;
    }
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(text);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, posted: postedP, release };
}
