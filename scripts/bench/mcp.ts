// `npm run bench -- --only mcp`: what remote MCP costs over the route it wraps. The official SDK's
// Client over StreamableHTTPClientTransport calls the `who` tool at POST /mcp (a quick tool's plain
// call: worker/mcp/quick-call.ts, its call made through the Worker's own pipeline), beside a plain
// GET /agents/{agent}/presence with the same token, and the same tools/call sent by a bare fetch
// (what the Worker adds, without the SDK Client's own work in this process), and a POST /mcp the
// endpoint refuses once it has read its body (a batch: 400 before any tool), which shows what a
// POST with a JSON body costs here apart from the tool, in rotating order.
// Goal (issue 51): the MCP call's p50 within 1.3x of the plain route's, judged twice: through the SDK's Client (what a
// host pays, the Client's own work in this process included) and by bare fetch, as the plain route itself is called.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { fmt, markdownTable, percentile } from "./stats.ts";

const GOAL = 1.3;
const WARMUP = 5;

export async function runMcp(url: string, trials: number): Promise<string> {
  const agent = `bench-mcp-${Math.random().toString(36).slice(2, 8)}`;
  const headers = { authorization: `Bearer ${DEV_TOKEN}` };
  const client = new Client({ name: "baton-bench", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", url), { requestInit: { headers } }));
  const plain = async () => {
    const res = await fetch(`${url}/agents/${agent}/presence`, { headers });
    if (res.status !== 200) throw new Error(`presence answered ${res.status}`);
    await res.json();
  };
  const mcp = async () => {
    const r = await client.callTool({ name: "who", arguments: { agent } });
    if (r.isError) throw new Error(`who failed: ${JSON.stringify(r.content)}`);
  };
  const mcpHeaders = { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": LATEST_PROTOCOL_VERSION };
  const whoCall = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "who", arguments: { agent } } });
  const bare = async () => {
    const res = await fetch(`${url}/mcp`, { method: "POST", headers: mcpHeaders, body: whoCall });
    const body = (await res.json()) as { result?: { isError?: boolean } };
    if (res.status !== 200 || body.result === undefined || body.result.isError) throw new Error(`bare who answered ${res.status}: ${JSON.stringify(body)}`);
  };
  const refused = async () => {
    const res = await fetch(`${url}/mcp`, { method: "POST", headers: mcpHeaders, body: `[${whoCall}]` });
    await res.arrayBuffer();
    if (res.status !== 400) throw new Error(`a batch answered ${res.status}`);
  };
  const samples = { plain: [] as number[], mcp: [] as number[], bare: [] as number[], refused: [] as number[] };
  const timed = async (fn: () => Promise<void>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  try {
    for (let i = 0; i < WARMUP; i++) await Promise.all([plain(), mcp(), bare(), refused()]);
    const calls = { plain, mcp, bare, refused };
    const kinds = ["plain", "mcp", "bare", "refused"] as const;
    for (let i = 0; i < trials * 5; i++) {
      for (let k = 0; k < kinds.length; k++) {
        const which = kinds[(i + k) % kinds.length]!;
        samples[which].push(await timed(calls[which]));
      }
    }
  } finally {
    await client.close();
  }
  const p50 = { plain: percentile(samples.plain, 50), mcp: percentile(samples.mcp, 50), bare: percentile(samples.bare, 50), refused: percentile(samples.refused, 50) };
  const r = p50.mcp / p50.plain;
  return [
    "### Remote MCP: the `who` tool over POST /mcp against GET …/presence, the route it wraps",
    "",
    markdownTable(["", "p50 ms", "p99 ms", "trials"], [
      ["GET /agents/{agent}/presence", fmt(p50.plain), fmt(percentile(samples.plain, 99)), String(samples.plain.length)],
      ["MCP tools/call who (SDK Client)", fmt(p50.mcp), fmt(percentile(samples.mcp, 99)), String(samples.mcp.length)],
      ["the same tools/call, bare fetch", fmt(p50.bare), fmt(percentile(samples.bare, 99)), String(samples.bare.length)],
      ["POST /mcp refused once its body is read (no tool)", fmt(p50.refused), fmt(percentile(samples.refused, 99)), String(samples.refused.length)],
    ]),
    "",
    `MCP / plain p50: ${r.toFixed(3)}x (goal <= ${GOAL}x: ${r <= GOAL ? "met" : "not met"}); bare fetch / plain: ${(p50.bare / p50.plain).toFixed(3)}x ` +
      `(goal, both called by fetch: ${p50.bare / p50.plain <= GOAL ? "met" : "not met"}); refused POST / plain: ${(p50.refused / p50.plain).toFixed(3)}x`,
  ].join("\n");
}
