#!/usr/bin/env node
// A baton agent written as a Node program with the client library. Start it on every machine
// that may run the agent; exactly one of them handles each message, the others stand by.
//
//   node examples/node-agent.mjs reviewer          (BATON_URL and BATON_TOKEN as for the CLI)
//   npx baton send reviewer "hello" --wait
//
// The handler gets an AbortSignal that fires the moment this machine may no longer act (its
// lease lapsed or went to another machine), the fence to attach to its own writes, and the
// checkpoint the previous holder saved.
import { hostname } from "node:os";
import { serve } from "baton-client";

const agent = process.argv[2] ?? "reviewer";
const machine = process.env.BATON_MACHINE ?? hostname();

const handle = serve(agent, async (message, { signal, fence, checkpoint, saveCheckpoint }) => {
  const handled = (checkpoint?.handled ?? 0) + 1;
  await thinkAbout(message.text, signal); // real work: pass the signal to fetch, child processes, ...
  await saveCheckpoint({ handled });
  return `${agent} on ${machine} (fence ${fence}), message ${handled}: ${message.text.toUpperCase()}\n`;
}, {
  url: process.env.BATON_URL ?? "http://127.0.0.1:8787",
  token: process.env.BATON_TOKEN ?? "baton-dev-token",
  machine,
  onStatus: (status) => console.error(`${agent}: ${status.kind}${"fence" in status ? ` (fence ${status.fence})` : ""}`),
});

function thinkAbout(_text, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 100);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

// Stopping releases the lease, so a standby takes over at once instead of after the TTL.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => void handle.stop());
await handle.done;
