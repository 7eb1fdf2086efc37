// A handler that records 100 quick durable steps in a row: the client paces its requests within the
// coordinator's frame rate (50 frames a second per connection), so none is refused rate_limited and
// the run finishes, instead of a step waiting 10 s for an answer that never comes.
import { afterEach, describe, expect, it } from "vitest";
import { send, serve, type ServeEvent, type ServeHandle } from "../../client/node.ts";
import { sharedServeFixture, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

const fx = sharedServeFixture();
const handles: ServeHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
});

describe("a burst of steps", () => {
  it("100 quick steps in one run are paced, never refused rate_limited, and the message is acknowledged", async () => {
    const agent = uniqueAgent("burst");
    const events: ServeEvent[] = [];
    handles.push(serve(agent, async (_m, ctx) => {
      for (let i = 0; i < 100; i++) await ctx.step(`s${i}`, () => i);
      return "done";
    }, { url: fx.dev.url, token: DEV_TOKEN, machine: "m", onEvent: (e) => events.push(e) }));
    const posted = await send(agent, "go", { url: fx.dev.url, token: DEV_TOKEN });
    const done = await waitForMessage(fx.dev.url, agent, posted.id, (m) => m.status === "acknowledged", 30_000);
    expect(done.reply).toBe("done");
    expect(events.filter((e) => e.type === "coordinator_error" || e.type === "unconfirmed" || e.type === "refused")).toEqual([]);
  });
});
