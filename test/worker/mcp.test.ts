// The remote MCP endpoint's JSON answers in the real runtime: a quick tool's plain call answered
// without the SDK (worker/mcp/quick-call.ts), and the same call in a shape only the SDK's path takes
// (an empty _meta), which borrows one of the servers kept per isolate (worker/mcp/servers.ts). On
// both, a tool's calls enter the pipeline as the caller the endpoint let in (pipeline.ts handleAs):
// whoever borrowed a server before, each call is its own caller's, its scope and its grant's agent
// limit decide, also when calls of different callers run at once.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { authorize, type FetchLike } from "../e2e/oauth-dance.ts";
import { BASE, DEV_TOKEN, uniqueAgent } from "./helpers.ts";

const f: FetchLike = (url, init) => SELF.fetch(url, init);
const READER = "dev-reader-token"; // read only

let rpcId = 0;
/** One tools/call over POST /mcp as a host sends it; the JSON-RPC result (the tool's result). */
async function callTool(token: string, name: string, args: Record<string, unknown>, viaSdk: boolean): Promise<{ isError?: boolean; text: string; structured?: Record<string, unknown> }> {
  const res = await SELF.fetch(`${BASE}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: "tools/call", params: { name, arguments: args, ...(viaSdk ? { _meta: {} } : {}) } }),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("application/json");
  const { result } = (await res.json()) as { result: { isError?: boolean; content: { text: string }[]; structuredContent?: Record<string, unknown> } };
  return { isError: result.isError, text: result.content[0]?.text ?? "", structured: result.structuredContent };
}

describe.each([["the quick path", false], ["kept SDK servers", true]])("MCP tool calls on %s", (_path, viaSdk) => {
  it("calls of a grant limited to one agent and of a full token, at once and interleaved, each keep their own caller's limit", async () => {
    const mine = uniqueAgent();
    const other = uniqueAgent();
    const { tokens } = await authorize(f, BASE, { token: DEV_TOKEN, scopes: ["read", "send"], agents: mine });
    const calls = Array.from({ length: 24 }, (_, i) => {
      const limited = i % 2 === 0;
      const agent = i % 4 < 2 ? mine : other;
      return { limited, agent, answer: callTool(limited ? tokens.access_token : DEV_TOKEN, "who", { agent }, viaSdk) };
    });
    for (const c of calls) {
      const r = await c.answer;
      if (c.limited && c.agent === other) {
        expect(r.isError, r.text).toBe(true);
        expect(r.text).toContain(`limited to agents ${mine}, not ${other}`);
      } else {
        expect(r.isError, r.text).toBeFalsy();
        expect(r.structured).toMatchObject({ agent: c.agent });
      }
    }
  });

  it("a read-only token's cancel is refused by the route's scope check, before and after a full token used the same kind of server", async () => {
    const agent = uniqueAgent();
    const posted = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "keep me" }),
    });
    const { id } = (await posted.json()) as { id: number };
    for (const token of [READER, DEV_TOKEN, READER]) {
      const r = await callTool(token, "who", { agent }, viaSdk);
      expect(r.isError, r.text).toBeFalsy();
    }
    const refused = await callTool(READER, "cancel", { agent, message_id: id }, viaSdk);
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain("lacks the answer scope");
    const view = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(((await view.json()) as { status: string }).status).toBe("queued");
  });
});
