#!/usr/bin/env node
// An agent that streams an LLM's tokens to the message's live output as the model produces them:
// the Vercel AI SDK's streamText, its text stream piped into ctx.output. Anyone follows the run
// while it works (`baton logs AGENT ID --follow`, `baton send AGENT TEXT --wait`, the dashboard,
// GET /agents/AGENT/messages/ID/output); the reply is the whole text, as before.
//
//   BATON_URL=http://127.0.0.1:8787 node examples/ai-sdk-stream.mjs [AGENT]
//   npx baton send storyteller "a story about a lighthouse" --wait
//
// The model is the SDK's own test model, streaming scripted tokens with a delay between them (no
// network, no key). With a real one, pass e.g. `model: openai("gpt-5")` from @ai-sdk/openai and
// set its key; nothing else changes.
import { hostname } from "node:os";
import { simulateReadableStream, streamText } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { serve } from "baton-client";

const agent = process.argv[2] ?? "storyteller";
const machine = process.env.BATON_MACHINE ?? hostname();
const TOKENS = ["Once ", "upon ", "a ", "time, ", "a ", "lighthouse ", "kept ", "its ", "light ", "on.\n"];
const TOKEN_DELAY_MS = Number(process.env.TOKEN_DELAY_MS ?? 100);

/** A scripted stand-in for a model that streams its answer a token at a time. */
function scriptedModel() {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunkDelayInMs: TOKEN_DELAY_MS,
        chunks: [
          { type: "stream-start", warnings: [] },
          { type: "text-start", id: "answer" },
          ...TOKENS.map((delta) => ({ type: "text-delta", id: "answer", delta })),
          { type: "text-end", id: "answer" },
          {
            type: "finish",
            finishReason: { unified: "stop", raw: "stop" },
            usage: {
              inputTokens: { total: 8, noCache: 8, cacheRead: undefined, cacheWrite: undefined },
              outputTokens: { total: TOKENS.length, text: TOKENS.length, reasoning: undefined },
            },
          },
        ],
      }),
    }),
  });
}

const handle = serve(agent, async (message, ctx) => {
  const result = streamText({ model: scriptedModel(), prompt: message.text, abortSignal: ctx.signal });
  let text = "";
  for await (const delta of result.textStream) {
    text += delta;
    await ctx.output(delta); // batched on the wire, fenced by the run's token; holds back only past ~1 MiB
  }
  return text;
}, {
  url: process.env.BATON_URL ?? "http://127.0.0.1:8787",
  token: process.env.BATON_TOKEN ?? "baton-dev-token",
  machine,
  onStatus: (status) => console.error(`${agent}: ${status.kind}`),
});

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => void handle.stop().then(() => process.exit(0)));
