// "Worker A pauses, B takes over, A wakes and writes" with real processes, where A is a naive
// client that ignores its own clock: the coordinator itself must reject A's late writes and store
// nothing of them, while B's reply is what history keeps.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { sharedServeFixture } from "./serve-helpers.ts";
import { SHARED_SERVE_VARS } from "./shared-dev.global.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

const fx = sharedServeFixture();

/** The shared server's heartbeat TTL. */
const TTL_SECONDS = Number(SHARED_SERVE_VARS.BATON_HEARTBEAT_TTL_SECONDS);

// A: holds, takes the message, heartbeats; when its socket dies it reconnects and writes the reply,
// an ack (with the message token it remembers) and a checkpoint (with the fence it remembers),
// printing every answer as a JSON line.
const NAIVE_WRITER = `
const WebSocket = require("ws");
const [url, bearer] = process.argv.slice(1);
const open = () => new WebSocket(url, { headers: { authorization: "Bearer " + bearer } });
let fence = null, message = null, token = null;
const first = open();
setInterval(() => first.readyState === 1 && first.send('{"type":"ping"}'), 300);
first.on("open", () => first.send(JSON.stringify({ type: "serve_lease", op: "claim" })));
first.on("message", (d) => {
  const f = JSON.parse(String(d));
  if (f.type === "serve_lease" && f.held) { fence = f.fence; console.log(JSON.stringify({ held: fence })); }
  if (f.type === "message" && f.run) { message = f.id; token = f.token; console.log(JSON.stringify({ got: f.id })); }
});
first.on("close", () => {
  const late = open();
  late.on("open", () => {
    late.send(JSON.stringify({ type: "reply", id: message, token, key: message + ":reply", text: "late A", req: "reply" }));
    late.send(JSON.stringify({ type: "ack", id: message, token, req: "ack" }));
    late.send(JSON.stringify({ type: "checkpoint", fence, value: { from: "A" }, req: "checkpoint" }));
  });
  late.on("message", (d) => {
    const f = JSON.parse(String(d));
    if (f.req) console.log(JSON.stringify(f));
  });
});
`;

function naiveWriter(agent: string) {
  const url = `${fx.dev.url.replace("http", "ws")}/agents/${agent}/serve?machine=naive-a`;
  const proc = spawn(process.execPath, ["-e", NAIVE_WRITER, url, DEV_TOKEN], { cwd: process.cwd(), stdio: ["ignore", "pipe", "inherit"] });
  const lines: Record<string, unknown>[] = [];
  let buffer = "";
  proc.stdout!.on("data", (d) => {
    buffer += d;
    const parts = buffer.split("\n");
    buffer = parts.pop()!;
    for (const p of parts) if (p) lines.push(JSON.parse(p));
  });
  const waitFor = async (pick: (l: Record<string, unknown>) => boolean, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = lines.find(pick);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`naive writer never printed the line; saw ${JSON.stringify(lines)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { proc, lines, waitFor };
}

/** B: a well-behaved holder that replies "B did it" under the message's token. */
async function replyingStandby(agent: string): Promise<{ ws: WebSocket; fence: () => number | null }> {
  const ws = new WebSocket(`${fx.dev.url.replace("http", "ws")}/agents/${agent}/serve?machine=b`, {
    headers: { authorization: `Bearer ${DEV_TOKEN}` },
  });
  let fence: number | null = null;
  const beat = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send('{"type":"ping"}'), 300);
  ws.on("close", () => clearInterval(beat));
  ws.on("message", (d) => {
    const f = JSON.parse(String(d));
    if (f.type === "serve_lease" && f.held) fence = f.fence;
    if (f.type === "message" && f.run) ws.send(JSON.stringify({ type: "reply", id: f.id, token: f.token, key: `${f.id}:reply`, text: "B did it" }));
  });
  await new Promise((r) => ws.once("open", r));
  ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
  return { ws, fence: () => fence };
}

async function api(path: string, init: RequestInit = {}) {
  const res = await fetch(`${fx.dev.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
  });
  return res.json() as Promise<Record<string, unknown>>;
}

describe("a paused holder that wakes up and writes", () => {
  it("A pauses, B takes over and replies, A wakes and writes: every late write is rejected and stored nowhere", async () => {
    const agent = `stale-${Date.now()}`;
    const a = naiveWriter(agent);
    try {
      const held = await a.waitFor((l) => "held" in l);
      const b = await replyingStandby(agent);
      try {
        const posted = await api(`/agents/${agent}/messages`, { method: "POST", body: JSON.stringify({ text: "deploy" }) });
        await a.waitFor((l) => l.got === posted.id);
        a.proc.kill("SIGSTOP");
        // B is handed the message once A's TTL runs out by the coordinator's clock, and replies.
        const deadline = Date.now() + 20_000;
        let message: Record<string, unknown> = {};
        while (Date.now() < deadline) {
          message = await api(`/agents/${agent}/messages/${posted.id}`);
          if (message.status === "acknowledged") break;
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(message).toMatchObject({ status: "acknowledged", reply: "B did it", attempts: 2 });
        expect(b.fence()).toBeGreaterThan(held.held as number);
        a.proc.kill("SIGCONT");
        for (const req of ["reply", "ack"]) {
          expect(await a.waitFor((l) => l.req === req)).toMatchObject({ type: "error", code: "stale_token" });
        }
        expect(await a.waitFor((l) => l.req === "checkpoint")).toMatchObject({ type: "error", code: "stale_fence" });
        expect(await api(`/agents/${agent}/messages/${posted.id}`)).toMatchObject({ reply: "B did it", acked_fence: b.fence() });
        const presence = await api(`/agents/${agent}/presence`);
        expect(presence).toMatchObject({ fence: b.fence(), holder: { machine: "b" } });
      } finally {
        b.ws.close();
      }
    } finally {
      a.proc.kill("SIGCONT");
      a.proc.kill("SIGKILL");
    }
  });
});
