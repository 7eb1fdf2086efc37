// The client library's serve(), with `baton serve`'s command handler, against a small stand-in
// coordinator on a local socket: it demotes itself by its own clock when heartbeats stop being
// answered, even though the socket never closes (kills the run, posts nothing, claims anew).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { serve } from "../../client/node.ts";
import { commandHandler } from "../../cli/lib/serve-handler.ts";
import { StatusReporter } from "../../cli/lib/status-line.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Conn {
  ws: WebSocket;
  frames: Record<string, unknown>[];
}

async function standIn(onConnection: (conn: Conn, index: number) => void): Promise<{ url: string; conns: Conn[] }> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise((r) => wss.once("listening", r));
  const conns: Conn[] = [];
  wss.on("connection", (ws) => {
    const conn: Conn = { ws, frames: [] };
    conns.push(conn);
    ws.on("message", (data) => conn.frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
    onConnection(conn, conns.length - 1);
  });
  cleanups.push(() => new Promise((r) => { for (const c of wss.clients) c.terminate(); wss.close(() => r(undefined)); }));
  const addr = wss.address();
  return { url: `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`, conns };
}

function session(url: string, command: string, args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "baton-session-"));
  const out = new PassThrough();
  let log = "";
  const waiters: { re: RegExp; resolve: () => void }[] = [];
  out.on("data", (d: Buffer) => {
    log += d.toString();
    for (const w of waiters.splice(0)) (w.re.test(log) ? w.resolve() : waiters.push(w));
  });
  const reporter = new StatusReporter("serve", url, out);
  const handler = commandHandler({
    agent: "a", machine: "m", command, args, graceMs: 200, checkpointPath: join(dir, "checkpoint.json"), conn: { url, token: "t" }, log: (m) => reporter.log(m),
  });
  const s = serve("a", handler, {
    url, token: "t", machine: "m", onStatus: (st) => reporter.status(st), onEvent: (e) => reporter.event(e),
  });
  cleanups.push(() => s.stop());
  return {
    dir,
    log: () => log,
    waitFor: (re: RegExp, timeoutMs = 5000) =>
      new Promise<void>((resolve, reject) => {
        if (re.test(log)) return resolve();
        const timer = setTimeout(() => reject(new Error(`no ${re} within ${timeoutMs} ms; log:\n${log}`)), timeoutMs);
        waiters.push({ re, resolve: () => (clearTimeout(timer), resolve()) });
      }),
  };
}

describe("ServeSession", () => {
  it("when pongs stop, the holder demotes by its own clock: the run is killed, nothing is posted, it claims anew", async () => {
    let answerPings = true;
    const { url, conns } = await standIn((conn, index) => {
      conn.ws.send(JSON.stringify({ type: "welcome", agent: "a", heartbeat_ttl_ms: 600, limits: {} }));
      conn.ws.on("message", (data) => {
        const text = data.toString();
        if (text === '{"type":"ping"}' && answerPings) conn.ws.send('{"type":"pong"}');
        if (text.includes('"claim"')) {
          conn.ws.send(JSON.stringify({ type: "serve_lease", held: index === 0, fence: 1, claim_seq: index + 1, position: index === 0 ? 0 : 1, ttl_ms: 600, holder: null }));
          if (index === 0) {
            conn.ws.send(JSON.stringify({ type: "message", id: 1, text: "work", attempt: 1, created_at: 0, run: true }));
          }
        }
      });
    });
    const dir = mkdtempSync(join(tmpdir(), "baton-cmd-"));
    const marker = join(dir, "started");
    const s = session(url, "/bin/sh", ["-c", `touch ${marker}; sleep 2; echo done`]);
    await s.waitFor(/holder \(fence 1\)/);
    answerPings = false;
    const lapsedAt = performance.now();
    await s.waitFor(/lease lapsed on the local clock \(fence 1\)/);
    expect(performance.now() - lapsedAt).toBeLessThan(1000);
    await s.waitFor(/standby \(1st in line\)/);
    expect(conns).toHaveLength(2);
    // The same runner id on every claim of this process: a restarted coordinator can recognise it.
    const runnerId = (conns[0]!.frames[0] as { runner_id?: unknown }).runner_id;
    expect(runnerId).toMatch(/^[0-9a-f-]{36}$/);
    expect(conns[1]!.frames[0]).toEqual({ type: "serve_lease", op: "claim", runner_id: runnerId });
    // The run was cut short: no reply or checkpoint ever reached the coordinator.
    await new Promise((r) => setTimeout(r, 2200));
    for (const c of conns) expect(c.frames.filter((f) => f.type === "reply" || f.type === "message_checkpoint" || f.type === "agent_checkpoint")).toEqual([]);
    expect(s.log()).not.toMatch(/not confirmed|refused|command exited/);
  });

  it("runs each run:true message once, in order, and posts stdout as its reply under the message's token", async () => {
    const { url, conns } = await standIn((conn) => {
      // A TTL far above what two commands take on a loaded machine: this test is about order and replies, not expiry.
      conn.ws.send(JSON.stringify({ type: "welcome", agent: "a", heartbeat_ttl_ms: 30_000, limits: {} }));
      conn.ws.on("message", (data) => {
        const frame = JSON.parse(data.toString()) as Record<string, unknown>;
        if (frame.type === "ping") conn.ws.send('{"type":"pong"}');
        if (frame.type === "serve_lease") {
          conn.ws.send(JSON.stringify({ type: "serve_lease", held: true, fence: 4, claim_seq: 1, position: 0, ttl_ms: 30_000, holder: null, checkpoint: { n: 1 } }));
          for (const id of [1, 2, 2]) conn.ws.send(JSON.stringify({ type: "message", id, text: `m${id}`, attempt: 1, created_at: 0, run: true, token: 10 + id }));
          conn.ws.send(JSON.stringify({ type: "message", id: 3, text: "seen only", attempt: 1, created_at: 0, run: false }));
        }
        // Results as the coordinator shapes them (a result that does not match its schema is dropped).
        if (frame.type === "reply") {
          conn.ws.send(JSON.stringify({ type: "result", op: "reply", req: frame.req, id: frame.id, token: frame.token, fence: 4, key: frame.key, duplicate: false }));
        }
        if (frame.type === "message_checkpoint" || frame.type === "agent_checkpoint") conn.ws.send(JSON.stringify({ type: "result", op: "checkpoint", req: frame.req }));
        // The command's stdout streams as live output before its reply.
        if (frame.type === "output") conn.ws.send(JSON.stringify({ type: "result", op: "output", req: frame.req, id: frame.id, token: frame.token, offset: 0 }));
      });
    });
    const script = `read t; n=$(node -e "process.stdout.write(String(JSON.parse(require('fs').readFileSync(process.env.BATON_CHECKPOINT,'utf8')).n))"); echo "{\\"n\\":$((n+1))}" > "$BATON_CHECKPOINT"; echo "$t/$BATON_MESSAGE_ID/$BATON_FENCE/$n"`;
    const s = session(url, "/bin/sh", ["-c", script]);
    await s.waitFor(/ran message 2/, 30_000); // two commands that each start node
    const posted = conns[0]!.frames.map(({ req: _req, ...f }) => f);
    expect(posted.filter((f) => f.type === "reply")).toEqual([
      { type: "reply", id: 1, token: 11, key: "1:reply", text: "m1/1/4/1\n" },
      { type: "reply", id: 2, token: 12, key: "2:reply", text: "m2/2/4/2\n" },
    ]);
    // Each message's checkpoint is its own (under its token); the holder also keeps the agent's.
    expect(posted).toContainEqual({ type: "message_checkpoint", id: 1, token: 11, value: { n: 2 } });
    expect(posted).toContainEqual({ type: "message_checkpoint", id: 2, token: 12, value: { n: 3 } });
    expect(posted).toContainEqual({ type: "agent_checkpoint", fence: 4, value: { n: 3 } });
    expect(s.log()).not.toMatch(/ran message 3/);
  });
});
