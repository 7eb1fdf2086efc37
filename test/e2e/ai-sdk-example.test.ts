// examples/ai-sdk-stream.mjs against a real `wrangler dev`: the Vercel AI SDK's streamText (its
// test model streaming scripted tokens, no network) piped into ctx.output. A reader of GET
// …/messages/{id}/output gets the tokens while the message still runs, in order, in several
// chunks (streamed, not one block at the end), and the reply is the whole text.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { OutputPage } from "../../worker/wire/output.ts";
import { getJson, sharedServeFixture, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

const fx = sharedServeFixture();
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGTERM");
});

const STORY = "Once upon a time, a lighthouse kept its light on.\n";

describe("examples/ai-sdk-stream.mjs", () => {
  it("streams the model's tokens to the output route while the message runs, in order, and replies with the whole text", async () => {
    const agent = uniqueAgent("story");
    const child = spawn(process.execPath, [join(ROOT, "examples/ai-sdk-stream.mjs"), agent], {
      cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN, BATON_MACHINE: "story-box", TOKEN_DELAY_MS: "150" }, stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    let stderr = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the example never held the agent: ${stderr}`)), 30_000);
      child.stderr!.on("data", (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes(": holder")) {
          clearTimeout(timer);
          resolve();
        }
      });
    });

    const res = await fetch(`${fx.dev.url}/agents/${agent}/messages`, {
      method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "a story" }),
    });
    const id = ((await res.json()) as { id: number }).id;

    let cursor = 0;
    let text = "";
    let chunks = 0;
    let readWhileRunning = "";
    for (let final = false; !final;) {
      const page = await getJson<OutputPage>(`${fx.dev.url}/agents/${agent}/messages/${id}/output?format=json&from=${cursor}&wait=10`);
      for (const e of page.events) {
        if (e.type !== "chunk") continue;
        expect(e).toMatchObject({ stream: "text", machine: "story-box", attempt: 1 });
        text += e.text ?? "";
        chunks++;
        if (page.status === "running") readWhileRunning = text;
      }
      cursor = page.cursor;
      final = page.final && !page.more;
    }
    expect(text).toBe(STORY);
    expect(chunks).toBeGreaterThanOrEqual(3);
    expect(readWhileRunning.length).toBeGreaterThan(0);
    expect(STORY.startsWith(readWhileRunning)).toBe(true);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged");
    expect(done.reply).toBe(STORY);
  });
});
