// baton on a second machine, without a clone: `npm publish --dry-run` passes and ships only what a
// user needs; the packed tarball installed with `npm i -g` into a
// temporary prefix runs `baton` against `wrangler dev`, and the MCP guide's host config starts it; installed into an empty folder it imports
// as "baton-client" (types included) and runs through `npx baton`; SIGTERM sent to `npx` (not to
// baton) still makes serve release the lease and exit, leaving no orphan holder.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { getJson, sharedServeFixture, uniqueAgent } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { packageTypeErrors } from "./package-types.ts";
import { pidAlive } from "../../cli/lib/local-lock.ts";

const fx = sharedServeFixture();

const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
/** A synchronous child blocks vitest's own timers, so each one carries its own bound. */
const NPM_TIMEOUT_MS = 180_000;
const NPM_FLAGS = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];
let work: string;
let tarball: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "baton-install-"));
  // prepack builds dist/; the suite (scripts/test.mjs) built it from these sources just before, so it packs that one as it is.
  const scripts = process.env.BATON_TEST_BUILT === "1" ? ["--ignore-scripts"] : [];
  execFileSync("npm", ["pack", ...scripts, "--pack-destination", work, "--loglevel=error"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], timeout: NPM_TIMEOUT_MS });
  tarball = join(work, readdirSync(work).find((f) => f.endsWith(".tgz"))!);
  console.log(`packed ${tarball}: ${statSync(tarball).size} bytes`);
}, 240_000);

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN, XDG_CONFIG_HOME: join(work, "config"), BATON_STATE_DIR: join(work, "state"), ...extra };
}

describe("the packed tarball", () => {
  it("is the size docs/guides/several-machines.md states (within 10%), and `npm root -g --prefix` finds its examples as the guide says", () => {
    const guide = readFileSync(join(ROOT, "docs/guides/several-machines.md"), "utf8");
    const stated = Number(guide.match(/baton-client-\d+\.\d+\.\d+\.tgz \(about (\d+) kB\)/)?.[1]) * 1000;
    expect(Math.abs(statSync(tarball).size - stated) / stated, `the tarball is ${statSync(tarball).size} bytes; the guide says about ${stated}`).toBeLessThan(0.1);
    const prefix = join(work, "prefix");
    const root = execFileSync("npm", ["root", "-g", "--prefix", prefix], { encoding: "utf8", timeout: NPM_TIMEOUT_MS }).trim();
    expect(root).toBe(join(prefix, "lib", "node_modules"));
    expect(guide).toContain("$(npm root -g --prefix ~/.local)/baton-client/examples");
  });

  it("publishes: `npm publish --dry-run` passes, MIT with README and LICENSE, and ships only built code and the examples", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { name: string; private?: boolean; license?: string };
    expect(pkg.private).toBeUndefined();
    expect(pkg.license).toBe("MIT");
    // dist/ is built already (beforeAll's `npm pack`, or the suite); --ignore-scripts does not build it again.
    const out = execFileSync("npm", ["publish", "--dry-run", "--ignore-scripts", "--json", "--loglevel=error"], { cwd: ROOT, encoding: "utf8", timeout: NPM_TIMEOUT_MS });
    const published = (JSON.parse(out) as Record<string, { name: string; version: string; files: { path: string }[] }>)[pkg.name]!;
    expect(published).toMatchObject({ name: pkg.name, version: VERSION });
    const paths = published.files.map((f) => f.path);
    expect(paths).toEqual(expect.arrayContaining(["README.md", "LICENSE", "package.json", "dist/cli/main.js", "dist/client/index.js", "dist/client/index.d.ts"]));
    const stray = paths.filter((p) => !/^(README\.md|LICENSE|package\.json|dist\/(cli|client|worker\/wire|worker\/rules)\/.+\.(js|d\.ts)|examples\/[^/]+)$/.test(p));
    expect(stray, "files a user does not need").toEqual([]);
  });

  it("installs with npm i -g into a prefix; `baton` serves and sends against wrangler dev from outside any clone", async () => {
    const prefix = join(work, "prefix");
    execFileSync("npm", ["i", "-g", tarball, "--prefix", prefix, ...NPM_FLAGS], { cwd: work, stdio: ["ignore", "ignore", "inherit"], timeout: NPM_TIMEOUT_MS });
    const baton = join(prefix, "bin", "baton");
    const elsewhere = mkdtempSync(join(tmpdir(), "baton-elsewhere-"));
    expect(spawnSync(baton, ["--version"], { cwd: elsewhere, encoding: "utf8", timeout: NPM_TIMEOUT_MS }).stdout).toBe(`${VERSION}\n`);
    const agent = uniqueAgent("installed");
    const example = join(prefix, "lib", "node_modules", "baton-client", "examples", "shell-agent.sh");
    const serve = spawn(baton, ["serve", agent, "--machine", "second-machine", "--", example], {
      cwd: elsewhere, env: env({ BATON_LOCK_DIR: join(work, "lock-global"), BATON_MACHINE: "second-machine" }), stdio: ["ignore", "ignore", "pipe"],
    });
    try {
      let err = "";
      serve.stderr!.on("data", (d) => (err += d));
      await until(() => /holder \(fence \d+\)/.test(err), 20_000, () => err);
      const sent = spawnSync(baton, ["send", agent, "hello", "--wait", "--timeout", "20"], { cwd: elsewhere, env: env(), encoding: "utf8", timeout: NPM_TIMEOUT_MS });
      expect(sent.stderr).toBe("");
      expect(sent.stdout).toMatch(new RegExp(`^${agent} on second-machine \\(fence \\d+\\), message 1: HELLO\\n$`));
      expect(sent.status).toBe(0);
    } finally {
      serve.kill("SIGKILL");
    }
  });

  it("the MCP host config in docs/guides/mcp.md, exactly as written, starts this package's `baton mcp` from the global install, outside any clone", async () => {
    const prefix = join(work, "prefix");
    if (!existsSync(join(prefix, "bin", "baton"))) {
      execFileSync("npm", ["i", "-g", tarball, "--prefix", prefix, ...NPM_FLAGS], { cwd: work, stdio: ["ignore", "ignore", "inherit"], timeout: NPM_TIMEOUT_MS });
    }
    const guide = readFileSync(join(ROOT, "docs/guides/mcp.md"), "utf8");
    const block = guide.match(/```json\n([\s\S]*?)```/)?.[1];
    expect(block, "the guide shows a host config").toBeDefined();
    const server = (JSON.parse(block!) as { mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }> }).mcpServers.baton!;
    // As a host starts it: the command looked up on PATH (here the prefix's bin), from a folder outside any clone.
    const path = `${join(prefix, "bin")}${delimiter}${process.env.PATH ?? ""}`;
    const elsewhere = mkdtempSync(join(tmpdir(), "baton-mcp-host-"));
    const found = spawnSync("sh", ["-c", `command -v ${server.command}`], { env: { ...process.env, PATH: path }, encoding: "utf8" }).stdout.trim();
    expect(realpathSync(found), `${server.command} on the host's PATH is this package's CLI`).toBe(realpathSync(join(prefix, "lib/node_modules/baton-client/dist/cli/main.js")));
    expect(server.env.BATON_URL).toMatch(/^https:\/\//);
    const transport = new StdioClientTransport({
      command: server.command, args: server.args, cwd: elsewhere, stderr: "pipe",
      // The placeholders swapped for this coordinator: the guide's URL and token are examples.
      env: { ...(process.env as Record<string, string>), PATH: path, ...server.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN },
    });
    const client = new Client({ name: "baton-install-test-host", version: "1.0.0" });
    await client.connect(transport);
    try {
      const who = await client.callTool({ name: "who", arguments: {} });
      expect(who.isError ?? false, JSON.stringify(who)).toBe(false);
      expect(who.structuredContent).toMatchObject({ agent: server.args[1] });
    } finally {
      await client.close();
    }
  });

  it("installs into an empty folder: import from \"baton-client\" works with types, npx baton runs, tsx is not installed", () => {
    const app = join(work, "app");
    mkdirSync(app);
    execFileSync("npm", ["i", tarball, ...NPM_FLAGS], { cwd: app, stdio: ["ignore", "ignore", "inherit"], timeout: NPM_TIMEOUT_MS });
    const imported = spawnSync(process.execPath, ["--input-type=module", "-e",
      'import { serve, withSessionLease, LeaseLostError } from "baton-client"; console.log(typeof serve, typeof withSessionLease, typeof LeaseLostError)'],
    { cwd: app, encoding: "utf8", timeout: NPM_TIMEOUT_MS });
    expect(imported.stderr).toBe("");
    expect(imported.stdout).toBe("function function function\n");
    writeFileSync(join(app, "agent.ts"), [
      'import { serve, withSessionLease, type MessageHandler } from "baton-client";',
      "const handler: MessageHandler = async (message, ctx) => `${message.text} under fence ${ctx.fence}`;",
      "export const start = () => serve(\"reviewer\", handler, { url: \"http://127.0.0.1:8787\", token: \"t\" });",
      "export const job = () => withSessionLease(\"s\", async (lease) => lease.fenceToken, { url: \"http://127.0.0.1:8787\", token: \"t\" });",
      "",
    ].join("\n"));
    expect(packageTypeErrors(app, "agent.ts", "baton-client")).toBe("");
    expect(spawnSync("npx", ["baton", "--version"], { cwd: app, encoding: "utf8", timeout: NPM_TIMEOUT_MS }).stdout).toBe(`${VERSION}\n`);
    expect(readdirSync(join(app, "node_modules")).filter((f) => !f.startsWith(".")).sort()).toEqual(["baton-client", "ws", "zod"]);
  }, 180_000);

  it("SIGTERM to `npx baton serve` (npx, not baton) releases the lease and leaves no serve process behind", async () => {
    const app = join(work, "app");
    const agent = uniqueAgent("npx");
    const lockDir = join(work, "lock-npx");
    const npx = spawn("npx", ["baton", "serve", agent, "--machine", "npx-machine", "--", "cat"], {
      cwd: app, env: env({ BATON_LOCK_DIR: lockDir }), stdio: ["ignore", "ignore", "pipe"], detached: true,
    });
    let err = "";
    npx.stderr!.on("data", (d) => (err += d));
    await until(() => /holder \(fence \d+\)/.test(err), 20_000, () => err);
    const servePid = Number(readFileSync(join(lockDir, readdirSync(lockDir).find((f) => f.endsWith(".lock"))!), "utf8"));
    expect(servePid).not.toBe(npx.pid);
    const presence = () => getJson<{ connection_count: number; holder: unknown }>(`${fx.dev.url}/agents/${agent}/presence`);
    expect((await presence()).holder).not.toBeNull();
    const killedAt = performance.now();
    process.kill(npx.pid!, "SIGTERM");
    // The default TTL is 60 s here, so a quick end can only come from serve releasing and closing.
    await until(async () => (await presence()).connection_count === 0, 10_000, () => err);
    await until(() => !pidAlive(servePid), 10_000, () => err);
    const why = err.match(/: (SIGTERM|parent exited): stopping/)?.[1];
    console.log(`serve under npx released and exited ${(performance.now() - killedAt).toFixed(0)} ms after SIGTERM to npx (it saw: ${why})`);
    expect((await presence()).holder).toBeNull();
  });
});

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, context: () => string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; output:\n${context()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
