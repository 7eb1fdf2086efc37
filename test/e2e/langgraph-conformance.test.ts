// LangGraph's own checkpointer conformance suite (@langchain/langgraph-checkpoint-validation's
// validate(): put, putWrites, getTuple, list, deleteThread) against BatonSaver and a real
// wrangler dev. The suite calls vitest's globals, so they are set before it loads. Each
// checkpointer gets its own namespace, so threads of different cases never meet, and holds one
// lease per thread it writes. Skipped: list() across all threads (no thread_id), which BatonSaver
// does not offer: every thread is its own lease, in its own shard.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { BatonSaver, threadSession, type ThreadLease } from "../../client/langgraph.ts";
import { requestJson } from "../../client/http.ts";
import { leaseGrantSchema } from "../../worker/wire/http-responses.ts";
import { sharedServeFixture } from "./serve-helpers.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

const fx = sharedServeFixture();

const ACROSS_THREADS = /thread_id is not specified|no config or options are specified/;

type Row = Record<string, unknown>;
const each = (rows: readonly Row[]) => (template: string, fn: (row: Row) => Promise<void>, timeout?: number) => {
  for (const row of rows) {
    const name = template.replace(/\$(\w+)/g, (_, k: string) => String(row[k]));
    if (ACROSS_THREADS.test(name)) it.skip(`[BatonSaver lists one thread at a time] ${name}`, () => fn(row), timeout);
    else it(name, () => fn(row), timeout);
  }
};
Object.assign(globalThis, { describe, expect, beforeAll, afterAll, beforeEach, afterEach, it: Object.assign(it.bind(null), it, { each }) });
const { validate } = await import("@langchain/langgraph-checkpoint-validation");

const conn = () => ({ url: fx.dev.url, token: DEV_TOKEN });

/** One long lease per thread, acquired on the saver's first write to it. */
function leases(namespace: string): (threadId: string) => Promise<ThreadLease> {
  const held = new Map<string, Promise<ThreadLease>>();
  return (threadId) => {
    let lease = held.get(threadId);
    if (!lease) {
      lease = threadSession(threadId, namespace).then(async (session) => {
        const grant = await requestJson(conn(), "POST", `/leases/${session}/acquire`, leaseGrantSchema, {
          body: { run_id: crypto.randomUUID(), ttl_seconds: 3600 },
        });
        return { session, runId: grant.run_id, fence: grant.fence };
      });
      held.set(threadId, lease);
    }
    return lease;
  };
}

validate<BatonSaver>({
  checkpointerName: "BatonSaver",
  createCheckpointer() {
    const namespace = `lg-${crypto.randomUUID().slice(0, 8)}`;
    return new BatonSaver({ ...conn(), namespace, leaseFor: leases(namespace) });
  },
});
