#!/usr/bin/env node
// What an MCP host does with `baton mcp`, in one command: starts `baton mcp AGENT` over stdio with
// the official MCP SDK's client, lists its tools, and calls `ask`, which parks a question for a
// person in baton. Then, as that person would from another terminal, it runs
// `baton answer AGENT ID ship "go ahead"` (a token with the answer scope; the host's own token
// need not have it), and prints what the tool call returned: the choice and who answered.
//
//   BATON_URL=http://127.0.0.1:8787 node examples/mcp-ask.mjs [AGENT] [--json]
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const url = process.env.BATON_URL ?? "http://127.0.0.1:8787";
const token = process.env.BATON_TOKEN ?? "baton-dev-token";
const agent = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? "assistant";
const json = process.argv.includes("--json");
const cli = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
const env = { ...process.env, BATON_URL: url, BATON_TOKEN: token };

function say(event, text) {
  process.stdout.write(json ? `${JSON.stringify(event)}\n` : `${text}\n`);
}

const client = new Client({ name: "example-host", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", agent], env, stderr: "ignore" }));
const tools = (await client.listTools()).tools.map((t) => t.name);
say({ step: "tools", tools }, `baton mcp offers: ${tools.join(", ")}`);

const asking = client.callTool({ name: "ask", arguments: { question: "Merge the release branch into main?", choices: ["ship", "hold"], deadline_seconds: 600 } });
// The person's side: find the question and answer it, as `baton history` and `baton answer` would.
let id = null;
for (let i = 0; i < 100 && id === null; i++) {
  const page = await fetch(`${url}/agents/${agent}/messages?after=0&limit=100`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
  id = page.messages.findLast((m) => m.status === "parked" && m.for_person)?.id ?? null;
  if (id === null) await new Promise((r) => setTimeout(r, 100));
}
if (id === null) throw new Error("the question never appeared");
say({ step: "asked", id }, `message ${id} asks a person; answering it: baton answer ${agent} ${id} ship "go ahead"`);
const answered = spawnSync(process.execPath, [cli, "answer", agent, String(id), "ship", "go ahead"], { env, encoding: "utf8" });
if (answered.status !== 0) throw new Error(answered.stderr);
const result = (await asking).structuredContent;
// A token configured without a name (the dev token) is named "default": say so in words.
const by = result.by.token === "default" ? "the unnamed token" : `token ${result.by.token}`;
say({ step: "answer", ...result }, `the tool call returned: ${result.choice} ("${result.text}") by ${by} via ${result.by.via}`);
await client.close();
