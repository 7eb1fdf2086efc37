#!/usr/bin/env node
// An OpenAI Agents SDK agent whose `deploy` tool needs a person's approval, served by baton. The
// demo starts a runner on machine "a", sends a message, and shows the parked question; then stops
// machine "a" (as if it died), starts machine "b", approves as a person would, and prints the
// reply: the run resumed on "b" from the stored RunState, and the tool ran once.
//
//   BATON_URL=http://127.0.0.1:8787 node examples/openai-approvals.mjs [AGENT] [--json]
//
// The model is scripted (no network, no key). With a real one, pass `model: "gpt-5"` (or any) to
// the Agent and set OPENAI_API_KEY; nothing else changes.
import { Agent, setTracingDisabled, tool, Usage } from "@openai/agents";
import * as z from "zod";
import { approve, serve } from "baton-client";
import { runWithApprovals } from "baton-client/openai-agents";

// The SDK's own tracing exports to OpenAI and, with no key, says so on every run: the demo has no
// key to give it. (baton's tracing is OpenTelemetry's, docs/guides/tracing.md.)
setTracingDisabled(true);

const url = process.env.BATON_URL ?? "http://127.0.0.1:8787";
const token = process.env.BATON_TOKEN ?? "baton-dev-token";
const agentName = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? "deployer";
const json = process.argv.includes("--json");
const conn = { url, token };
const deployed = [];

function say(event, text) {
  process.stdout.write(json ? `${JSON.stringify(event)}\n` : `${text}\n`);
}

/** A stand-in for the model: it asks to deploy, then reports what the tool said. */
const scriptedModel = {
  async getResponse(request) {
    const items = Array.isArray(request.input) ? request.input : [];
    const result = items.find((i) => i.type === "function_call_result");
    if (!result) return { usage: new Usage(), output: [{ type: "function_call", callId: "call_1", name: "deploy", arguments: '{"service":"api","version":"v2"}', status: "completed" }] };
    const text = typeof result.output === "string" ? result.output : result.output.text;
    return { usage: new Usage(), output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: `done: ${text}` }] }] };
  },
  getStreamedResponse() {
    throw new Error("not scripted");
  },
};

const deploy = tool({
  name: "deploy",
  description: "Deploy a service version to production",
  parameters: z.object({ service: z.string(), version: z.string() }),
  needsApproval: true,
  execute: async ({ service, version }) => {
    deployed.push(`${service}@${version}`);
    return `deployed ${service}@${version}`;
  },
});
const agent = new Agent({ name: "deployer", instructions: "Deploy what you are asked to.", model: scriptedModel, tools: [deploy] });

const runner = (machine) => serve(agentName, async (message, ctx) => (await runWithApprovals(agent, message.text, ctx)).finalOutput, { ...conn, machine });

async function message(id) {
  const res = await fetch(`${url}/agents/${agentName}/messages/${id}`, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
}

async function until(id, status) {
  for (let i = 0; i < 300; i++) {
    const m = await message(id);
    if (m.status === status) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`message ${id} never became ${status}`);
}

const a = runner("a");
const posted = await fetch(`${url}/agents/${agentName}/messages`, {
  method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ text: "ship api v2" }),
});
const { id } = await posted.json();
const parked = await until(id, "parked");
say({ step: "parked", id, question: parked.question.text, choices: parked.question.choices }, `message ${id} waits for a person: ${parked.question.text}\n  (from a shell: baton approve ${agentName} ${id}, or baton answer ${agentName} ${id} deny)`);
await a.stop();
say({ step: "machine_a_stopped" }, "machine a stopped; machine b takes over");
const b = runner("b");
await approve(agentName, id, conn);
say({ step: "approved", id }, `approved message ${id}`);
const done = await until(id, "acknowledged");
say({ step: "replied", id, reply: done.reply, tool_runs: deployed.length }, `reply: ${done.reply} (the tool ran ${deployed.length} time${deployed.length === 1 ? "" : "s"})`);
await b.stop();
