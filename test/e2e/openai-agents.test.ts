// Approvals for the OpenAI Agents SDK, against the real `@openai/agents` and a real wrangler dev,
// with a scripted model (the SDK's Model interface; no network): a `needsApproval` tool parks the
// message with the tool's name and arguments as the question; approved, the run resumes from the
// stored RunState, on another machine after the first one died, the tool runs once and the model
// is not asked again for what it already said; denied, the tool never runs and the model is told.
import { Agent, RunState, tool, Usage, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import * as z from "zod";
import { answer, serve, type ServeHandle } from "../../client/node.ts";
import { runWithApprovals } from "../../client/openai-agents.ts";
import { getJson, postMessage, runBaton, sharedServeFixture, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

const fx = sharedServeFixture();
const handles: ServeHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
});

/** Calls `deploy` first; once it sees the tool's output (or its refusal), says what came back. */
class ScriptedModel implements Model {
  calls = 0;
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.calls += 1;
    const items = Array.isArray(request.input) ? request.input : [];
    const output = items.find((i) => (i as { type?: string }).type === "function_call_result") as { output?: unknown } | undefined;
    if (!output) {
      return { usage: new Usage(), output: [{ type: "function_call", callId: "call_deploy_1", name: "deploy", arguments: JSON.stringify({ service: "api", version: "v2" }), status: "completed" }] };
    }
    const out = output.output as string | { text?: string };
    const said = typeof out === "string" ? out : out.text ?? JSON.stringify(out);
    return { usage: new Usage(), output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: `result: ${said}` }] }] };
  }
  getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not scripted");
  }
}

function deployAgent(model: Model, deployed: string[]): Agent {
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
  return new Agent({ name: "deployer", instructions: "Deploy what you are asked to.", model, tools: [deploy] });
}

async function parkedWithQuestion(agent: string, id: number) {
  const m = await waitForMessage(fx.dev.url, agent, id, (v) => v.status === "parked");
  return { ...m, question: (await getJson<{ question: { text: string; choices: string[] } }>(`${fx.dev.url}/agents/${agent}/messages/${id}`)).question };
}

describe("approvals for the OpenAI Agents SDK", () => {
  it("a needsApproval tool parks the message (baton show keeps its RunState to a short line); approved after its machine stopped, another machine resumes the stored RunState and the tool runs once", async () => {
    const agent = uniqueAgent("oai");
    const deployed: string[] = [];
    const models = { a: new ScriptedModel(), b: new ScriptedModel() };
    const start = (machine: "a" | "b") => serve(agent, async (m, ctx) => (await runWithApprovals(deployAgent(models[machine], deployed), m.text, ctx)).finalOutput as string,
      { url: fx.dev.url, token: DEV_TOKEN, machine });
    const a = start("a");
    handles.push(a);
    const id = await postMessage(fx.dev.url, agent, "ship api v2");
    const parked = await parkedWithQuestion(agent, id);
    expect(parked.question.text).toContain('deploy with {"service":"api","version":"v2"}');
    expect(parked.question.choices).toEqual(["approve", "deny"]);
    expect(deployed).toEqual([]);
    // `baton show` keeps the stored RunState (kilobytes of JSON) to one short line; --json has all of it.
    const shown = runBaton(["show", agent, String(id)], { BATON_URL: fx.dev.url });
    expect(shown.code, shown.stderr).toBe(0);
    const full = JSON.parse(runBaton(["show", agent, String(id), "--json"], { BATON_URL: fx.dev.url }).stdout) as { checkpoint: unknown };
    const stored = Buffer.byteLength(JSON.stringify(full.checkpoint));
    expect(stored).toBeGreaterThan(1000);
    expect(shown.stdout).toContain(`… (${stored} B of JSON; --json shows all)`);
    expect(Math.max(...shown.stdout.split("\n").map((l) => l.length))).toBeLessThan(300);
    await a.stop();
    handles.push(start("b"));
    await answer(agent, id, "approve", { url: fx.dev.url, token: DEV_TOKEN });
    const done = await waitForMessage(fx.dev.url, agent, id, (v) => v.status === "acknowledged");
    expect(done.reply).toBe("result: deployed api@v2");
    expect(deployed).toEqual(["api@v2"]);
    expect(models.a.calls).toBe(1);
    expect(models.b.calls).toBe(1);
  });

  it("denied, the tool never runs and the model is told a person denied it", async () => {
    const agent = uniqueAgent("oai");
    const deployed: string[] = [];
    const model = new ScriptedModel();
    handles.push(serve(agent, async (m, ctx) => (await runWithApprovals(deployAgent(model, deployed), m.text, ctx)).finalOutput as string,
      { url: fx.dev.url, token: DEV_TOKEN, machine: "a" }));
    const id = await postMessage(fx.dev.url, agent, "ship api v2");
    await parkedWithQuestion(agent, id);
    await answer(agent, id, "deny", { url: fx.dev.url, token: DEV_TOKEN }, { text: "freeze week" });
    const done = await waitForMessage(fx.dev.url, agent, id, (v) => v.status === "acknowledged");
    expect(done.reply).toMatch(/^result: .*denied this call: freeze week/);
    expect(deployed).toEqual([]);
  });

  it("an approval cannot be moved to other arguments: a RunState altered to deploy v3 after v2 was approved asks again, and the tool never runs for v3 on v2's approval", async () => {
    const agent = uniqueAgent("oai");
    const deployed: string[] = [];
    const model = new ScriptedModel();
    const altered = (checkpoint: unknown) => {
      const s = checkpoint as { openaiRunState?: string } | null;
      return s?.openaiRunState ? { openaiRunState: s.openaiRunState.replaceAll('\\"v2\\"', '\\"v3\\"') } : checkpoint;
    };
    handles.push(serve(agent, async (m, ctx) => {
      // From the second attempt on, the stored RunState is altered as a client holding it could alter it.
      const held = m.attempt === 1 ? ctx : { ...ctx, messageCheckpoint: altered(ctx.messageCheckpoint) };
      return (await runWithApprovals(deployAgent(model, deployed), m.text, held)).finalOutput as string;
    }, { url: fx.dev.url, token: DEV_TOKEN, machine: "a" }));
    const id = await postMessage(fx.dev.url, agent, "ship api v2");
    const first = await getJson<{ question: { approve: { args: string } } }>(`${fx.dev.url}/agents/${agent}/messages/${(await parkedWithQuestion(agent, id)).id}`);
    expect(first.question.approve.args).toBe('{"arguments":{"service":"api","version":"v2"},"tool":"deploy"}');
    await answer(agent, id, "approve", { url: fx.dev.url, token: DEV_TOKEN });
    const again = await waitForMessage(fx.dev.url, agent, id, (v) => v.status === "parked" && v.attempts === 2);
    expect((again as unknown as { question: { approve: { args: string } } }).question.approve.args).toBe('{"arguments":{"service":"api","version":"v3"},"tool":"deploy"}');
    expect(deployed).toEqual([]);
    await answer(agent, id, "approve", { url: fx.dev.url, token: DEV_TOKEN });
    const done = await waitForMessage(fx.dev.url, agent, id, (v) => v.status === "acknowledged");
    expect(done.reply).toBe("result: deployed api@v3");
    expect(deployed).toEqual(["api@v3"]);
  });

  it("an approval the SDK keeps in a RunState cannot be moved either: a state that carries its own approval of the call, altered to v3, asks a person about v3 and deploys nothing", async () => {
    const agent = uniqueAgent("oai");
    const deployed: string[] = [];
    const model = new ScriptedModel();
    const forged = async (checkpoint: unknown) => {
      const s = checkpoint as { openaiRunState?: string } | null;
      if (!s?.openaiRunState) return checkpoint;
      const state = await RunState.fromString(deployAgent(model, deployed), s.openaiRunState);
      for (const item of state.getInterruptions()) state.approve(item);
      return { openaiRunState: state.toString().replaceAll('\\"v2\\"', '\\"v3\\"') };
    };
    handles.push(serve(agent, async (m, ctx) => {
      const held = m.attempt === 1 ? ctx : { ...ctx, messageCheckpoint: await forged(ctx.messageCheckpoint) };
      return (await runWithApprovals(deployAgent(model, deployed), m.text, held)).finalOutput as string;
    }, { url: fx.dev.url, token: DEV_TOKEN, machine: "a" }));
    const id = await postMessage(fx.dev.url, agent, "ship api v2");
    await parkedWithQuestion(agent, id);
    await answer(agent, id, "approve", { url: fx.dev.url, token: DEV_TOKEN });
    const after = await waitForMessage(fx.dev.url, agent, id, (v) => v.status === "parked" && v.attempts === 2);
    expect((after as unknown as { question: { approve: { args: string } } }).question.approve.args).toBe('{"arguments":{"service":"api","version":"v3"},"tool":"deploy"}');
    expect(deployed).toEqual([]);
  });

  it("the example examples/openai-approvals.mjs parks, survives its machine stopping, and replies after the approval with one tool run, printing nothing on stderr", () => {
    const r = spawnSync(process.execPath, [join(ROOT, "examples/openai-approvals.mjs"), uniqueAgent("example"), "--json"], {
      cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN }, encoding: "utf8", timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr, "nothing on stderr: the SDK's OpenAI tracing exporter is off in the example").toBe("");
    const steps = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(steps.map((s) => s.step)).toEqual(["parked", "machine_a_stopped", "approved", "replied"]);
    expect(steps.at(-1)).toMatchObject({ reply: "done: deployed api@v2", tool_runs: 1 });
  });
});
