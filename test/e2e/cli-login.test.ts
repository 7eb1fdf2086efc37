// `baton login` as a real process with its own XDG_CONFIG_HOME against a real `wrangler dev`: the
// token is checked with the coordinator first, stored 0600 in a 0700 directory, read from a pipe
// or typed without echo on a terminal, and never printed; a refused token is not stored.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, sharedServeFixture } from "./serve-helpers.ts";
import { ALICE_TOKEN } from "./shared-accounts.ts";

/** A token of account alice, on the shared server. */
const TOKEN = ALICE_TOKEN;
const fx = sharedServeFixture();

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function freshHome(): string {
  return mkdtempSync(join(tmpdir(), "baton-login-"));
}

function baseEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home, NO_COLOR: "1" };
  delete env.BATON_URL;
  delete env.BATON_TOKEN;
  return env;
}

function baton(home: string, args: string[], stdin = "", env: Record<string, string> = {}): Promise<Outcome> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...baseEnv(home), ...env }, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** Runs login on a pseudo-terminal (util-linux `script`) and types the token once the prompt shows. */
function batonOnTerminal(home: string, args: string[], typed: string): Promise<Outcome> {
  return new Promise((done, fail) => {
    const command = [BIN, ...args].map((a) => `'${a}'`).join(" ");
    const child = spawn("script", ["-qfec", `'${process.execPath}' ${command}`, "/dev/null"], { env: baseEnv(home), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let typedYet = false;
    child.stdout.on("data", (d) => {
      stdout += d;
      if (!typedYet && stdout.includes("input hidden")) {
        typedYet = true;
        child.stdin.write(typed);
      }
    });
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr: "" }));
  });
}

function configFile(home: string): string {
  return join(home, "baton", "config.json");
}

function expectStoredPrivately(home: string, stored: { url: string; token: string }): void {
  expect(JSON.parse(readFileSync(configFile(home), "utf8"))).toEqual(stored);
  expect(statSync(configFile(home)).mode & 0o777).toBe(0o600);
  expect(statSync(join(home, "baton")).mode & 0o777).toBe(0o700);
}

describe("baton login", () => {
  it("checks --url and --token with the coordinator, stores them with mode 0600 in a 0700 directory and never prints the token", async () => {
    const home = freshHome();
    const out = await baton(home, ["login", "--url", `${fx.dev.url}/`, "--token", TOKEN]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toBe(`token accepted by ${fx.dev.url}; stored in ${configFile(home)}\n`);
    expect(out.stdout + out.stderr).not.toContain(TOKEN);
    expectStoredPrivately(home, { url: fx.dev.url, token: TOKEN });
  });

  it("a token the coordinator refuses is not stored, and the exit code is 1", async () => {
    const home = freshHome();
    const out = await baton(home, ["login", "--url", fx.dev.url, "--token", "wrong-token"]);
    expect(out.code).toBe(1);
    // Not "run `baton login`": that is what the user is doing.
    expect(out.stderr).toBe(`baton: the coordinator at ${fx.dev.url} does not accept this token (check that it is the whole token, for this coordinator); nothing stored\n`);
    expect(existsSync(configFile(home))).toBe(false);
  });

  it("https:// against the plain-HTTP coordinator says what is wrong and which URL to use", async () => {
    const home = freshHome();
    const https = fx.dev.url.replace(/^http:/, "https:");
    // wrangler dev never completes the handshake: the CLI gives up after BATON_CONNECT_TIMEOUT_SECONDS (10 s by default).
    const out = await baton(home, ["who", "--url", https, "--token", TOKEN], "", { BATON_CONNECT_TIMEOUT_SECONDS: "1" });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`no connection within 1 s (CONNECT_TIMEOUT); no TLS handshake: if the coordinator speaks plain HTTP (wrangler dev does), use ${fx.dev.url}`);
  });

  it("reads the token from a pipe, the URL from BATON_URL", async () => {
    const home = freshHome();
    const out = await baton(home, ["login", "--json"], `${TOKEN}\n`, { BATON_URL: fx.dev.url });
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ url: fx.dev.url, config_path: configFile(home), token_stored: true, verified: true });
    expect(out.stdout + out.stderr).not.toContain(TOKEN);
    expectStoredPrivately(home, { url: fx.dev.url, token: TOKEN });
  });

  it("reads a token typed on a terminal without echoing it", async () => {
    const home = freshHome();
    const out = await batonOnTerminal(home, ["login", "--url", fx.dev.url], `${TOKEN}\r`);
    expect(out.code, out.stdout).toBe(0);
    expect(out.stdout).toContain("stored in");
    expect(out.stdout).not.toContain(TOKEN);
    expectStoredPrivately(home, { url: fx.dev.url, token: TOKEN });
  });

  it("tightens an existing config file and directory that others could read", async () => {
    const home = freshHome();
    mkdirSync(join(home, "baton"), { mode: 0o755 });
    writeFileSync(configFile(home), "{}", { mode: 0o644 });
    const out = await baton(home, ["login", "--url", fx.dev.url, "--token", TOKEN]);
    expect(out.code, out.stderr).toBe(0);
    expectStoredPrivately(home, { url: fx.dev.url, token: TOKEN });
  });

  it("--status names the URL and whether a token is stored, without printing it", async () => {
    const home = freshHome();
    const none = await baton(home, ["login", "--status"]);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain("token: not stored");
    await baton(home, ["login", "--url", fx.dev.url, "--token", TOKEN]);
    const status = await baton(home, ["login", "--status"]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`url: ${fx.dev.url}`);
    expect(status.stdout).toContain("token: stored");
    expect(status.stdout + status.stderr).not.toContain(TOKEN);
    const json = JSON.parse((await baton(home, ["login", "--status", "--json"])).stdout);
    expect(json).toEqual({ config_path: configFile(home), url: fx.dev.url, token_stored: true, file_mode: "0600", env_overrides: [] });
  });

  it("refuses an empty or spaced token and a non-http URL as usage errors (exit 2), writing nothing", async () => {
    const home = freshHome();
    for (const [args, stdin, message] of [
      [["login"], "\n", "a token is 1-4096 characters without spaces or line breaks"],
      [["login", "--token", "two words"], "", "a token is 1-4096 characters without spaces or line breaks"],
      [["login", "--url", "ftp://example.com", "--token", TOKEN], "", "not an http(s) URL: ftp://example.com"],
    ] as const) {
      const out = await baton(home, [...args], stdin);
      expect(out.code, args.join(" ")).toBe(2);
      expect(out.stderr).toContain(message);
      expect(out.stdout + out.stderr).not.toContain(TOKEN);
    }
    expect(existsSync(configFile(home))).toBe(false);
  });

  it("warns that plain http to a remote host sends the token unencrypted, before sending it", async () => {
    const out = await baton(freshHome(), ["login", "--url", "http://baton.invalid:8787", "--token", TOKEN]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("plain http");
    expect(out.stderr).toContain("cannot reach the coordinator at http://baton.invalid:8787");
    expect(out.stderr).not.toContain(TOKEN);
  });
});
