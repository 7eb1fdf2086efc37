// Configuration read once with exact messages: the coordinator's wrangler vars, and where the
// CLI finds its URL and token (the dev token only ever goes to a loopback URL).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { configPath, DEFAULT_URL, DEV_TOKEN, isLocalUrl, resolveConnection } from "../../cli/lib/config.ts";
import { nodeRequest } from "../../cli/lib/node-request.ts";
import { requestJson } from "../../client/http.ts";
import { DEFAULT, readConfig } from "../../worker/config.ts";

describe("readConfig (coordinator vars)", () => {
  it("uses the defaults when vars are unset or empty", () => {
    const expected = { heartbeatTtlMs: DEFAULT.heartbeatTtlSeconds * 1000, presenceScanMs: DEFAULT.presenceScanSeconds * 1000 };
    expect(readConfig({})).toMatchObject(expected);
    expect(readConfig({ BATON_HEARTBEAT_TTL_SECONDS: "", BATON_PRESENCE_SCAN_SECONDS: "" })).toMatchObject(expected);
  });

  it("reads fractional seconds", () => {
    expect(readConfig({ BATON_HEARTBEAT_TTL_SECONDS: "1", BATON_PRESENCE_SCAN_SECONDS: "0.5" })).toMatchObject({
      heartbeatTtlMs: 1000,
      presenceScanMs: 500,
    });
  });

  it("rejects values out of range or not numbers with an exact message", () => {
    for (const raw of ["0", "-1", "abc", "86401", "Infinity", "NaN"]) {
      expect(() => readConfig({ BATON_HEARTBEAT_TTL_SECONDS: raw }), raw).toThrow(
        `BATON_HEARTBEAT_TTL_SECONDS must be a number of seconds between 0 and 86400, got ${JSON.stringify(raw)}`,
      );
    }
    expect(() => readConfig({ BATON_PRESENCE_SCAN_SECONDS: "soon" })).toThrow(
      'BATON_PRESENCE_SCAN_SECONDS must be a number of seconds between 0 and 86400, got "soon"',
    );
  });

  it("a restart grace of 0 turns the grace off; below 0 is refused", () => {
    expect(readConfig({}).preference.restartGraceMs).toBe(DEFAULT.restartGraceSeconds * 1000);
    expect(readConfig({ BATON_RESTART_GRACE_SECONDS: "0" }).preference.restartGraceMs).toBe(0);
    expect(() => readConfig({ BATON_RESTART_GRACE_SECONDS: "-1" })).toThrow(
      'BATON_RESTART_GRACE_SECONDS must be a number of seconds from 0 (off) to 86400, got "-1"',
    );
  });

  it("a blank restart grace is refused, not read as 0 (which would turn the grace off)", () => {
    expect(() => readConfig({ BATON_RESTART_GRACE_SECONDS: " " })).toThrow(
      'BATON_RESTART_GRACE_SECONDS must be a number of seconds from 0 (off) to 86400, got " "',
    );
  });
});

function tempEnv(stored?: object): NodeJS.ProcessEnv {
  const dir = mkdtempSync(join(tmpdir(), "baton-config-"));
  const env = { XDG_CONFIG_HOME: dir } as NodeJS.ProcessEnv;
  if (stored) {
    mkdirSync(join(dir, "baton"), { recursive: true });
    writeFileSync(configPath(env), JSON.stringify(stored));
  }
  return env;
}

describe("isLocalUrl", () => {
  it("accepts loopback hosts only", () => {
    for (const url of ["http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787", "http://127.1.2.3", "ws://localhost"]) {
      expect(isLocalUrl(url), url).toBe(true);
    }
    for (const url of [
      "https://baton.example.workers.dev",
      "http://127.0.0.1.nip.io:8787",
      "http://127.example.com",
      "http://localhost.example.com",
      "http://10.0.0.1:8787",
      "http://0.0.0.0:8787",
      "http://[::ffff:7f00:1]:8787",
    ]) {
      expect(isLocalUrl(url), url).toBe(false);
    }
  });
});

/** Where a connection goes and with which token, without its transport. */
function target(flags: { url?: string; token?: string }, env: NodeJS.ProcessEnv): { url: string; token: string } {
  const { url, token } = resolveConnection(flags, env);
  return { url, token };
}

describe("resolveConnection", () => {
  it("defaults to the local wrangler dev URL with the dev token", () => {
    expect(target({}, tempEnv())).toEqual({ url: DEFAULT_URL, token: DEV_TOKEN });
  });

  it("sends the CLI's JSON requests over node:http, not fetch", () => {
    expect(resolveConnection({}, tempEnv()).request).toBe(nodeRequest);
  });

  it("takes flags over the environment over the config file", () => {
    const env = { ...tempEnv({ url: "https://file.example", token: "file-token" }), BATON_URL: "https://env.example/", BATON_TOKEN: "env-token" };
    expect(target({ url: "https://flag.example", token: "flag-token" }, env)).toEqual({ url: "https://flag.example", token: "flag-token" });
    expect(target({}, env)).toEqual({ url: "https://env.example", token: "env-token" });
    expect(target({}, tempEnv({ url: "https://file.example", token: "file-token" }))).toEqual({
      url: "https://file.example",
      token: "file-token",
    });
  });

  it("never falls back to the dev token for a remote URL", () => {
    for (const url of ["https://baton.example.workers.dev", "http://127.0.0.1.nip.io:8787", "http://localhost.example.com"]) {
      expect(() => resolveConnection({ url }, tempEnv()), url).toThrow(`no token for ${url}: run \`baton login\` or set BATON_TOKEN`);
    }
  });

  it("sends a stored token only to the URL it was stored for", () => {
    const env = tempEnv({ url: "https://prod.example", token: "prod-token" });
    expect(() => resolveConnection({ url: "https://elsewhere.example" }, env)).toThrow(
      "no token for https://elsewhere.example: run `baton login` or set BATON_TOKEN",
    );
    expect(target({ url: "http://127.0.0.1:8787" }, env)).toEqual({ url: "http://127.0.0.1:8787", token: DEV_TOKEN });
    expect(resolveConnection({ url: "https://prod.example/" }, env).token).toBe("prod-token");
  });

  it("ignores a config file that is not the shape login writes", () => {
    expect(target({}, tempEnv({ url: 7, token: ["x"] }))).toEqual({ url: DEFAULT_URL, token: DEV_TOKEN });
  });

  it("rejects a URL that does not parse or is not http(s)", () => {
    expect(() => resolveConnection({ url: "not a url" }, tempEnv())).toThrow("not a URL: not a url");
    expect(() => resolveConnection({ url: "ftp://127.0.0.1" }, tempEnv())).toThrow("not an http(s) URL: ftp://127.0.0.1");
  });
});

describe("BATON_CONNECT_TIMEOUT_SECONDS", () => {
  it("bounds how long the TLS handshake may take: a server that accepts and never answers fails after it, naming the bound and plain http", async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const url = `https://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const conn = resolveConnection({ url, token: "t" }, { ...tempEnv(), BATON_CONNECT_TIMEOUT_SECONDS: "0.3" });
      const t0 = performance.now();
      const failed = await requestJson(conn, "GET", "/agents", z.unknown()).then(() => null, (err: Error) => err);
      expect(performance.now() - t0).toBeLessThan(5000); // the default would be 10 s
      expect(failed?.message).toBe(
        `cannot reach the coordinator at ${url}: no connection within 0.3 s (CONNECT_TIMEOUT); no TLS handshake: if the coordinator speaks plain HTTP (wrangler dev does), use ${url.replace("https:", "http:")}`,
      );
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  it("is refused out of range or blank, naming the variable; unset or empty is the default", () => {
    for (const raw of ["0", "-1", "301", "ten", " "]) {
      expect(() => resolveConnection({}, { ...tempEnv(), BATON_CONNECT_TIMEOUT_SECONDS: raw }), raw).toThrow(
        `BATON_CONNECT_TIMEOUT_SECONDS must be a number of seconds between 0.1 and 300, got ${JSON.stringify(raw)}`,
      );
    }
    expect(resolveConnection({}, { ...tempEnv(), BATON_CONNECT_TIMEOUT_SECONDS: "" }).request).toBe(nodeRequest);
  });
});
