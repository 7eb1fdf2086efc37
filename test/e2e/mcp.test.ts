// `baton mcp` spawned by the MCP SDK's own client over stdio, against a real wrangler dev: the ask
// tool parks a question for a person, keeps the call alive with progress notifications, and
// returns the answer a person gave with `baton answer` (who, via); a host that cannot wait gets the
// message id and get_answer; who, send, and session leases that only one run holds at a time.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { serve, type MessageContext } from "../../client/node.ts";
import { BIN, getJson, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage, writeSinkCommand } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

const fx = sharedServeFixture();
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function mcpClient(agent: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath, args: [BIN, "mcp", agent], cwd: ROOT,
    env: { ...(process.env as Record<string, string>), BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN }, stderr: "ignore",
  });
  const client = new Client({ name: "baton-test-host", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

type Structured = Record<string, unknown>;
const structured = (r: unknown): Structured => (r as { structuredContent?: Structured }).structuredContent ?? { error: JSON.stringify(r) };

async function parkedQuestion(agent: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const page = await getJson<{ messages: { id: number; status: string; for_person?: boolean }[] }>(`${fx.dev.url}/agents/${agent}/messages`);
    const asked = page.messages.find((m) => m.status === "parked" && m.for_person);
    if (asked) return asked.id;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("no question was parked");
}

describe("baton mcp", () => {
  it("lists its tools", async () => {
    const client = await mcpClient(uniqueAgent("mcp"));
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(["ask", "cancel", "get_answer", "get_output", "lease_acquire", "lease_release", "lease_renew", "send", "who"]);
  });

  it("ask waits for a person's answer given with baton answer, with progress while it waits, and returns the choice and who gave it", async () => {
    const agent = uniqueAgent("mcp");
    const client = await mcpClient(agent);
    const progress: number[] = [];
    const call = client.callTool({ name: "ask", arguments: { question: "Force-push to main?", choices: ["push", "hold"] } }, undefined, {
      onprogress: (p) => progress.push(p.progress), resetTimeoutOnProgress: true, timeout: 60_000,
    });
    const id = await parkedQuestion(agent);
    await expect.poll(() => progress.length, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
    const answered = runBaton(["answer", agent, String(id), "hold", "not today"], { BATON_URL: fx.dev.url });
    expect(answered.code).toBe(0);
    const result = await call;
    expect(structured(result)).toMatchObject({ status: "answered", message_id: id, choice: "hold", text: "not today", by: { account: "dev", via: "cli" } });
    expect(progress.length).toBeGreaterThanOrEqual(1);
    const stored = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged");
    expect(stored.attempts).toBe(0);
  });

  it("a host that cannot wait gets the message id as message_id, and get_answer (message_id, or the old messageId) returns the answer once a person rejects", async () => {
    const agent = uniqueAgent("mcp");
    const client = await mcpClient(agent);
    const asked = structured(await client.callTool({ name: "ask", arguments: { question: "Delete the branch?", wait_seconds: 0 } }));
    expect(asked).toMatchObject({ status: "waiting", next: expect.stringMatching(/get_answer/) });
    expect(asked).not.toHaveProperty("messageId");
    const id = asked.message_id as number;
    expect(structured(await client.callTool({ name: "get_answer", arguments: { message_id: id } }))).toMatchObject({ status: "waiting", message_id: id });
    // The name ask's result used before: still taken as get_answer's input.
    expect(structured(await client.callTool({ name: "get_answer", arguments: { messageId: id } }))).toMatchObject({ status: "waiting", message_id: id });
    const neither = await client.callTool({ name: "get_answer", arguments: {} });
    expect(neither).toMatchObject({ isError: true, content: [{ type: "text", text: "get_answer needs message_id: the id ask returned" }] });
    expect(runBaton(["reject", agent, String(id)], { BATON_URL: fx.dev.url }).code).toBe(0);
    expect(structured(await client.callTool({ name: "get_answer", arguments: { message_id: id } }))).toMatchObject({ status: "answered", choice: "reject" });
  });

  it("who shows the holder and waiting work; send posts a message the serving machine runs", async () => {
    const agent = uniqueAgent("mcp");
    const client = await mcpClient(agent);
    expect(structured(await client.callTool({ name: "who", arguments: {} }))).toMatchObject({ agent, holder: null });
    const { command, sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-mcp-")));
    fx.started.push(startServe({ url: fx.dev.url, agent, tag: "box", command, sink }));
    await expect.poll(async () => structured(await client.callTool({ name: "who", arguments: {} })).holder, { timeout: 15_000 }).toMatchObject({ machine: "machine-box" });
    const sent = structured(await client.callTool({ name: "send", arguments: { text: "hello", wait_seconds: 20 } }));
    expect(sent).toMatchObject({ status: "acknowledged", reply: "box did: hello\n" });
  });

  it("get_output returns a running message's output from an offset (text, next offset, whether final), waits for new output, and says final once it replied", async () => {
    const agent = uniqueAgent("mcp");
    const client = await mcpClient(agent);
    let ctx: MessageContext | null = null;
    let release = () => {};
    const handle = serve(agent, async (_m, c) => {
      ctx = c;
      await c.output("first line\n");
      await c.output(new Uint8Array([0x62, 0x61, 0x64, 0x3a, 0xff, 0x0a]));
      await new Promise<void>((r) => (release = r));
      await c.output("last line\n");
      return "ok";
    }, { url: fx.dev.url, token: DEV_TOKEN, machine: "mcp-box" });
    try {
      const sent = structured(await client.callTool({ name: "send", arguments: { text: "talk" } }));
      const id = sent.message_id as number;
      await expect.poll(() => ctx !== null, { timeout: 15_000 }).toBe(true);
      let read = structured(await client.callTool({ name: "get_output", arguments: { message_id: id, wait_seconds: 10 } }));
      while (!String(read.text).includes("bad:")) {
        const more = structured(await client.callTool({ name: "get_output", arguments: { message_id: id, from: read.next_from, wait_seconds: 10 } }));
        read = { ...more, text: `${String(read.text)}${String(more.text)}` };
      }
      expect(read).toMatchObject({ agent, message_id: id, status: "running", text: "first line\nbad:\uFFFD\n", final: false });
      const from = read.next_from as number;
      expect(from).toBeGreaterThan(0);

      // From the offset it gave: only what came after, waited for.
      const waiting = client.callTool({ name: "get_output", arguments: { message_id: id, from, wait_seconds: 20 } });
      await new Promise((r) => setTimeout(r, 300));
      release();
      const next = structured(await waiting);
      expect(next.text).toBe("last line\n");
      let last = next;
      while (!last.final) last = structured(await client.callTool({ name: "get_output", arguments: { message_id: id, from: last.next_from, wait_seconds: 10 } }));
      expect(last).toMatchObject({ final: true, status: "acknowledged" });
      expect(last.text).not.toContain("line");

      const bad = await client.callTool({ name: "get_output", arguments: { message_id: id, wait_seconds: 99 } });
      expect(bad.isError).toBe(true);
    } finally {
      await handle.stop();
    }
  });

  it("a session lease is held by one run at a time: a second acquire is an error until the first run releases", async () => {
    const client = await mcpClient(uniqueAgent("mcp"));
    const session = uniqueAgent("repo");
    const first = structured(await client.callTool({ name: "lease_acquire", arguments: { session, ttl_seconds: 60 } }));
    expect(first).toMatchObject({ run_id: expect.any(String), fence: expect.any(Number) });
    const second = await client.callTool({ name: "lease_acquire", arguments: { session } });
    expect(second).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/held by another run \(until 20/) }] });
    expect(structured(await client.callTool({ name: "lease_renew", arguments: { session, run_id: first.run_id } }))).toMatchObject({ fence: first.fence });
    expect(structured(await client.callTool({ name: "lease_release", arguments: { session, run_id: first.run_id } }))).toEqual({ released: true });
    expect(structured(await client.callTool({ name: "lease_acquire", arguments: { session } }))).toMatchObject({ fence: (first.fence as number) + 1 });
  });


  it("the example examples/mcp-ask.mjs gets the answer a person gave with baton answer through the ask tool", () => {
    const agent = uniqueAgent("example");
    const r = spawnSync(process.execPath, [join(ROOT, "examples/mcp-ask.mjs"), agent, "--json"], {
      cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN }, encoding: "utf8", timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const steps = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(steps.map((s) => s.step)).toEqual(["tools", "asked", "answer"]);
    expect(steps[2]).toMatchObject({ status: "answered", choice: "ship", text: "go ahead", by: { via: "cli" } });
  });

  it("a question asked through MCP reads once in baton show and history, and its answer once, in words: no raw JSON, no empty token", async () => {
    const agent = uniqueAgent("mcp");
    const client = await mcpClient(agent);
    const question = "Rotate the signing key tonight?";
    const asked = structured(await client.callTool({ name: "ask", arguments: { question, choices: ["rotate", "wait"], wait_seconds: 0 } }));
    const id = String(asked.message_id);
    const env = { BATON_URL: fx.dev.url };
    const count = (text: string, part: string) => text.split(part).length - 1;
    const parked = runBaton(["show", agent, id], env).stdout;
    expect(count(parked, question), parked).toBe(1);
    expect(parked).toContain("parked      asks a person (the text below), with no deadline");
    expect(count(runBaton(["history", agent], env).stdout, question)).toBe(1);
    const answered = runBaton(["answer", agent, id, "rotate", "after the deploy"], env);
    expect(answered.stdout).toBe(`answered "rotate" to message ${id} of ${agent}: acknowledged; done, with the answer as its reply\n`);
    const shown = runBaton(["show", agent, id], env).stdout;
    expect(shown).toContain('rotate "after the deploy" by the unnamed token (dev, cli)');
    expect(shown).toMatch(/ {2}done {8}\S+, by the answer above \(no run\)\n/);
    expect(shown).toContain("  reply       the answer above (--json shows the record)");
    expect(shown).not.toContain("token -");
    expect(shown).not.toContain('{"choice"');
    const history = runBaton(["history", agent], env).stdout;
    expect(history).not.toContain('{"choice"');
    expect(count(history, "after the deploy")).toBe(1);
    expect(JSON.parse(runBaton(["show", agent, id, "--json"], env).stdout)).toMatchObject({ status: "acknowledged", reply: expect.stringContaining('"choice":"rotate"') });
  });

  it("the model cannot make its own question approve itself, and get_answer answers only for questions", async () => {
    const agent = uniqueAgent("mcp");
    const client = await mcpClient(agent);
    const selfApproving = await client.callTool({ name: "ask", arguments: { question: "May I deploy?", deadline_seconds: 1, on_deadline: "approve" } });
    expect(selfApproving.isError).toBe(true);
    const res = await fetch(`${fx.dev.url}/agents/${agent}/messages`, {
      method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "a runner's work" }),
    });
    const { id } = (await res.json()) as { id: number };
    expect(structured(await client.callTool({ name: "get_answer", arguments: { message_id: id } }))).toMatchObject({ status: "unanswered", reason: `message ${id} is not a question for a person` });
  });
});

