// Probes of the live output's bounds (review of the output merge): what a reader or a runner can
// make the agent's object do past its budgets.
import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import type { OutputPage } from "../../worker/wire/output.ts";
import type { AgentCoordinator } from "../../worker/objects/agent-object.ts";
import { auth, BASE, claimant, post, stubFor, write } from "./helpers.ts";
import { frozenAgent } from "./clock.ts";

const MAX_WAITERS = 1000;

describe("live output bounds", () => {
  it("past the object's waiter cap, an SSE reader does not spin the object with empty follow calls", async () => {
    const agent = await frozenAgent(); // no expiry here: a busy workerd must not let the holder lapse
    const { sock } = await claimant(agent, "m");
    const id = await post(agent, "work");
    const m = await sock.next("message", (f: MessageFrame) => f.run && f.id === id);
    const first = (await (await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output?format=json`, { headers: auth })).json()) as OutputPage;
    // The cap's worth of long polls wait in the object (any read token could hold them).
    await runInDurableObject(stubFor(agent), (o: AgentCoordinator) => {
      for (let i = 0; i < MAX_WAITERS; i++) void o.followOutput(id, first.cursor, 25_000);
    });
    const res = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output?from=${first.cursor}`, { headers: { ...auth, accept: "text/event-stream" } });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const until = Date.now() + 500;
    while (Date.now() < until) {
      const got = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), until - Date.now()))]);
      if (got === null || got.done) break;
      text += got.value;
    }
    await reader.cancel();
    // Wake the waiters so the test leaves nothing behind.
    await write(sock, { type: "output", id, token: m.token, chunks: [{ stream: "stdout", text: "x" }] });
    const idle = text.split(": waiting").length - 1;
    // A follow that could not wait should pause before the next: a handful of empty pages in half a second, not hundreds.
    expect(idle).toBeLessThanOrEqual(3);
  });

  it("an empty chunk is refused: it would store a row the byte budget does not count", async () => {
    const agent = await frozenAgent(); // no expiry here: a busy workerd must not let the holder lapse
    const { sock } = await claimant(agent, "m");
    const id = await post(agent, "work");
    const m = await sock.next("message", (f: MessageFrame) => f.run && f.id === id);
    const chunks = Array.from({ length: 64 }, () => ({ stream: "stdout", text: "" }));
    const answer = await write(sock, { type: "output", id, token: m.token, chunks });
    expect(answer).toMatchObject({ type: "error" });
    const page = (await (await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output?format=json`, { headers: auth })).json()) as OutputPage;
    expect(page.events.filter((e) => e.type === "chunk")).toHaveLength(0);
  });
});
