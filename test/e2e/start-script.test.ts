// `npm start -- --port P`: the coordinator comes up on P and every "try it" line it prints talks
// to P (run here as printed, with the built CLI in place of `npx baton`); apart from the port, it
// prints what the README shows. Without a linked `baton` the lines say `npx baton` and one more
// says how to link it; with this checkout's `baton` on PATH (the layout `npm link` makes) they say
// `baton`, and that `baton` runs. A second `npm start` on a port that already answers says what
// holds it and exits 1 at once, without building or starting wrangler (the project's shared coordinator
// is that first one).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { BIN } from "./serve-helpers.ts";
import { createServer, type AddressInfo } from "node:net";
import { DEV_TOKEN, freePort, isPortLost, PortLost, retryLostPort, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";

let stop: (() => void) | null = null;
afterEach(() => {
  stop?.();
  stop = null;
});

/** PATH without any directory holding a `baton`, so the run below sees none linked. */
/** A wrangler dev registry of its own (wrangler-dev.ts says why). */
const ownRegistry = () => mkdtempSync(join(tmpdir(), "baton-registry-"));
const PATH_WITHOUT_BATON = (process.env.PATH ?? "").split(delimiter).filter((d) => d && !existsSync(join(d, "baton"))).join(delimiter);

/**
 * `npm start -- --port P …` on a port free right now, until its "try it" lines are out; resolves to
 * the port and everything it printed. A port taken before wrangler binds it (lanes run beside) is
 * tried again on another.
 */
function start(path: string): Promise<{ port: number; out: string }> {
  return retryLostPort(async () => {
    const port = await freePort();
    return { port, out: await startOn(port, path) };
  });
}

async function startOn(port: number, path: string): Promise<string> {
  const proc = spawn(process.execPath, ["scripts/start.mjs", "--port", String(port), "--persist-to", mkdtempSync(join(tmpdir(), "baton-start-"))], {
    cwd: ROOT, env: { ...process.env, PATH: path, BATON_URL: "", BATON_TOKEN: "", WRANGLER_REGISTRY_PATH: ownRegistry() }, stdio: ["ignore", "pipe", "pipe"], detached: true,
  });
  stop = () => {
    try {
      process.kill(-proc.pid!, "SIGTERM");
    } catch {
      // gone already
    }
  };
  let out = "";
  proc.stderr!.on("data", (d) => (out += d));
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on("data", (d) => {
      out += d;
      if (/send reviewer.*\n(.*\n)*\n/.test(out)) resolve();
    });
    proc.once("exit", (code) => {
      const failure = `npm start exited ${code}:\n${out}`;
      // Its own check ("taken by another program", "already runs at") or wrangler's bind.
      reject(/is taken by another program|a baton coordinator already runs at/.test(out) || isPortLost(out) ? new PortLost(failure) : new Error(failure));
    });
  });
  return out;
}

/** The words of the printed `send` line after the CLI's name, as a shell would split them. */
function sendWords(line: string, cli: string): string[] {
  const send = line.slice(line.indexOf(`${cli} send`) + cli.length + 1).replace(" --wait", "");
  return send.match(/"[^"]*"|\S+/g)!.map((w) => w.replace(/^"|"$/g, ""));
}

describe("npm start on another port", () => {
  it("prints try-it lines that carry the URL, the printed send reaches that coordinator, and a line says how to link a faster baton", async () => {
    const { port, out } = await start(PATH_WITHOUT_BATON);
    const url = `http://127.0.0.1:${port}`;
    const tryIt = out.split("\n").filter((l) => l.includes("npx baton "));
    expect(tryIt).toHaveLength(3);
    for (const line of tryIt) expect(line).toContain(`--url ${url}`);
    expect(out).toContain("baton: faster      npm link   (once, here: then `baton …` runs without npx's start-up; docs/guides/cli-on-path.md)");
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const at = readme.indexOf("```\nbaton: coordinator ready at");
    expect(at, "the README shows what npm start prints").toBeGreaterThan(0);
    const shown = readme.slice(at + 4, readme.indexOf("```", at + 4)).trim().split("\n");
    const printed = out.split("\n").filter((l) => l.startsWith("baton:")).map((l) => l.replaceAll(` --url ${url}`, "").replaceAll(url, "http://127.0.0.1:8787"));
    expect(printed).toEqual(shown);
    const words = sendWords(tryIt.find((l) => l.includes("send reviewer"))!, "npx baton");
    const sent = spawnSync(process.execPath, [BIN, ...words], { cwd: ROOT, env: { ...process.env, BATON_URL: "", BATON_TOKEN: DEV_TOKEN }, encoding: "utf8" });
    expect(sent.status, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/^sent message \d+ to reviewer\n$/);
    // The test clock is not there: its hook is an unknown route, and the lease shard's time stays the runtime's.
    const headers = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };
    const hook = await fetch(`${url}/test/clock`, { method: "POST", headers, body: JSON.stringify({ advance_ms: 3_600_000, session: "clock-check" }) });
    expect(hook.status).toBe(404);
    expect(await fetch(`${url}/leases/clock-check/acquire`, { method: "POST", headers, body: JSON.stringify({ run_id: crypto.randomUUID(), ttl_seconds: 60 }) }).then((r) => r.status)).toBe(201);
    const lease = (await (await fetch(`${url}/leases/clock-check`, { headers })).json()) as { expires_in_ms: number };
    expect(lease.expires_in_ms).toBeGreaterThan(50_000);
    expect(lease.expires_in_ms).toBeLessThanOrEqual(60_000);
  }, 120_000);

  it("with this checkout's baton on PATH (as npm link lays it out), the try-it lines say baton, which runs as printed", async () => {
    const prefix = mkdtempSync(join(tmpdir(), "baton-link-"));
    const pkg = join(prefix, "lib/node_modules/baton-client");
    mkdirSync(dirname(pkg), { recursive: true });
    symlinkSync(ROOT, pkg, "dir");
    mkdirSync(join(prefix, "bin"));
    symlinkSync("../lib/node_modules/baton-client/dist/cli/main.js", join(prefix, "bin/baton"));
    const path = `${join(prefix, "bin")}${delimiter}${PATH_WITHOUT_BATON}`;
    const { out } = await start(path);
    const tryIt = out.split("\n").filter((l) => /^baton: (try it)? +baton (serve|send) /.test(l));
    expect(tryIt).toHaveLength(3);
    expect(out).not.toContain("npx baton");
    expect(out).not.toContain("npm link");
    const words = sendWords(tryIt.find((l) => l.includes("send reviewer"))!, "baton");
    const sent = spawnSync("baton", words, { cwd: ROOT, env: { ...process.env, PATH: path, BATON_URL: "", BATON_TOKEN: DEV_TOKEN }, encoding: "utf8" });
    expect(sent.status, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/^sent message \d+ to reviewer\n$/);
  }, 120_000);
});

/** `npm start -- --port P` run to its end: its exit code, what it printed, and how long it took. */
async function startToEnd(port: number) {
  const t0 = Date.now();
  const proc = spawn(process.execPath, ["scripts/start.mjs", "--port", String(port)], {
    cwd: ROOT, env: { ...process.env, BATON_URL: "", BATON_TOKEN: "", WRANGLER_REGISTRY_PATH: ownRegistry() }, stdio: ["ignore", "pipe", "pipe"], detached: true,
  });
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (d) => (stdout += d));
  proc.stderr!.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => process.kill(-proc.pid!, "SIGKILL"), 60_000);
  const status = await new Promise<number | null>((resolve) => proc.once("close", resolve));
  clearTimeout(timer);
  return { status, stdout, stderr, ms: Date.now() - t0 };
}

describe("npm start on a port that already answers", () => {
  it("when a coordinator already runs there, says so and where, and exits 1 before starting anything", async () => {
    // The project's shared coordinator (or, with BATON_TEST_SHARED_DEV=0, one of this test's own) is the first one.
    const shared = inject("sharedDevUrl");
    const first = shared === undefined ? await startWranglerDev() : { url: shared, port: Number(new URL(shared).port) };
    if (shared === undefined) stop = () => void (first as DevServer).stop();
    const second = await startToEnd(first.port);
    expect(second.status, second.stderr).toBe(1);
    expect(second.stderr).toBe(
      `baton: a baton coordinator already runs at ${first.url} (another \`npm start\` or \`npm run dev\`): use it, or stop it first; or start one more on another port: npm start -- --port ${first.port + 1}\n`,
    );
    expect(second.stdout).not.toContain("coordinator ready");
    expect(second.ms).toBeLessThan(10_000);
    expect((await fetch(`${first.url}/agents`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status, "the first one still runs").toBe(200);
  }, 120_000);

  it("when another program holds the port, says it is not a coordinator and exits 1", async () => {
    // It answers after reading the request, and a peer's reset is that peer's business: an unread request or an
    // unhandled 'error' here would reset the socket and surface as an unhandled ECONNRESET in the test run.
    const other = createServer((socket) => {
      socket.on("error", () => {});
      socket.once("data", () => socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"));
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    stop = () => void other.close();
    const { port } = other.address() as AddressInfo;
    const second = await startToEnd(port);
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`baton: port ${port} is taken by another program (http://127.0.0.1:${port} is not a baton coordinator)`);
    expect(second.stdout).toBe("");
  });
});
