// `baton lease run` as real processes against a real `wrangler dev`: the command gets the lease
// in its environment, a held key refuses or makes --wait wait, a lost or unprovable lease kills
// the command, and a run that died lets its lease expire.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN } from "./serve-helpers.ts";
import { advanceClock, DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import { pidAlive } from "../../cli/lib/local-lock.ts";
import { alive } from "./process-tree-fixture.ts";

interface Baton {
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first stdout or stderr line matching `pattern`; rejects if the process exits first. */
  line(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exit: Promise<{ code: number | null; at: number }>;
}

const configHome = mkdtempSync(join(tmpdir(), "baton-cfg-"));
const started: Baton[] = [];

function baton(url: string, args: string[]): Baton {
  const proc = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, BATON_URL: url, BATON_TOKEN: DEV_TOKEN, XDG_CONFIG_HOME: configHome, NO_COLOR: "1" },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  let err = "";
  const waiters = new Set<() => void>();
  proc.stdout!.on("data", (d) => { out += d; for (const w of [...waiters]) w(); });
  proc.stderr!.on("data", (d) => { err += d; for (const w of [...waiters]) w(); });
  const exit = new Promise<{ code: number | null; at: number }>((r) => proc.once("close", (code) => r({ code, at: performance.now() })));
  const b: Baton = {
    proc,
    stdout: () => out,
    stderr: () => err,
    exit,
    line(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = `${out}\n${err}`.split("\n").find((l) => pattern.test(l));
          if (hit === undefined) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hit);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no line matching ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
        }, timeoutMs);
        waiters.add(check);
        check();
        void exit.then(() => {
          if (!waiters.has(check)) return;
          waiters.delete(check);
          clearTimeout(timer);
          reject(new Error(`exited without a line matching ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
        });
      });
    },
  };
  started.push(b);
  return b;
}

/** A command that prints its lease env as one JSON line, then runs until its stdin closes. */
const HOLD = [
  process.execPath, "-e",
  `process.on("SIGTERM", () => { process.stdout.write("got SIGTERM\\n"); process.exit(0); });
  process.stdin.resume(); process.stdin.on("end", () => process.exit(0));
  process.stdout.write(JSON.stringify({ ready: true, pid: process.pid, run_id: process.env.BATON_RUN_ID,
    fence: process.env.BATON_FENCE, token: process.env.BATON_FENCE_TOKEN, expires_at: process.env.BATON_LEASE_EXPIRES_AT }) + "\\n");`,
];

/** Like HOLD, but it ignores SIGTERM, so only SIGKILL stops it. */
const STUBBORN = [
  process.execPath, "-e",
  `process.on("SIGTERM", () => process.stdout.write("got SIGTERM\\n"));
  process.stdout.write(JSON.stringify({ ready: true, pid: process.pid }) + "\\n");
  setInterval(() => {}, 1000);`,
];

async function ready(b: Baton): Promise<{ pid: number; run_id: string; fence: string; token: string; expires_at: string }> {
  return JSON.parse(await b.line(/"ready":true/)) as never;
}

// Each baton leads its own process group, so whatever a failing test left behind (baton or its
// command) goes with it; a group id is never reused while a member lives.
afterAll(() => {
  for (const b of started) {
    try {
      process.kill(-b.proc.pid!, "SIGKILL");
    } catch {
      // the whole group is gone already
    }
  }
});

async function http(dev: DevServer, method: string, path: string, body?: unknown) {
  const res = await fetch(`${dev.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${DEV_TOKEN}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as Record<string, unknown>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const unique = () => `e2e-${Math.random().toString(36).slice(2, 10)}`;

describe("baton lease run", () => {
  let dev: DevServer;
  beforeAll(async () => {
    dev = await startWranglerDev();
  });
  afterAll(async () => {
    await dev?.stop();
  });

  it("runs the command with the lease in its env, exits with its code and frees the key", async () => {
    const session = unique();
    const script = `const e = process.env; console.log(JSON.stringify({ run_id: e.BATON_RUN_ID, fence: e.BATON_FENCE,
      token: e.BATON_FENCE_TOKEN, expires_at: e.BATON_LEASE_EXPIRES_AT, session: e.BATON_LEASE_SESSION })); process.exit(7);`;
    const b = baton(dev.url, ["lease", "run", session, "--ttl", "5", "--", process.execPath, "-e", script]);
    expect((await b.exit).code).toBe(7);
    const env = JSON.parse(b.stdout()) as Record<string, string>;
    expect(env.run_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(env).toMatchObject({ fence: "1", token: "0000000000000001", session });
    expect(Number(env.expires_at)).toBeGreaterThan(Date.now());
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
  });

  it("a held key makes a second run exit 3 without running; --wait runs it once the holder ends", async () => {
    const session = unique();
    const holder = baton(dev.url, ["lease", "run", session, "--ttl", "3", "--", ...HOLD]);
    const held = await ready(holder);
    const refused = baton(dev.url, ["lease", "run", session, "--", process.execPath, "-e", `console.log("ran")`]);
    expect((await refused.exit).code).toBe(3);
    expect(refused.stdout()).not.toContain("ran");
    expect(refused.stderr()).toMatch(/held by another run/);

    const waiter = baton(dev.url, ["lease", "run", session, "--wait", "--json", "--", ...HOLD]);
    await waiter.line(/"event":"waiting"/);
    holder.proc.stdin!.end();
    const holderExit = await holder.exit;
    expect(holderExit.code).toBe(0);
    const next = await ready(waiter);
    const handoffMs = performance.now() - holderExit.at;
    expect(next.fence).toBe("2");
    expect(next.run_id).not.toBe(held.run_id);
    console.log(`lease handoff to a --wait run: ${handoffMs.toFixed(0)} ms after the holder exited`);
    waiter.proc.stdin!.end();
    expect((await waiter.exit).code).toBe(0);
  });

  it("independent runs race for one key: exactly one runs its command, the others exit 3", async () => {
    const session = unique();
    const racers = Array.from({ length: 4 }, () => baton(dev.url, ["lease", "run", session, "--", ...HOLD]));
    const losers = await Promise.all(racers.map(async (r) => {
      const running = await r.line(/"ready":true/).then(() => true, () => false);
      return running ? null : r;
    }));
    const winners = racers.filter((_r, i) => losers[i] === null);
    expect(winners).toHaveLength(1);
    for (const loser of losers) if (loser) expect(loser.proc.exitCode).toBe(3);
    winners[0]!.proc.stdin!.end();
    expect((await winners[0]!.exit).code).toBe(0);
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
  });

  it("--wait-timeout gives up with exit 3", async () => {
    const session = unique();
    const holder = baton(dev.url, ["lease", "run", session, "--", ...HOLD]);
    await ready(holder);
    const t0 = performance.now();
    const waiter = baton(dev.url, ["lease", "run", session, "--wait", "--wait-timeout", "1", "--", process.execPath, "-e", ""]);
    expect((await waiter.exit).code).toBe(3);
    expect(performance.now() - t0).toBeGreaterThan(1000);
    holder.proc.stdin!.end();
    expect((await holder.exit).code).toBe(0);
  });

  it("renews on its own timer, so a run outlives several TTLs under the same fence", async () => {
    const session = unique();
    const holder = baton(dev.url, ["lease", "run", session, "--ttl", "2", "--", ...HOLD]);
    const held = await ready(holder);
    await sleep(4500);
    expect(await http(dev, "POST", `/leases/${session}/check`, { run_id: held.run_id, fence: 1 })).toMatchObject({ current: true });
    holder.proc.stdin!.end();
    expect((await holder.exit).code).toBe(0);
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
  });

  it("a refused renewal (lease taken over) kills the command and exits 4; the new holder is untouched", async () => {
    const session = unique();
    const holder = baton(dev.url, ["lease", "run", session, "--ttl", "3", "--", ...HOLD]);
    const held = await ready(holder);
    // Someone who knows the run_id ends it; another run takes the key before the next renewal.
    expect(await http(dev, "POST", `/leases/${session}/release`, { run_id: held.run_id })).toEqual({ released: true });
    const thief = crypto.randomUUID();
    expect(await http(dev, "POST", `/leases/${session}/acquire`, { run_id: thief, ttl_seconds: 30 })).toMatchObject({ fence: 2 });
    expect((await holder.exit).code).toBe(4);
    expect(holder.stdout()).toContain("got SIGTERM");
    expect(holder.stderr()).toMatch(/lost/);
    expect(await http(dev, "POST", `/leases/${session}/check`, { run_id: thief, fence: 2 })).toMatchObject({ current: true });
  });

  it("a lost lease kills the command's whole tree: a writer started by a shell stops too, not only the shell", async () => {
    const session = unique();
    const dir = mkdtempSync(join(tmpdir(), "baton-tree-"));
    const out = join(dir, "writes");
    const facts = join(dir, "facts");
    // bash runs a node writer as its child (not exec'd): the writer is the lease's grandchild.
    const writer = join(dir, "writer.cjs");
    writeFileSync(writer, `const fs = require("fs");
      fs.writeFileSync(${JSON.stringify(facts)}, JSON.stringify({ pid: process.pid, run_id: process.env.BATON_RUN_ID }));
      setInterval(() => fs.appendFileSync(${JSON.stringify(out)}, "w"), 20);`);
    const holder = baton(dev.url, ["lease", "run", session, "--ttl", "3", "--kill-grace", "0.5", "--",
      "bash", "-c", `"${process.execPath}" "${writer}"; echo after`]);
    await expect.poll(() => existsSync(facts), { timeout: 10_000 }).toBe(true);
    const { pid, run_id } = JSON.parse(readFileSync(facts, "utf8")) as { pid: number; run_id: string };
    expect(await http(dev, "POST", `/leases/${session}/release`, { run_id })).toEqual({ released: true });
    expect(await http(dev, "POST", `/leases/${session}/acquire`, { run_id: crypto.randomUUID(), ttl_seconds: 30 })).toMatchObject({ fence: 2 });
    expect((await holder.exit).code).toBe(4);
    // dead: gone, or a zombie its adopter has not reaped yet
    expect(alive(pid)).toBe(false);
    const size = readFileSync(out, "utf8").length;
    await sleep(300);
    expect(readFileSync(out, "utf8").length).toBe(size);
  });

  it.runIf(process.platform === "linux")("kill -9 of baton lease run kills its command's tree at once, a writer that left the session (setsid) and ignores SIGTERM included", async () => {
    const session = unique();
    const dir = mkdtempSync(join(tmpdir(), "baton-lifeline-"));
    const out = join(dir, "writes");
    const facts = join(dir, "facts");
    const writer = join(dir, "writer.cjs");
    writeFileSync(writer, `const fs = require("fs"); process.on("SIGTERM", () => {});
      fs.writeFileSync(${JSON.stringify(facts)}, String(process.pid));
      setInterval(() => fs.appendFileSync(${JSON.stringify(out)}, Date.now() + "\\n"), 20);`);
    // The writer's parent shell exits at once: it is re-parented and leads a session of its own.
    const holder = baton(dev.url, ["lease", "run", session, "--", "sh", "-c",
      `sh -c 'setsid "${process.execPath}" "${writer}" >/dev/null 2>&1 &'; sleep 300`]);
    await expect.poll(() => existsSync(out), { timeout: 10_000 }).toBe(true);
    const pid = Number(readFileSync(facts, "utf8"));
    holder.proc.kill("SIGKILL");
    const killedAt = Date.now();
    await expect.poll(() => alive(pid), { timeout: 5_000, interval: 10 }).toBe(false);
    const last = Number(readFileSync(out, "utf8").trim().split("\n").pop());
    expect(last - killedAt).toBeLessThan(1000);
  });

  it.skipIf(!existsSync("/usr/bin/script"))("on a terminal, COMMAND keeps the terminal (a password prompt can open /dev/tty)", async () => {
    const session = unique();
    // `script` gives baton a pseudo-terminal, as a person's shell would.
    const inner = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} lease run ${session} -- sh -c 'exec 3</dev/tty && echo TTY-OK'`;
    const r = spawnSync("/usr/bin/script", ["-qc", inner, "/dev/null"], {
      env: { ...process.env, BATON_URL: dev.url, BATON_TOKEN: DEV_TOKEN, XDG_CONFIG_HOME: configHome }, encoding: "utf8", timeout: 30_000,
    });
    expect(r.stdout.replace(/\r/g, "")).toContain("TTY-OK");
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ held: false });
  });

  it("SIGTERM to baton reaches the command, and the lease is released when it exits", async () => {
    const session = unique();
    const holder = baton(dev.url, ["lease", "run", session, "--", ...HOLD]);
    await ready(holder);
    holder.proc.kill("SIGTERM");
    expect((await holder.exit).code).toBe(0);
    expect(holder.stdout()).toContain("got SIGTERM");
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
  });

  it("a run that acquired and died has its lease expire and the key becomes free", async () => {
    const session = unique();
    const victim = baton(dev.url, ["lease", "run", session, "--ttl", "2", "--", ...HOLD]);
    await ready(victim);
    process.kill(-victim.proc.pid!, "SIGKILL");
    await victim.exit;
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ held: true, fence: 1 });
    await advanceClock(dev.url, 2000, { session });
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
    const next = baton(dev.url, ["lease", "run", session, "--", process.execPath, "-e", `console.log(process.env.BATON_FENCE)`]);
    expect((await next.exit).code).toBe(0);
    expect(next.stdout().trim()).toBe("2");
  });

  it("a missing command exits 127 and releases; bad flags are usage errors, exit 2", async () => {
    const session = unique();
    const missing = baton(dev.url, ["lease", "run", session, "--", "/nonexistent/baton-test-command"]);
    expect((await missing.exit).code).toBe(127);
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
    const badTtl = baton(dev.url, ["lease", "run", session, "--ttl", "3601", "--", "true"]);
    expect((await badTtl.exit).code).toBe(2);
    expect(badTtl.stderr()).toMatch(/--ttl must be a whole number of seconds between 1 and 3600/);
    const noCommand = baton(dev.url, ["lease", "run", session]);
    expect((await noCommand.exit).code).toBe(2);
    expect(noCommand.stderr()).toMatch(/missing COMMAND \[ARGS\.\.\.\] after --/);
    expect(await http(dev, "GET", `/leases/${session}`)).toMatchObject({ fence: 1 });
  });

  it("lease show prints the state, as JSON with --json", async () => {
    const session = unique();
    const holder = baton(dev.url, ["lease", "run", session, "--", ...HOLD]);
    await ready(holder);
    const show = baton(dev.url, ["lease", "show", session, "--json"]);
    expect((await show.exit).code).toBe(0);
    const state = JSON.parse(show.stdout()) as Record<string, unknown>;
    expect(state).toMatchObject({ session, held: true, fence: 1, fence_token: "0000000000000001", ttl_seconds: 30 });
    expect(state).not.toHaveProperty("run_id");
    holder.proc.stdin!.end();
    await holder.exit;
    const human = baton(dev.url, ["lease", "show", session]);
    expect((await human.exit).code).toBe(0);
    expect(human.stdout()).toBe(`${session}: free, last fence 1\n`);
  });
});

describe("baton lease run without its coordinator", () => {
  it("kills the command (SIGTERM, then SIGKILL after the grace) before the TTL runs out and exits 4", async () => {
    const dev = await startWranglerDev();
    try {
      const b = baton(dev.url, ["lease", "run", unique(), "--ttl", "2", "--kill-grace", "0.5", "--", ...STUBBORN]);
      const { pid } = await ready(b);
      const stoppedAt = performance.now();
      await dev.stop();
      const exit = await b.exit;
      const exitAfterMs = exit.at - stoppedAt;
      expect(exit.code).toBe(4);
      expect(b.stdout()).toContain("got SIGTERM");
      expect(pidAlive(pid)).toBe(false);
      expect(b.stderr()).toMatch(/could not be renewed before it expired/);
      // The TTL (2 s) from the last renewal plus the 0.5 s grace bounds the time to the exit; the
      // extra second is room for a loaded machine, not for a late kill.
      expect(exitAfterMs).toBeLessThan(2000 + 500 + 1000);
      console.log(`lease run exited ${exitAfterMs.toFixed(0)} ms after the coordinator was stopped (ttl 2 s, grace 0.5 s)`);
    } finally {
      await dev.stop();
    }
  });
});
