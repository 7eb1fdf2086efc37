// A2A's price over HTTP: a `GetTask` JSON-RPC call (POST /agents/{a}/a2a) against the plain
// `GET /agents/{a}/messages/{id}` it wraps, on one message of an opted-in agent, interleaved
// request by request so both see the same machine. GetTask is the opt-in check (GET …/policy) and
// that read, each dispatched through the route table, then the task built from the message.
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { fmt, markdownTable, percentile } from "./stats.ts";

const headers = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };

async function timed(call: () => Promise<Response>): Promise<number> {
  const start = performance.now();
  const res = await call();
  const body = await res.text();
  const ms = performance.now() - start;
  if (!res.ok || (JSON.parse(body) as { jsonrpc?: string; error?: unknown }).jsonrpc !== undefined && (JSON.parse(body) as { error?: unknown }).error !== undefined) throw new Error(`${res.status}: ${body.slice(0, 200)}`);
  return ms;
}

/** `trials` x 20 calls of each kind; the report's section. */
export async function runA2A(url: string, trials: number): Promise<string> {
  const agent = `bench-a2a-${process.pid}`;
  const put = await fetch(`${url}/agents/${agent}/policy`, { method: "PUT", headers, body: JSON.stringify({ a2a: true, description: "bench" }) });
  if (!put.ok) throw new Error(`opt in: ${put.status} ${await put.text()}`);
  const posted = await fetch(`${url}/agents/${agent}/messages`, { method: "POST", headers, body: JSON.stringify({ text: "a task to read" }) });
  const { id } = (await posted.json()) as { id: number };
  const plain = () => fetch(`${url}/agents/${agent}/messages/${id}`, { headers });
  const rpc = () => fetch(`${url}/agents/${agent}/a2a`, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: String(id) } }) });
  for (let i = 0; i < 20; i++) await Promise.all([timed(plain), timed(rpc)]); // warm-up: both routes compiled
  const samples = { plain: [] as number[], rpc: [] as number[] };
  for (let i = 0; i < trials * 20; i++) {
    // Alternating which goes first, one at a time, so neither always meets a warmer object.
    if (i % 2 === 0) {
      samples.plain.push(await timed(plain));
      samples.rpc.push(await timed(rpc));
    } else {
      samples.rpc.push(await timed(rpc));
      samples.plain.push(await timed(plain));
    }
  }
  console.log("  a2a: done");
  const p50 = { plain: percentile(samples.plain, 50), rpc: percentile(samples.rpc, 50) };
  const row = (label: string, values: number[]) => [label, fmt(percentile(values, 50)), fmt(percentile(values, 99)), fmt(Math.min(...values))];
  const table = markdownTable(["over HTTP (ms)", "p50", "p99", "min"], [
    row("`GET /agents/{a}/messages/{id}`", samples.plain),
    row("A2A `GetTask` (`POST /agents/{a}/a2a`)", samples.rpc),
  ]);
  return `### A2A: \`GetTask\` beside the read it wraps

${samples.plain.length} calls of each, interleaved, on one message of an opted-in agent. \`GetTask\` checks the opt-in (the policy read) and reads the message, each through the route table, and builds the task; the goal is a p50 within 1.3x of the plain read's. Ratio of p50s: **${(p50.rpc / p50.plain).toFixed(2)}x**.

${table}
`;
}
