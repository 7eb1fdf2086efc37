// Scoped tokens end to end: the shared `wrangler dev` is configured with exactly the entries
// scripts/hash-token.mjs prints for its named tokens, and the CLI with a token that lacks a route's scope stops at once with exit 1 and says
// which scope is missing (`baton serve` does not retry a 403 as if the socket had dropped).
import { spawnSync } from "node:child_process";
import { request } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runBaton, sharedServeFixture, uniqueAgent } from "./serve-helpers.ts";
import { NAMED_TOKENS } from "./shared-accounts.ts";
import { SHARED_SERVE_VARS } from "./shared-dev.global.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

const fx = sharedServeFixture();
const READER = NAMED_TOKENS.reader.token;
const RUNNER = NAMED_TOKENS.runner.token;

function entry(account: string, token: string, ...flags: string[]): string {
  const r = spawnSync(process.execPath, [join(ROOT, "scripts/hash-token.mjs"), account, ...flags], { input: `${token}\n`, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim();
}

describe("hash-token.mjs", () => {
  it("prints the entries the server was configured with, for the dev token and for named tokens with scopes", () => {
    const configured = SHARED_SERVE_VARS.BATON_TOKENS.split(",");
    expect(configured).toContain(entry("dev", DEV_TOKEN));
    expect(configured).toContain(entry("dev", READER, "--name", "wall", "--scopes", "read"));
    expect(configured).toContain(entry("dev", RUNNER, "--name", "ci-runner", "--scopes", "serve"));
  });
});

describe("scoped tokens through the CLI", () => {
  it("a read-only token reads, but serve, send and resume stop with exit 1 naming the missing scope", () => {
    const agent = uniqueAgent("scoped");
    const as = (token: string, args: string[]) => runBaton(args, { BATON_URL: fx.dev.url, BATON_TOKEN: token });
    expect(as(READER, ["who", agent])).toMatchObject({ code: 0 });
    const serve = as(READER, ["serve", agent, "--", "./examples/shell-agent.sh"]);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toContain("token wall of account dev lacks the serve scope");
    const send = as(READER, ["send", agent, "hello"]);
    expect(send.code).toBe(1);
    expect(send.stderr).toContain("token wall of account dev lacks the send scope");
    const resume = as(RUNNER, ["resume", agent, "1", "approved"]);
    expect(resume.code).toBe(1);
    expect(resume.stderr).toContain("token ci-runner of account dev lacks the answer scope");
    expect(as(DEV_TOKEN, ["history", agent, "--json"]).stdout).not.toContain("hello");
  });
});

/** GET `path` from the dev server as a browser on a rebound name sends it: no Origin, the page's name in Host. */
function getWithHost(path: string, host: string, token: string): Promise<{ status: number; body: string }> {
  const url = new URL(path, fx.dev.url);
  return new Promise((done, fail) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, headers: { Host: host, Authorization: `Bearer ${token}` } }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => done({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", fail).end();
  });
}

describe("the dev token behind wrangler dev (DNS rebinding)", () => {
  it("a request whose Host is a rebound name gets 403 with the dev token and goes on with a real token; a loopback Host goes on", async () => {
    const port = new URL(fx.dev.url).port;
    const rebound = await getWithHost("/whoami", `rebind.attacker.example:${port}`, DEV_TOKEN);
    expect(rebound.status).toBe(403);
    expect(rebound.body).toContain("the public dev token is refused on requests addressed to");
    expect((await getWithHost("/whoami", `rebind.attacker.example:${port}`, READER)).status).toBe(200);
    expect((await getWithHost("/whoami", `localhost:${port}`, DEV_TOKEN)).status).toBe(200);
  });
});
