// `baton send` and `baton history` as real processes against `wrangler dev`, with a raw
// WebSocket holder that replies under each message's token.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { BIN, sharedServeFixture } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

const fx = sharedServeFixture();

const run = promisify(execFile);


function baton(...args: string[]) {
  return run("node", [BIN, ...args, "--url", fx.dev.url], { cwd: ROOT, env: { ...process.env, BATON_TOKEN: DEV_TOKEN } });
}

/** A holder that answers every message it is asked to run with "echo: TEXT". */
async function echoHolder(agent: string): Promise<WebSocket> {
  const ws = new WebSocket(`${fx.dev.url.replace("http", "ws")}/agents/${agent}/serve?machine=echo`, {
    headers: { authorization: `Bearer ${DEV_TOKEN}` },
  });
  ws.on("message", (data) => {
    const f = JSON.parse(String(data));
    if (f.type === "message" && f.run) {
      ws.send(JSON.stringify({ type: "reply", id: f.id, token: f.token, key: `${f.id}:reply`, text: `echo: ${f.text}` }));
    }
  });
  await new Promise((r) => ws.once("open", r));
  ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
  return ws;
}

describe("baton send and history", () => {
  it("send --wait prints the holder's reply; history lists status, attempts and the reply", async () => {
    const agent = `send-${Date.now()}`;
    const queued = await baton("send", agent, "queued before anyone serves", "--json");
    const first = JSON.parse(queued.stdout);
    expect(first).toMatchObject({ status: "queued", attempts: 0 });
    let page = JSON.parse((await baton("history", agent, "--json")).stdout);
    expect(page.messages.map((m: { status: string }) => m.status)).toEqual(["queued"]);

    const holder = await echoHolder(agent);
    try {
      const waited = await baton("send", agent, "hello there", "--wait");
      expect(waited.stdout).toBe("echo: hello there");
      page = JSON.parse((await baton("history", agent, "--json")).stdout);
      expect(page.messages).toMatchObject([
        { id: first.id, status: "acknowledged", attempts: 1, reply: "echo: queued before anyone serves" },
        { status: "acknowledged", attempts: 1, reply: "echo: hello there" },
      ]);
      const after = JSON.parse((await baton("history", agent, "--after", String(first.id), "--json")).stdout);
      expect(after.messages).toHaveLength(1);
      const table = (await baton("history", agent)).stdout;
      expect(table).toContain("acknowledged");
      expect(table).toMatch(/acknowledged\s+attempts 1 on echo\s+hello there\n\s+reply: echo: hello there\n/);
    } finally {
      holder.close();
    }
  });

  it("a runner's failure reason and a sender's text carrying ESC, BEL and CSI sequences reach the terminal without a control byte; --json keeps them exact", async () => {
    const agent = `hostile-${Date.now()}`;
    const hostile = "deploy\u001b[1A\u001b[2K\u001b]0;pwned\u0007 ship\u009b2J";
    const reason = "boom\u001b[1A\u001b[2Kbaton answer x 1 ship\u0007\u001b]2;title\u001b\\";
    const policy = await fetch(`${fx.dev.url}/agents/${agent}/policy`, { method: "PUT", headers: { authorization: `Bearer ${DEV_TOKEN}` }, body: JSON.stringify({ max_attempts: 1 }) });
    expect(policy.status).toBe(200);
    const ws = new WebSocket(`${fx.dev.url.replace("http", "ws")}/agents/${agent}/serve?machine=failing`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    ws.on("message", (data) => {
      const f = JSON.parse(String(data));
      if (f.type === "message" && f.run) ws.send(JSON.stringify({ type: "fail", id: f.id, token: f.token, reason }));
    });
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
    try {
      const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/;
      const failed = await baton("send", agent, hostile, "--wait").catch((e) => e);
      expect(failed.code).toBe(4);
      expect(failed.stderr).toContain("boom");
      expect(failed.stderr).not.toMatch(CONTROL);
      const id = Number(/message (\d+) failed/.exec(failed.stderr)?.[1]);
      for (const args of [["show", agent, String(id)], ["history", agent]]) {
        const out = await baton(...args);
        expect(out.stdout, args[0]).toContain("deploy");
        expect(out.stdout, args[0]).toContain("boom");
        expect(out.stdout, args[0]).not.toMatch(CONTROL);
      }
      const exact = JSON.parse((await baton("show", agent, String(id), "--json")).stdout);
      expect(exact).toMatchObject({ text: hostile, error: reason });
    } finally {
      ws.close();
    }
  });

  it("a bad agent name is a one-line usage error with exit 2, in baton's words", async () => {
    const err = await baton("send", "Not-Valid", "x").catch((e) => e);
    expect(err.code).toBe(2);
    expect(err.stderr).toMatch(/^baton: bad agent name "Not-Valid": [^\n]+\n$/);
  });
});
