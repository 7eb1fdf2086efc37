// `baton lease run` as real processes against a real `wrangler dev`: the command gets the lease
// in its environment, a held key refuses or makes --wait wait, signals and the terminal reach the
// command, and the key is free when it ends (lease-run-lost.test.ts: a lease lost or let go).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { baton, configHome, HOLD, http, killStarted, ready, unique } from "./lease-run-process.ts";
import { BIN, sharedServeFixture } from "./serve-helpers.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

afterAll(killStarted);

describe("baton lease run", () => {
  const fx = sharedServeFixture();

  it("runs the command with the lease in its env, exits with its code and frees the key", async () => {
    const session = unique();
    const script = `const e = process.env; console.log(JSON.stringify({ run_id: e.BATON_RUN_ID, fence: e.BATON_FENCE,
      token: e.BATON_FENCE_TOKEN, expires_at: e.BATON_LEASE_EXPIRES_AT, session: e.BATON_LEASE_SESSION })); process.exit(7);`;
    const b = baton(fx.dev.url, ["lease", "run", session, "--ttl", "5", "--", process.execPath, "-e", script]);
    expect((await b.exit).code).toBe(7);
    const env = JSON.parse(b.stdout()) as Record<string, string>;
    expect(env.run_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(env).toMatchObject({ fence: "1", token: "0000000000000001", session });
    expect(Number(env.expires_at)).toBeGreaterThan(Date.now());
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
  });

  it("a held key makes a second run exit 3 without running; --wait runs it once the holder ends", async () => {
    const session = unique();
    const holder = baton(fx.dev.url, ["lease", "run", session, "--ttl", "3", "--", ...HOLD]);
    const held = await ready(holder);
    const refused = baton(fx.dev.url, ["lease", "run", session, "--", process.execPath, "-e", `console.log("ran")`]);
    expect((await refused.exit).code).toBe(3);
    expect(refused.stdout()).not.toContain("ran");
    expect(refused.stderr()).toMatch(/held by another run/);

    const waiter = baton(fx.dev.url, ["lease", "run", session, "--wait", "--json", "--", ...HOLD]);
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
    const racers = Array.from({ length: 4 }, () => baton(fx.dev.url, ["lease", "run", session, "--", ...HOLD]));
    const losers = await Promise.all(racers.map(async (r) => {
      const running = await r.line(/"ready":true/).then(() => true, () => false);
      return running ? null : r;
    }));
    const winners = racers.filter((_r, i) => losers[i] === null);
    expect(winners).toHaveLength(1);
    for (const loser of losers) if (loser) expect(loser.proc.exitCode).toBe(3);
    winners[0]!.proc.stdin!.end();
    expect((await winners[0]!.exit).code).toBe(0);
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
  });

  it("--wait-timeout gives up with exit 3", async () => {
    const session = unique();
    const holder = baton(fx.dev.url, ["lease", "run", session, "--", ...HOLD]);
    await ready(holder);
    const t0 = performance.now();
    const waiter = baton(fx.dev.url, ["lease", "run", session, "--wait", "--wait-timeout", "1", "--", process.execPath, "-e", ""]);
    expect((await waiter.exit).code).toBe(3);
    expect(performance.now() - t0).toBeGreaterThan(1000);
    holder.proc.stdin!.end();
    expect((await holder.exit).code).toBe(0);
  });

  it.skipIf(!existsSync("/usr/bin/script"))("on a terminal, COMMAND keeps the terminal (a password prompt can open /dev/tty)", async () => {
    const session = unique();
    // `script` gives baton a pseudo-terminal, as a person's shell would.
    const inner = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} lease run ${session} -- sh -c 'exec 3</dev/tty && echo TTY-OK'`;
    const r = spawnSync("/usr/bin/script", ["-qc", inner, "/dev/null"], {
      env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN, XDG_CONFIG_HOME: configHome }, encoding: "utf8", timeout: 30_000,
    });
    expect(r.stdout.replace(/\r/g, "")).toContain("TTY-OK");
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ held: false });
  });

  it("SIGTERM to baton reaches the command, and the lease is released when it exits", async () => {
    const session = unique();
    const holder = baton(fx.dev.url, ["lease", "run", session, "--", ...HOLD]);
    await ready(holder);
    holder.proc.kill("SIGTERM");
    expect((await holder.exit).code).toBe(0);
    expect(holder.stdout()).toContain("got SIGTERM");
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
  });

  it("a missing command exits 127 and releases; bad flags are usage errors, exit 2", async () => {
    const session = unique();
    const missing = baton(fx.dev.url, ["lease", "run", session, "--", "/nonexistent/baton-test-command"]);
    expect((await missing.exit).code).toBe(127);
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ held: false, fence: 1 });
    const badTtl = baton(fx.dev.url, ["lease", "run", session, "--ttl", "3601", "--", "true"]);
    expect((await badTtl.exit).code).toBe(2);
    expect(badTtl.stderr()).toMatch(/--ttl must be a whole number of seconds between 1 and 3600/);
    const noCommand = baton(fx.dev.url, ["lease", "run", session]);
    expect((await noCommand.exit).code).toBe(2);
    expect(noCommand.stderr()).toMatch(/missing COMMAND \[ARGS\.\.\.\] after --/);
    expect(await http(fx.dev, "GET", `/leases/${session}`)).toMatchObject({ fence: 1 });
  });

  it("lease show prints the state, as JSON with --json", async () => {
    const session = unique();
    const holder = baton(fx.dev.url, ["lease", "run", session, "--", ...HOLD]);
    await ready(holder);
    const show = baton(fx.dev.url, ["lease", "show", session, "--json"]);
    expect((await show.exit).code).toBe(0);
    const state = JSON.parse(show.stdout()) as Record<string, unknown>;
    expect(state).toMatchObject({ session, held: true, fence: 1, fence_token: "0000000000000001", ttl_seconds: 30 });
    expect(state).not.toHaveProperty("run_id");
    holder.proc.stdin!.end();
    await holder.exit;
    const human = baton(fx.dev.url, ["lease", "show", session]);
    expect((await human.exit).code).toBe(0);
    expect(human.stdout()).toBe(`${session}: free, last fence 1\n`);
  });
});
