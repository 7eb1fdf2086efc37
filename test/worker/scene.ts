// The scene the hostile-input tests attack, and what of it must not move.
import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { BASE, claimant, connect, DEV_TOKEN, presence } from "./helpers.ts";
import { frozenAgent } from "./clock.ts";

const auth = { Authorization: `Bearer ${DEV_TOKEN}` };

/** What must not move: presence without the parts that change on their own, and the stored messages. */
export async function snapshot(agent: string) {
  const p = (await presence(agent)) as Awaited<ReturnType<typeof presence>> & { wakes?: number };
  const { wakes: _wakes, connections, ...rest } = p;
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, { headers: auth });
  const { messages } = (await res.json()) as { messages: unknown[] };
  return { ...rest, connections: connections.map(({ heartbeat_age_seconds: _age, ...c }) => c), messages };
}

/** A holder, a standby and an idle connection (connected, never claimed), with one message stored. */
export async function scene() {
  // Its clock stands still: no lease in the scene goes stale on a busy machine while it is attacked.
  const agent = await frozenAgent();
  const holder = await claimant(agent, "holder");
  const standby = await claimant(agent, "standby");
  const idle = await connect(agent, { machine: "idle" });
  const posted = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
    method: "POST",
    headers: { ...auth, "Content-Type": "application/json" },
    body: JSON.stringify({ text: "work" }),
  });
  expect(posted.status).toBe(201);
  await holder.sock.next("message");
  await standby.sock.next("message");
  return { agent, holder: holder.sock, standby: standby.sock, idle };
}
