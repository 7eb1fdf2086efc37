// The whole CLI surface as real processes against `wrangler dev`: every command takes --url and
// --token the same way and refuses a wrong token; unknown options and extra arguments are usage
// errors (exit 2); --version; help without colour that shows `-- COMMAND`; numbers checked;
// honest waiting and failing; serve stops and releases on SIGHUP and when its parent dies.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, getJson, sharedServeFixture, uniqueAgent } from "./serve-helpers.ts";
import { DEV_TOKEN, freePort, ROOT } from "./wrangler-dev.ts";

const fx = sharedServeFixture();

const home = mkdtempSync(join(tmpdir(), "baton-surface-"));

function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: join(home, "config"), BATON_STATE_DIR: join(home, "state"), BATON_LOCK_DIR: join(home, "lock") };
  delete e.BATON_URL;
  delete e.BATON_TOKEN;
  return e;
}

function baton(args: string[], timeoutMs = 30_000) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(), encoding: "utf8", timeout: timeoutMs });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

describe("the baton command line", () => {
  it("every command refuses a wrong --token with the same sentence (lease run: exit 5, the rest: exit 1)", () => {
    const agent = uniqueAgent("token");
    const cases: [string[], number][] = [
      [["who", agent], 1],
      [["who"], 1],
      [["send", agent, "hi"], 1],
      [["history", agent], 1],
      [["lease", "show", "s1"], 1],
      [["lease", "run", "s1", "--", "true"], 5],
      [["serve", agent, "--", "cat"], 1],
    ];
    for (const [args, code] of cases) {
      const dashes = args.indexOf("--");
      const own = dashes === -1 ? args : args.slice(0, dashes);
      const rest = dashes === -1 ? [] : args.slice(dashes);
      const out = baton([...own, "--url", fx.dev.url, "--token", "wrong-token", ...rest]);
      expect(out.code, args.join(" ")).toBe(code);
      expect(out.stderr, args.join(" ")).toContain(`the coordinator at ${fx.dev.url} refused the token`);
      expect(out.stderr).not.toMatch(/unauthorized|bad_request|at .*\.js:\d+/);
    }
    // and the right one, passed the same way, works for all of them
    expect(baton(["who", agent, "--url", fx.dev.url, "--token", DEV_TOKEN]).code).toBe(0);
    expect(baton(["history", agent, "--url", fx.dev.url, "--token", DEV_TOKEN]).code).toBe(0);
  });

  it("unknown options, extra arguments, missing ones and bad numbers are usage errors: exit 2, one line and a pointer to --help", () => {
    const cases: [string[], RegExp][] = [
      [["who", "--bogus-flag"], /^baton: unknown option --bogus-flag\n\(see `baton who --help`\)\n$/],
      [["who", "reviewer", "extra"], /^baton: unexpected argument "extra"\n/],
      [["send", "reviewer"], /^baton: missing TEXT\n/],
      [["send", "reviewer", "x", "--wait", "--timeout", "abc"], /^baton: --timeout must be a number of seconds between 0.1 and 86400, got "abc"\n$/],
      [["send", "reviewer", "x", "--wait", "--timeout=-5"], /--timeout must be/],
      [["send", "reviewer", "x", "--timeout", "5"], /--timeout only applies with --wait/],
      [["history", "reviewer", "--limit", "0"], /--limit must be a whole number between 1 and 1000/],
      [["lease", "run", "s1", "--ttl", "1.5", "--", "true"], /--ttl must be a whole number of seconds/],
      [["lease", "show", "s1", "--wait"], /unknown option --wait/],
      [["serve", "reviewer"], /missing COMMAND \[ARGS\.\.\.\] after --/],
      [["serve", "reviewer", "cat"], /unexpected argument "cat" \(a command to run goes after --\)/],
      [["serve", "reviewer", "--grace", "x", "--", "cat"], /--grace must be a number of seconds between 0 and 3600/],
      [["login", "--url"], /--url needs a value/],
      [["lease"], /lease needs a subcommand: run or show/],
      [["nonsense"], /^baton: unknown command "nonsense"\n/],
      [["sned", "reviewer", "hi"], /^baton: unknown command "sned" \(did you mean send\?\)\n\(see `baton --help`\)\n$/],
      [["lease", "rnu", "s1"], /^baton: lease needs a subcommand: run or show \(did you mean lease run\?\)\n/],
      [["send", "reviewer", "x", "--wiat"], /^baton: unknown option --wiat \(did you mean --wait\?\)\n/],
    ];
    for (const [args, message] of cases) {
      const out = baton([...args]);
      expect(out.code, args.join(" ")).toBe(2);
      expect(out.stderr, args.join(" ")).toMatch(message);
      expect(out.stdout).toBe("");
    }
  });

  it("--version prints the version; help is plain text, names the full command and shows -- COMMAND and the exit codes", () => {
    expect(baton(["--version"])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
    const serve = baton(["serve", "--help"]);
    expect(serve.code).toBe(0);
    expect(serve.stdout).toMatch(/^Usage: baton serve AGENT \[options\] -- COMMAND \[ARGS\.\.\.\]\n/);
    expect(serve.stdout).toContain("Exit codes:");
    const leaseRun = baton(["lease", "run", "--help"]);
    expect(leaseRun.stdout).toMatch(/^Usage: baton lease run SESSION \[options\] -- COMMAND \[ARGS\.\.\.\]\n/);
    expect(leaseRun.stdout).toMatch(/ 3 +the lease is held by another run/);
    const top = baton(["--help"]);
    for (const out of [serve, leaseRun, top]) expect(out.stdout).not.toMatch(/\x1b\[/);
    expect(top.stdout).toContain("lease run");
    // `--help` after `--` belongs to the served command, so it is not baton's help
    expect(baton(["serve", "Bad Name", "--", "cat", "--help"]).code).toBe(2);
  });

  it("send refuses a message over the text limit before reading past it: 50 MiB on stdin is cut off after a pipe or two, exit 2, nothing posted", async () => {
    const agent = uniqueAgent("huge");
    const child = spawn(process.execPath, [BIN, "send", agent, "-", "--url", fx.dev.url, "--token", DEV_TOKEN], { cwd: ROOT, env: env(), stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const chunk = Buffer.alloc(64 * 1024, "x");
    let written = 0;
    child.stdin.on("error", () => {
      // EPIPE once the CLI stops reading: that is the point
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    let open = true;
    void exited.then(() => (open = false));
    while (open && written < 50 * 1024 * 1024) {
      const accepted = child.stdin.write(chunk);
      written += chunk.length;
      if (!accepted) await Promise.race([new Promise((r) => child.stdin.once("drain", r)), exited]);
    }
    expect(await exited).toBe(2);
    expect(stderr).toBe("baton: the message text is over 32768 bytes, the most one message may hold; nothing was sent (send a path or a link to it instead)\n");
    expect(written).toBeLessThan(4 * 1024 * 1024);
    const long = baton(["send", agent, "é".repeat(16 * 1024 + 1), "--url", fx.dev.url, "--token", DEV_TOKEN]);
    expect(long.code).toBe(2);
    expect(long.stderr).toContain("over 32768 bytes");
    expect(JSON.parse(baton(["history", agent, "--json", "--url", fx.dev.url, "--token", DEV_TOKEN]).stdout).messages).toEqual([]);
  });

  it("send --wait to an agent nobody serves says so, then gives up with exit 3 after --timeout", () => {
    const agent = uniqueAgent("nobody");
    const out = baton(["send", agent, "anyone?", "--wait", "--timeout", "1", "--url", fx.dev.url, "--token", DEV_TOKEN]);
    expect(out.code).toBe(3);
    expect(out.stderr).toMatch(new RegExp(`^baton: nobody serves ${agent} right now; message \\d+ waits in its queue until \`baton serve ${agent} -- COMMAND\` runs \\(waiting up to 1 s\\)\\n`));
    expect(out.stderr).toMatch(/baton: no reply to message \d+ within 1 s \(status queued; nobody serves .+\)\n$/);
  });

  it("an unreachable coordinator: serve says why at once and keeps retrying; who --watch says it is connecting and why it cannot", async () => {
    const unreachable = `http://127.0.0.1:${await freePort()}`;
    for (const args of [["serve", uniqueAgent("nowhere"), "--url", unreachable, "--", "cat"], ["who", "--watch", "--url", unreachable]]) {
      const proc = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(), stdio: ["ignore", "pipe", "pipe"] });
      let err = "";
      proc.stderr!.on("data", (d) => (err += d));
      try {
        await until(() => /connection refused \(ECONNREFUSED\)/.test(err), 10_000, () => err);
        expect(err).toMatch(new RegExp(`connecting to ${unreachable}`));
        expect(proc.exitCode).toBeNull();
      } finally {
        proc.kill("SIGKILL");
      }
    }
  });

  it("serve stops and releases on SIGHUP (a terminal closing) and when its parent dies without a word", async () => {
    const presence = (agent: string) => getJson<{ connection_count: number; holder: unknown }>(`${fx.dev.url}/agents/${agent}/presence`);
    const hup = uniqueAgent("hup");
    const direct = spawn(process.execPath, [BIN, "serve", hup, "--url", fx.dev.url, "--token", DEV_TOKEN, "--", "cat"], { cwd: ROOT, env: env(), stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    direct.stderr!.on("data", (d) => (err += d));
    await until(() => /holder/.test(err), 20_000, () => err);
    const exited = new Promise<number | null>((r) => direct.once("exit", (code) => r(code)));
    direct.kill("SIGHUP");
    expect(await exited).toBe(0);
    expect(err).toMatch(/SIGHUP: stopping[\s\S]*released the lease/);
    expect((await presence(hup)).connection_count).toBe(0);

    // A shell starts serve and is then killed with SIGKILL: serve is re-parented and must notice.
    const orphan = uniqueAgent("orphan");
    const shell = spawn("sh", ["-c", `'${process.execPath}' '${BIN}' serve ${orphan} --url ${fx.dev.url} --token ${DEV_TOKEN} -- cat 2>'${join(home, "orphan.log")}' & wait`], { env: env(), stdio: "ignore" });
    await until(async () => (await presence(orphan)).holder !== null, 20_000, () => "");
    shell.kill("SIGKILL");
    // The TTL is 60 s here: only serve releasing explains the lease going this soon.
    await until(async () => (await presence(orphan)).connection_count === 0, 10_000, () => readFileSync(join(home, "orphan.log"), "utf8"));
    expect(readFileSync(join(home, "orphan.log"), "utf8")).toMatch(/parent exited: stopping[\s\S]*released the lease/);
  });
});

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, context: () => string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; output:\n${context()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
