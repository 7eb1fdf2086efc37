// An oversized request body refused early (413) under `wrangler dev` must leave the next request,
// from another connection, answered: the refusal cancels the body instead of abandoning it.
import { request as httpRequest } from "node:http";
import { describe, expect, it } from "vitest";
import { DEV_TOKEN } from "./wrangler-dev.ts";
import { sharedServeFixture } from "./serve-helpers.ts";

const fx = sharedServeFixture();


/** Sends `body` on its own connection (no keep-alive) and resolves with the status, or null after `timeoutMs`. */
function post(path: string, body: Buffer, chunked: boolean, timeoutMs = 5000): Promise<number | null> {
  return new Promise((resolve) => {
    const url = new URL(path, fx.dev.url);
    const headers: Record<string, string> = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json", connection: "close" };
    if (!chunked) headers["content-length"] = String(body.byteLength);
    const req = httpRequest(url, { method: "POST", headers, agent: false }, (res) => {
      res.resume();
      clearTimeout(timer);
      resolve(res.statusCode ?? 0);
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve(null);
    }, timeoutMs);
    req.on("error", () => {
      clearTimeout(timer);
      resolve(null);
    });
    if (chunked) {
      for (let i = 0; i < body.byteLength; i += 16 * 1024) req.write(body.subarray(i, i + 16 * 1024));
      req.end();
    } else {
      req.end(body);
    }
  });
}

const oversized = Buffer.from(JSON.stringify({ text: "x".repeat(512 * 1024) }));
const small = Buffer.from(JSON.stringify({ text: "after the refusal" }));

describe("an early 413 does not poison the next request", () => {
  for (const chunked of [false, true]) {
    it(`three oversized ${chunked ? "chunked" : "Content-Length"} posts are refused with 413 and each next post is answered 201`, async () => {
      const agent = `big-${chunked ? "chunked" : "sized"}-${Date.now()}`;
      for (let round = 0; round < 3; round++) {
        expect(await post(`/agents/${agent}/messages`, oversized, chunked)).toBe(413);
        expect(await post(`/agents/${agent}/messages`, small, false)).toBe(201);
      }
    });
  }

  it("an oversized post refused before authentication (401) leaves the next request answered", async () => {
    const res = await new Promise<number | null>((resolve) => {
      const req = httpRequest(new URL("/agents/x/messages", fx.dev.url), {
        method: "POST", agent: false, headers: { "content-length": String(oversized.byteLength), connection: "close" },
      }, (r) => { r.resume(); resolve(r.statusCode ?? 0); });
      req.on("error", () => resolve(null));
      req.end(oversized);
    });
    expect(res).toBe(401);
    expect(await post(`/agents/after-401-${Date.now()}/messages`, small, false)).toBe(201);
  });
});
