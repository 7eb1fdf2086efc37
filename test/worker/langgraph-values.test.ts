// What the LangGraph saver reads for a channel's value, in the real runtime (the client's
// BatonSaver over SELF.fetch): a version no value was written for has no value, as LangGraph's own
// savers read it (InMemorySaver skips a missing blob, the Postgres saver joins only stored ones,
// and the conformance suite stores only newVersions); a value that was stored and is lost (its R2
// object gone) is an error, never an empty channel a graph would resume from.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BatonSaver, threadSession } from "../../client/langgraph.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { BASE, DEV_TOKEN } from "./helpers.ts";

const meta = { source: "loop" as const, step: 1, parents: {} };

async function saverFor(thread: string) {
  const session = await threadSession(thread);
  const run_id = crypto.randomUUID();
  const res = await SELF.fetch(`${BASE}/leases/${session}/acquire`, {
    method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ run_id, ttl_seconds: 60 }),
  });
  const { fence } = (await res.json()) as { fence: number };
  const fetch = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input, init)) as typeof globalThis.fetch;
  return { session, saver: new BatonSaver({ url: BASE, token: DEV_TOKEN, fetch, lease: { session, runId: run_id, fence } }) };
}

function checkpoint(values: Record<string, unknown>, versions: Record<string, number>) {
  return { v: 4, id: "1f000000-0000-6000-8000-000000000002", ts: new Date().toISOString(), channel_values: values, channel_versions: versions, versions_seen: {} };
}

describe("a LangGraph channel's value as the saver reads it", () => {
  it("a channel whose version was never given a value has none (absent, as LangGraph's savers read it); a written one comes back", async () => {
    const thread = `t-${crypto.randomUUID()}`;
    const { saver } = await saverFor(thread);
    const config = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, checkpoint({ kept: "yes", unsent: "no" }, { kept: 1, unsent: 1 }), meta, { kept: 1 });
    const tuple = await saver.getTuple(config);
    expect(tuple!.checkpoint.channel_values).toEqual({ kept: "yes" });
  });

  it("a value that was stored and is lost (its R2 object gone) makes reading the checkpoint fail, not come back without it", async () => {
    const thread = `t-${crypto.randomUUID()}`;
    const { session, saver } = await saverFor(thread);
    const big = "x".repeat(LIMITS.leaseDataInlineBytes + 100);
    const config = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, checkpoint({ notes: big }, { notes: 1 }), meta, { notes: 1 });
    expect((await saver.getTuple(config))!.checkpoint.channel_values).toEqual({ notes: big });
    const objects = (await env.BLOBS!.list({ prefix: `lease-data/dev/${session}/` })).objects;
    expect(objects).toHaveLength(1);
    await env.BLOBS!.delete(objects[0]!.key);
    await expect(saver.getTuple(config)).rejects.toThrow(/its object cannot be read/);
  });
});
