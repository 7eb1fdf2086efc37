#!/usr/bin/env node
// The recoverable-execution demo, on the raw wire so every token is visible:
//   runner A claims a message and checkpoints step 2, then stalls (its connection stays alive);
//   the message's run timeout passes on the coordinator's clock, and runner B gets it with a
//   larger lease token and A's checkpoint; A wakes and replies with its old token: refused
//   (stale_token); B finishes from step 2 and its reply is the one stored.
//
//   BATON_URL=http://127.0.0.1:8787 BATON_TOKEN=baton-dev-token node examples/stalled-runner.mjs [AGENT]
//
// Prints one line per step; with --json, one JSON object per step (the e2e test reads those).
import WebSocket from "ws";

const url = process.env.BATON_URL ?? "http://127.0.0.1:8787";
const token = process.env.BATON_TOKEN ?? "baton-dev-token";
const agent = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? `demo-${Math.random().toString(36).slice(2, 8)}`;
const json = process.argv.includes("--json");
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

function step(name, facts, sentence) {
  process.stdout.write(json ? `${JSON.stringify({ step: name, ...facts })}\n` : `${sentence}\n`);
}

async function http(method, path, body) {
  const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

/** A serve connection that heartbeats like `baton serve` and lets the demo wait for frames. */
async function runner(machine) {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/agents/${agent}/serve?machine=${machine}`, { headers: { authorization: `Bearer ${token}` } });
  const frames = [];
  const waiters = new Set();
  ws.on("message", (data) => {
    frames.push(JSON.parse(String(data)));
    for (const w of [...waiters]) w();
  });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const heartbeat = setInterval(() => ws.send('{"type":"ping"}'), 300);
  let req = 0;
  const next = (match, timeoutMs = 20_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const i = frames.findIndex(match);
        if (i === -1) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(frames.splice(i, 1)[0]);
      };
      const timer = setTimeout(() => (waiters.delete(check), reject(new Error(`${machine}: no matching frame; saw ${JSON.stringify(frames)}`))), timeoutMs);
      waiters.add(check);
      check();
    });
  const request = (frame) => {
    const id = `${machine}-${++req}`;
    ws.send(JSON.stringify({ ...frame, req: id }));
    return next((f) => (f.type === "result" || f.type === "error") && f.req === id);
  };
  ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
  await next((f) => f.type === "serve_lease");
  return { next, request, close: () => (clearInterval(heartbeat), ws.close()) };
}

await http("PUT", `/agents/${agent}/policy`, { mode: "pool" });
// Both runners serve before the message exists; the older claim (A) gets it first.
const a = await runner("runner-a");
const b = await runner("runner-b");
const posted = await http("POST", `/agents/${agent}/messages`, { text: "summarise the quarterly report", run_timeout_seconds: 2 });
const id = posted.id;

const first = await a.next((f) => f.type === "message" && f.run && f.id === id);
step("a_claimed", { id, token: first.token, attempt: first.attempt },
  `A claimed message ${id}: lease token ${first.token}, attempt ${first.attempt}, run timeout ${first.run_timeout_ms} ms`);
await a.request({ type: "checkpoint", id, token: first.token, value: { step: 2, done: ["fetch", "parse"] } });
step("a_checkpointed", { token: first.token, checkpoint: { step: 2 } }, "A checkpointed step 2 under its token, then stalls (its connection stays alive)");

const second = await b.next((f) => f.type === "message" && f.run && f.id === id);
step("b_took_over", { token: second.token, attempt: second.attempt, checkpoint: second.checkpoint },
  `the run timeout passed on the coordinator's clock: B got message ${id} with token ${second.token} > ${first.token}, attempt ${second.attempt}, checkpoint ${JSON.stringify(second.checkpoint)}`);
const revoked = await a.next((f) => f.type === "revoked");
step("a_revoked", { reason: revoked.reason, token: revoked.token }, `A was told its lease on message ${id} is gone (${revoked.reason})`);

const late = await a.request({ type: "reply", id, token: first.token, key: `${id}:reply`, text: "A's late, stale summary" });
step("a_refused", { code: late.code }, `A woke and replied with token ${first.token}: ${late.type === "error" ? `refused, ${late.code}` : "ACCEPTED (this must not happen)"}`);

const done = await b.request({ type: "reply", id, token: second.token, key: `${id}:reply`, text: `summary finished from step ${second.checkpoint.step}` });
const stored = await http("GET", `/agents/${agent}/messages/${id}`);
step("b_completed", { accepted: done.type === "result", status: stored.status, reply: stored.reply, acked_token: stored.acked_token },
  `B completed from A's checkpoint: message ${id} is ${stored.status} with reply "${stored.reply}" under token ${stored.acked_token}`);

a.close();
b.close();
