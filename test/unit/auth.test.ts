// Token configuration (names and scopes included) and token extraction in plain Node. The
// constant-time comparison needs workerd's crypto.subtle.timingSafeEqual, so authenticate() is
// proven in test/worker/auth.test.ts and test/worker/scopes.test.ts.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseTokenConfig, presentedToken, tokenProtocol } from "../../worker/auth.ts";

const hex = (token: string) => createHash("sha256").update(token).digest("hex");

describe("parseTokenConfig", () => {
  it("reads account:hash pairs, trims blanks, keeps several tokens per account", () => {
    const raw = ` dev:${hex("a")} ,, other:${hex("b")},dev:${hex("c").toUpperCase()} `;
    const entries = parseTokenConfig(raw);
    expect(entries.map((e) => e.account)).toEqual(["dev", "other", "dev"]);
    expect(Buffer.from(entries[2]!.hash).toString("hex")).toBe(hex("c"));
    expect(entries[0]!.hash).toHaveLength(32);
  });

  it("treats unset and empty as no tokens", () => {
    expect(parseTokenConfig(undefined)).toEqual([]);
    expect(parseTokenConfig("")).toEqual([]);
    expect(parseTokenConfig(" , ")).toEqual([]);
  });

  it("rejects malformed entries by position, without repeating the configuration", () => {
    const good = `dev:${hex("a")}`;
    const bad = [
      "dev",
      `dev:${hex("a").slice(1)}`,
      `dev:${hex("a")}0`,
      `dev:${"g".repeat(64)}`,
      `:${hex("a")}`,
      `Dev:${hex("a")}`,
      `dev team:${hex("a")}`,
      `dev:${hex("a")}:extra`,
      `dev:ci:serve:send:${hex("a")}`,
      `dev:ci:serve:${hex("a").slice(1)}`,
      `Dev:ci:serve:${hex("a")}`,
      `dev=${hex("a")}`,
      "dev:baton-dev-token",
    ];
    for (const entry of bad) {
      let message = "";
      try {
        parseTokenConfig(`${good},${entry}`);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, entry).toBe("BATON_TOKENS entry 2 must be account:sha256-hex or account:name:scope+scope:sha256-hex (account: a-z, 0-9, '_', '-')");
    }
  });

  it("reads named entries with their scopes; admin grants every scope, any scope grants read", () => {
    const raw = [`dev:ci-runner:serve:${hex("a")}`, `dev:ana.b:answer+send:${hex("b")}`, `dev:watch:read:${hex("c")}`, `dev:root:admin:${hex("d")}`].join(",");
    expect(parseTokenConfig(raw).map(({ account, tokenName, scopes }) => ({ account, tokenName, scopes }))).toEqual([
      { account: "dev", tokenName: "ci-runner", scopes: ["read", "serve"] },
      { account: "dev", tokenName: "ana.b", scopes: ["read", "send", "answer"] },
      { account: "dev", tokenName: "watch", scopes: ["read"] },
      { account: "dev", tokenName: "root", scopes: ["read", "send", "serve", "answer", "admin"] },
    ]);
  });

  it("names an old account:hash entry default and gives it every scope", () => {
    const [entry] = parseTokenConfig(`dev:${hex("a")}`);
    expect(entry).toMatchObject({ account: "dev", tokenName: "default", scopes: ["read", "send", "serve", "answer", "admin"] });
  });

  it("rejects a bad token name or scope by position, without repeating the entry", () => {
    const good = `dev:${hex("a")}`;
    const badNames = ["", "a b", "x".repeat(65), "ana/b", "é"];
    for (const name of badNames) {
      expect(() => parseTokenConfig(`${good},dev:${name}:read:${hex("b")}`), name).toThrow(
        "BATON_TOKENS entry 2 has a bad token name (1-64 chars of A-Z, a-z, 0-9, '.', '_' or '-')",
      );
    }
    expect(parseTokenConfig(`dev:${"x".repeat(64)}:read:${hex("b")}`)).toHaveLength(1);
    const badScopes = ["", "write", "serve+", "+serve", "serve++send", "Serve", "serve,send", "serve send"];
    for (const scopes of badScopes) {
      let message = "";
      try {
        parseTokenConfig(`${good},dev:ci:${scopes}:${hex("b")}`);
      } catch (err) {
        message = (err as Error).message;
      }
      // "serve,send" splits into two entries: the first lacks its hash, so it fails the shape check.
      const expected = scopes.includes(",")
        ? "BATON_TOKENS entry 2 must be account:sha256-hex or account:name:scope+scope:sha256-hex (account: a-z, 0-9, '_', '-')"
        : "BATON_TOKENS entry 2 has an unknown or empty scope (scopes are read, send, serve, answer, admin, joined by '+')";
      expect(message, scopes).toBe(expected);
      expect(message).not.toContain(hex("b"));
    }
  });

  it("rejects one hash given to two accounts", () => {
    expect(() => parseTokenConfig(`dev:${hex("a")},other:${hex("a").toUpperCase()}`)).toThrow(
      "BATON_TOKENS gives one token hash to two accounts (dev and other)",
    );
    expect(parseTokenConfig(`dev:${hex("a")},dev:${hex("a")}`)).toHaveLength(2);
  });

  it("rejects one hash under two names or two scope sets, naming both positions", () => {
    expect(() => parseTokenConfig(`dev:ci:serve:${hex("a")},dev:${hex("b")},dev:ci:admin:${hex("a")}`)).toThrow(
      "BATON_TOKENS gives one token hash two names or scope sets (entries 1 and 3)",
    );
    expect(() => parseTokenConfig(`dev:ci:serve:${hex("a")},dev:${hex("a")}`)).toThrow("BATON_TOKENS gives one token hash two names or scope sets (entries 1 and 2)");
    expect(parseTokenConfig(`dev:ci:serve:${hex("a")},dev:ci:serve:${hex("a")}`)).toHaveLength(2);
  });
});

function request(headers: Record<string, string>): Request {
  return new Request("http://baton.test/agents/a/presence", { headers });
}

describe("presentedToken", () => {
  it("reads a bearer token from the Authorization header, scheme case-insensitive", () => {
    expect(presentedToken(request({ authorization: "Bearer abc.DEF-1" }))).toBe("abc.DEF-1");
    expect(presentedToken(request({ authorization: "bearer   abc" }))).toBe("abc");
  });

  it("ignores other schemes, empty bearer values and values with spaces", () => {
    expect(presentedToken(request({}))).toBeNull();
    expect(presentedToken(request({ authorization: "Basic ZGV2OnRva2Vu" }))).toBeNull();
    expect(presentedToken(request({ authorization: "Bearer" }))).toBeNull();
    expect(presentedToken(request({ authorization: "Bearer a b" }))).toBeNull();
    expect(presentedToken(request({ authorization: "baton-dev-token" }))).toBeNull();
  });

  it("reads a token from the WebSocket subprotocol list and round-trips non-ASCII tokens", () => {
    for (const token of ["baton-dev-token", "tök€n/+=?", "a"]) {
      const protocols = `baton, ${tokenProtocol(token)}`;
      expect(presentedToken(request({ "sec-websocket-protocol": protocols })), token).toBe(token);
    }
    expect(tokenProtocol("baton-dev-token")).toMatch(/^baton\.token\.[A-Za-z0-9_-]+$/);
  });

  it("prefers the Authorization header over the subprotocol", () => {
    const headers = { authorization: "Bearer from-header", "sec-websocket-protocol": `baton,${tokenProtocol("from-protocol")}` };
    expect(presentedToken(request(headers))).toBe("from-header");
  });

  it("gives null for an empty, non-base64 or non-UTF-8 token subprotocol", () => {
    for (const carrier of ["baton.token.", "baton.token.!!!", "baton.token.a", "baton.token._w"]) {
      expect(presentedToken(request({ "sec-websocket-protocol": `baton, ${carrier}` })), carrier).toBeNull();
    }
    expect(presentedToken(request({ "sec-websocket-protocol": "baton" }))).toBeNull();
  });
});
