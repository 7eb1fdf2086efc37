// `baton lease run` when its lease is lost or let go, as real processes against a real `wrangler
// dev`: it renews on its own timer, a lost or unprovable lease kills the command's whole tree, and
// a run that died lets its lease expire.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pidAlive } from "../../cli/lib/local-lock.ts";
import { baton, HOLD, http, killStarted, ready, sleep, STUBBORN, unique } from "./lease-run-process.ts";
import { alive } from "./process-tree-fixture.ts";
import { sharedServeFixture } from "./serve-helpers.ts";
import { advanceClock } from "./wrangler-dev.ts";

afterAll(killStarted);

describe("baton lease run, its lease lost", () => {
  const fx = sharedServeFixture();

  it("renews on its own timer, so a run outlives several TTLs under the same fence", async () => {
    const session = unique();
    const holder = baton(fx.dev.url, ["lease", "run", session, "--ttl", "2", "--", ...HOLD]);
    const held = await ready(holder);
    await sleep(4500);
    expect(await http(fx.dev, "POST", `/leases/${session}/check`, { run_id: held.run_id, fence: 1 })).toMatchObject({ current: true });
    holder.proc.stdin!.end();
    expect((await holder.exit).code).toBe(0);
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
  });

  it("a refused renewal (lease taken over) kills the command and exits 4; the new holder is untouched", async () => {
    const session = unique();
    const holder = baton(fx.dev.url, ["lease", "run", session, "--ttl", "3", "--", ...HOLD]);
    const held = await ready(holder);
    // Someone who knows the run_id ends it; another run takes the key before the next renewal.
    expect(await http(fx.dev, "POST", `/leases/${session}/release`, { run_id: held.run_id })).toEqual({ released: true });
    const thief = crypto.randomUUID();
    expect(await http(fx.dev, "POST", `/leases/${session}/acquire`, { run_id: thief, ttl_seconds: 30 })).toMatchObject({ fence: 2 });
    expect((await holder.exit).code).toBe(4);
    expect(holder.stdout()).toContain("got SIGTERM");
    expect(holder.stderr()).toMatch(/lost/);
    expect(await http(fx.dev, "POST", `/leases/${session}/check`, { run_id: thief, fence: 2 })).toMatchObject({ current: true });
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
    const holder = baton(fx.dev.url, ["lease", "run", session, "--ttl", "3", "--kill-grace", "0.5", "--",
      "bash", "-c", `"${process.execPath}" "${writer}"; echo after`]);
    await expect.poll(() => existsSync(facts), { timeout: 10_000 }).toBe(true);
    const { pid, run_id } = JSON.parse(readFileSync(facts, "utf8")) as { pid: number; run_id: string };
    expect(await http(fx.dev, "POST", `/leases/${session}/release`, { run_id })).toEqual({ released: true });
    expect(await http(fx.dev, "POST", `/leases/${session}/acquire`, { run_id: crypto.randomUUID(), ttl_seconds: 30 })).toMatchObject({ fence: 2 });
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
    const holder = baton(fx.dev.url, ["lease", "run", session, "--", "sh", "-c",
      `sh -c 'setsid "${process.execPath}" "${writer}" >/dev/null 2>&1 &'; sleep 300`]);
    await expect.poll(() => existsSync(out), { timeout: 10_000 }).toBe(true);
    const pid = Number(readFileSync(facts, "utf8"));
    holder.proc.kill("SIGKILL");
    const killedAt = Date.now();
    await expect.poll(() => alive(pid), { timeout: 5_000, interval: 10 }).toBe(false);
    const last = Number(readFileSync(out, "utf8").trim().split("\n").pop());
    expect(last - killedAt).toBeLessThan(1000);
  });

  it("a run that acquired and died has its lease expire and the key becomes free", async () => {
    const session = unique();
    const victim = baton(fx.dev.url, ["lease", "run", session, "--ttl", "2", "--", ...HOLD]);
    await ready(victim);
    process.kill(-victim.proc.pid!, "SIGKILL");
    await victim.exit;
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ held: true, fence: 1 });
    // The shard holds every file's sessions: its clock runs on after the move, or their leases would never expire.
    await advanceClock(fx.dev.url, 2000, { session, run: true });
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
    const next = baton(fx.dev.url, ["lease", "run", session, "--", process.execPath, "-e", `console.log(process.env.BATON_FENCE)`]);
    expect((await next.exit).code).toBe(0);
    expect(next.stdout().trim()).toBe("2");
  });
});

describe("baton lease run without its coordinator", () => {
  const fx = sharedServeFixture();

  it("kills the command (SIGTERM, then SIGKILL after the grace) before the TTL runs out and exits 4", async () => {
    // The coordinator goes away as far as this run can tell: it reaches the shared one through a
    // proxy that then stops (every connection cut, every new one refused), as a stopped wrangler dev is.
    const dev = await tcpProxy(fx.dev.url);
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

/** A loopback TCP proxy to `target`; stop() closes it and cuts every connection through it. */
async function tcpProxy(target: string): Promise<{ url: string; stop(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on("error", () => {});
      s.on("close", () => (open.delete(s), client.destroy(), upstream.destroy()));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  let stopped: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: () => (stopped ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of open) s.destroy();
    })),
  };
}
