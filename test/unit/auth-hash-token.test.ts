// scripts/hash-token.mjs as a real process: its entries, named and scoped or not, are exactly what
// BATON_TOKENS accepts.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseTokenConfig } from "../../worker/auth.ts";

const SCRIPT = join(resolve(import.meta.dirname, "../.."), "scripts/hash-token.mjs");

function hashToken(args: string[], input = "") {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { input, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("scripts/hash-token.mjs", () => {
  it("prints the dev entry that .dev.vars holds, from stdin or an argument", () => {
    const dev = "dev:8eb1988b5d11e51b42a73fbede6ec8602a22164ed1eecb7d67e729042623a371";
    expect(hashToken(["dev"], "baton-dev-token\n")).toMatchObject({ code: 0, stdout: `${dev}\n`, stderr: "" });
    expect(hashToken(["dev", "baton-dev-token"]).stdout).toBe(`${dev}\n`);
  });

  it("--new makes a random token, prints it on stderr only, and its entry parses", () => {
    const out = hashToken(["prod", "--new"]);
    expect(out.code).toBe(0);
    const token = out.stderr.trim().split("\n").at(-1)!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(out.stdout).not.toContain(token);
    expect(out.stdout).toBe(`prod:${createHash("sha256").update(token).digest("hex")}\n`);
    expect(parseTokenConfig(out.stdout.trim())).toHaveLength(1);
  });

  it("--name and --scopes print the named form, which parses with exactly those scopes plus read", () => {
    const hash = createHash("sha256").update("baton-dev-token").digest("hex");
    expect(hashToken(["dev", "--name", "ci-runner", "--scopes", "serve"], "baton-dev-token\n")).toMatchObject({ code: 0, stdout: `dev:ci-runner:serve:${hash}\n`, stderr: "" });
    const out = hashToken(["dev", "--name=ana", "--scopes=answer,send", "baton-dev-token"]);
    expect(out.stdout).toBe(`dev:ana:answer+send:${hash}\n`);
    expect(parseTokenConfig(out.stdout.trim())).toMatchObject([{ account: "dev", tokenName: "ana", scopes: ["read", "send", "answer"] }]);
    const generated = hashToken(["prod", "--new", "--name", "watch", "--scopes", "read"]);
    const token = generated.stderr.trim().split("\n").at(-1)!;
    expect(generated.stdout).toBe(`prod:watch:read:${createHash("sha256").update(token).digest("hex")}\n`);
  });

  it("keeps a token that starts with '-' a token", () => {
    const hash = createHash("sha256").update("-starts-with-dash").digest("hex");
    expect(hashToken(["dev", "-starts-with-dash", "--name", "x", "--scopes", "read"]).stdout).toBe(`dev:x:read:${hash}\n`);
  });

  it("refuses a bad name, an unknown scope, and --name without --scopes, printing no entry", () => {
    expect(hashToken(["dev", "t", "--name", "a b", "--scopes", "read"])).toMatchObject({
      code: 1, stdout: "", stderr: `hash-token: token name "a b" must be 1-64 chars of A-Z, a-z, 0-9, '.', '_' or '-'\n`,
    });
    expect(hashToken(["dev", "t", "--name", "ci", "--scopes", "serve+write"])).toMatchObject({
      code: 1, stdout: "", stderr: `hash-token: unknown scope "write": scopes are read, send, serve, answer, admin, joined by '+'\n`,
    });
    expect(hashToken(["dev", "t", "--name", "ci"])).toMatchObject({
      code: 1, stdout: "", stderr: "hash-token: --name and --scopes go together (without both, the entry has every scope)\n",
    });
    expect(hashToken(["dev", "t", "--scopes"])).toMatchObject({ code: 1, stdout: "" });
  });

  it("refuses a bad account, an empty stdin and a spaced token", () => {
    expect(hashToken(["Prod", "x"])).toMatchObject({ code: 1, stdout: "" });
    expect(hashToken(["prod"], "")).toMatchObject({ code: 1, stderr: "hash-token: no token on stdin (pass --new to make one)\n" });
    expect(hashToken(["prod", "a b"])).toMatchObject({ code: 1, stdout: "" });
  });
});
