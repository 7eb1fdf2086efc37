// `baton login --code` (the built CLI, a real process with a config of its own) against the shared
// wrangler dev, then the OAuth dance a remote MCP host makes with the code typed on the sign-in page
// instead of the token: register, PKCE, sign in with the code, exchange, one MCP call over HTTP
// with the access token. The code is spent by that approval; the page refuses it again, refuses a
// code with a token beside it and a wrong code, and shows itself again each time. The CLI never
// prints the token, and warns with every code that the code signs in as the token.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CODE_LENGTH, formatSignInCode } from "../../worker/rules/sign-in-codes.ts";
import { SIGN_IN_CODE_LIMITS } from "../../worker/wire/grants.ts";
import { authorize, openSignIn, registerClient, submitSignIn, type FetchLike } from "./oauth-dance.ts";
import { runBaton, sharedServeFixture, uniqueAgent } from "./serve-helpers.ts";
import { NAMED_TOKENS } from "./shared-accounts.ts";

/** "mcp-person" of account dev: answer (and read). */
const PERSON = NAMED_TOKENS.mcpPerson;
const fx = sharedServeFixture();
const f: FetchLike = (url, init) => fetch(url, init);
const CODE = /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;
const WARNING = `warning: anyone with this code can sign in as your token for ${SIGN_IN_CODE_LIMITS.minutes} minutes; never read it out, paste it into a chat or give it to anyone\n`;

/** The built CLI with a config directory of its own and no token from the environment. */
function baton(home: string, args: string[]) {
  return runBaton(args, { XDG_CONFIG_HOME: home, BATON_TOKEN: "", BATON_URL: "" });
}

async function newPage() {
  const client = await registerClient(f, fx.dev.url);
  return openSignIn(f, fx.dev.url, client, "read answer");
}

describe("baton login --code", () => {
  it("prints a one-time code made with the stored token (never the token) and the warning that it signs in as the token; the dance signs in with it, and its access token makes an MCP call over HTTP; the code is then spent", async () => {
    const home = mkdtempSync(join(tmpdir(), "baton-code-"));
    const login = baton(home, ["login", "--url", fx.dev.url, "--token", PERSON.token]);
    expect(login.code, login.stderr).toBe(0);
    const printed = baton(home, ["login", "--code"]);
    expect(printed.code, printed.stderr).toBe(0);
    const said = /^sign-in code: (\S+) \(for (\S+), valid (\d+) minutes, once\)\. Type it on the baton sign-in page instead of a token\.\n(.*\n)$/.exec(printed.stdout);
    expect(said, printed.stdout).not.toBeNull();
    const [, code, url, minutes, warning] = said!;
    expect({ code: CODE.test(code!), url, minutes: Number(minutes), warning }).toEqual({ code: true, url: fx.dev.url, minutes: SIGN_IN_CODE_LIMITS.minutes, warning: WARNING });
    expect(printed.stdout + printed.stderr).not.toContain(PERSON.token);

    const { tokens } = await authorize(f, fx.dev.url, { code: code!, scopes: ["read", "answer"] }, "read answer");
    expect(tokens.scope.split(" ").sort()).toEqual(["answer", "read"]);
    const mcp = new Client({ name: "baton-code-test-host", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL("/mcp", fx.dev.url), { requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } } }));
    try {
      const agent = uniqueAgent("code");
      const who = await mcp.callTool({ name: "who", arguments: { agent } });
      expect(who.isError ?? false, JSON.stringify(who)).toBe(false);
      expect(who.structuredContent).toMatchObject({ agent, holder: null });
    } finally {
      await mcp.close();
    }

    const again = await submitSignIn(f, fx.dev.url, await newPage(), { code: code!, scopes: ["read"] });
    expect(again).toMatchObject({ status: 400, html: expect.stringContaining("that sign-in code is wrong, used or expired") });
  });

  it("--json prints {code, expires_at, url}, the warning on stderr; the page refuses that code beside a token, and a wrong code, showing itself again; the code still signs in after", async () => {
    const home = mkdtempSync(join(tmpdir(), "baton-code-"));
    const before = Date.now();
    const printed = baton(home, ["login", "--code", "--json", "--url", fx.dev.url, "--token", PERSON.token]);
    expect(printed.code, printed.stderr).toBe(0);
    const made = JSON.parse(printed.stdout) as { code: string; expires_at: number; url: string };
    expect(Object.keys(made).sort()).toEqual(["code", "expires_at", "url"]);
    expect(made).toMatchObject({ code: expect.stringMatching(CODE), url: fx.dev.url });
    expect(made.expires_at).toBeGreaterThan(before);
    expect(printed.stderr).toBe(WARNING);
    expect(printed.stdout + printed.stderr).not.toContain(PERSON.token);

    const page = await newPage();
    const both = await submitSignIn(f, fx.dev.url, page, { token: PERSON.token, code: made.code, scopes: ["read"] });
    expect(both).toMatchObject({ status: 400, html: expect.stringContaining("give a baton token or a sign-in code, not both") });
    expect(both.html).toContain("<h1>Allow test host to use baton?</h1>");
    const wrong = await submitSignIn(f, fx.dev.url, page, { code: formatSignInCode(crypto.getRandomValues(new Uint8Array(CODE_LENGTH))), scopes: ["read"] });
    expect(wrong).toMatchObject({ status: 400, html: expect.stringContaining("that sign-in code is wrong, used or expired") });
    expect(wrong.html).toContain('name="code"');
    const signed = await submitSignIn(f, fx.dev.url, page, { code: made.code, scopes: ["read"] });
    expect(signed.status, signed.html).toBe(302);
  });

  it("a token the coordinator refuses prints no code (exit 1); --code with --status is a usage error (exit 2)", () => {
    const home = mkdtempSync(join(tmpdir(), "baton-code-"));
    const refused = baton(home, ["login", "--code", "--url", fx.dev.url, "--token", "wrong-token"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain("refused the token");
    expect(baton(home, ["login", "--code", "--status"])).toMatchObject({ code: 2, stderr: expect.stringContaining("--status and --code do not go together") });
  });
});
