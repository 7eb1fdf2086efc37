// The remote MCP endpoint's quick path (worker/mcp/quick-call.ts): a plain tools/call of a tool
// that answers at once is answered without the SDK's server, only when every check the SDK's path
// makes would pass. Each input is sent twice: as the quick path may take it, and in a shape only the
// SDK's path takes (a tools/list, or params with an empty _meta); both must answer alike. The
// official SDK Client checks the quick answers' shape.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, DEV_TOKEN, message, post, uniqueAgent } from "./helpers.ts";
import { frozenAgent } from "./clock.ts";

const READER = "dev-reader-token"; // read only
const TWIN = "dev-twin-token"; // unnamed like DEV_TOKEN, so also named `default`
const HEADERS = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" };

async function rpc(body: unknown, headers: Record<string, string> = HEADERS): Promise<{ status: number; type: string | null; body: string }> {
  const res = await SELF.fetch(`${BASE}/mcp`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
}

const toolCall = (name: string, args: unknown, id: unknown = 1) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
/** The same call in a shape the quick path leaves to the SDK (an empty _meta is nothing the tools read). */
const sdkCall = (name: string, args: unknown, id: unknown = 1) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, _meta: {} } });

describe("the MCP quick path answers as the SDK's path does", () => {
  it("a quick tool's result, a tool error and a refused scope are the same JSON-RPC answers on both paths", async () => {
    const agent = await frozenAgent();
    const id = await post(agent, "keep me");
    const cases: [string, Record<string, unknown>, string][] = [
      ["who", { agent }, DEV_TOKEN],
      ["get_answer", { agent, message_id: id }, DEV_TOKEN],
      ["get_answer", { agent }, DEV_TOKEN], // the tool's own error: no message_id
      ["cancel", { agent, message_id: id }, READER], // the route's scope check refuses it
      ["lease_release", { session: `s-${agent}`, run_id: "nobody" }, DEV_TOKEN],
    ];
    for (const [name, args, token] of cases) {
      const headers = { ...HEADERS, authorization: `Bearer ${token}` };
      const quick = await rpc(toolCall(name, args), headers);
      const sdk = await rpc(sdkCall(name, args), headers);
      expect(quick.status, name).toBe(200);
      expect(quick.type).toBe("application/json");
      expect(JSON.parse(quick.body), `${name} ${quick.body}`).toEqual(JSON.parse(sdk.body));
    }
    expect((await message(agent, id)).status).toBe("queued");
  });

  it("a send's post key is the credential's, not the token name's: two tokens named default with one session and request id post twice, a retry once", async () => {
    const agent = uniqueAgent();
    const session = crypto.randomUUID();
    const send = async (token: string) => {
      const res = await rpc(sdkCall("send", { agent, text: `from ${token}` }, 7), { ...HEADERS, authorization: `Bearer ${token}`, "mcp-session-id": session });
      const json = res.body.startsWith("{") ? res.body : res.body.split("\n").find((l) => l.startsWith("data:"))!.slice(5);
      return (JSON.parse(json) as { result: { structuredContent: { message_id: number } } }).result.structuredContent.message_id;
    };
    const first = await send(DEV_TOKEN);
    const twin = await send(TWIN);
    expect(twin).not.toBe(first);
    expect(await message(agent, twin)).toMatchObject({ text: `from ${TWIN}` });
    expect(await send(TWIN)).toBe(twin);
  });

  it("every check of the SDK's transport and server refuses a quick tool's call as it refuses a request the SDK answers", async () => {
    const agent = await frozenAgent();
    const id = await post(agent, "keep me");
    const cancel = (rpcId: unknown = 1) => toolCall("cancel", { agent, message_id: id }, rpcId);
    const list = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    const flaws: { what: string; headers?: Record<string, string>; quick: unknown; sdk: unknown; status: number }[] = [
      { what: "a bad session id", headers: { ...HEADERS, "mcp-session-id": "bad session" }, quick: cancel(), sdk: list, status: 400 },
      { what: "an unsupported protocol version", headers: { ...HEADERS, "mcp-protocol-version": "2020-01-01" }, quick: cancel(), sdk: list, status: 400 },
      { what: "an Accept without event streams", headers: { ...HEADERS, accept: "application/json" }, quick: cancel(), sdk: list, status: 406 },
      { what: "an Accept without JSON", headers: { ...HEADERS, accept: "text/event-stream" }, quick: cancel(), sdk: list, status: 406 },
      { what: "a body that is not declared JSON", headers: { ...HEADERS, "content-type": "text/plain" }, quick: cancel(), sdk: list, status: 415 },
      { what: "a batch", quick: [cancel()], sdk: [list], status: 400 },
      { what: "a member JSON-RPC has not", quick: { ...cancel(), extra: 1 }, sdk: { ...list, extra: 1 }, status: 400 },
      { what: "a fractional id", quick: cancel(1.5), sdk: { ...list, id: 1.5 }, status: 400 },
      { what: "another JSON-RPC version", quick: { ...cancel(), jsonrpc: "1.0" }, sdk: { ...list, jsonrpc: "1.0" }, status: 400 },
    ];
    for (const f of flaws) {
      const quick = await rpc(f.quick, f.headers);
      const sdk = await rpc(f.sdk, f.headers);
      expect(quick.status, `${f.what}: ${quick.body}`).toBe(f.status);
      expect(quick.status, f.what).toBe(sdk.status);
      expect(JSON.parse(quick.body), f.what).toEqual(JSON.parse(sdk.body));
    }
    // A tools/call without an id is a notification: accepted with no answer, as the SDK accepts one, and nothing runs.
    const { id: _, ...notification } = cancel();
    const accepted = await rpc(notification);
    expect(accepted).toMatchObject({ status: 202, body: "" });
    expect(await rpc({ jsonrpc: "2.0", method: "notifications/initialized" })).toMatchObject({ status: 202, body: "" });
    // Arguments the tool's schema refuses are the SDK's input validation error, on both paths.
    const badArgs = await rpc(toolCall("cancel", { agent, message_id: "one" }));
    expect(JSON.parse(badArgs.body)).toEqual(JSON.parse((await rpc(sdkCall("cancel", { agent, message_id: "one" }))).body));
    expect(badArgs.body).toContain("Input validation error");
    expect((await message(agent, id)).status).toBe("queued");
  });

  it("the official SDK Client takes every quick tool's answer", async () => {
    const agent = await frozenAgent();
    const id = await post(agent, "cancel me");
    const client = new Client({ name: "quick-path-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", BASE), {
      requestInit: { headers: { authorization: `Bearer ${DEV_TOKEN}` } }, fetch: (url, init) => SELF.fetch(url, init),
    }));
    try {
      const structured = async (name: string, args: Record<string, unknown>) => {
        const r = await client.callTool({ name, arguments: args });
        expect(r.isError, JSON.stringify(r)).toBeFalsy();
        return r.structuredContent as Record<string, unknown>;
      };
      expect(await structured("who", { agent })).toMatchObject({ agent, holder: null });
      expect(await structured("get_answer", { agent, message_id: id })).toMatchObject({ message_id: id });
      const session = `s-${agent}`;
      const lease = await structured("lease_acquire", { session });
      expect(await structured("lease_renew", { session, run_id: lease.run_id })).toMatchObject({ run_id: lease.run_id });
      await structured("lease_release", { session, run_id: lease.run_id });
      expect(await structured("cancel", { agent, message_id: id })).toEqual({ agent, message_id: id, status: "cancelled" });
      expect((await message(agent, id)).status).toBe("cancelled");
    } finally {
      await client.close();
    }
  });
});
