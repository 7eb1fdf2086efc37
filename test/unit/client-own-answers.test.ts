// A connection whose answers are the Worker's own (the remote MCP endpoint's calls through its
// pipeline) sets no timeout timer per call: nothing in the Worker reads a request's signal. Any
// other connection still gives each call its timeout.
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { requestJson, type Connection } from "../../client/http.ts";

function recording(ownAnswers: boolean): { conn: Connection; signals: (AbortSignal | null | undefined)[] } {
  const signals: (AbortSignal | null | undefined)[] = [];
  const conn: Connection = {
    url: "http://coordinator.test", token: "t", ownAnswers,
    fetch: async (_input, init) => {
      signals.push(init?.signal);
      return Response.json({ ok: true });
    },
  };
  return { conn, signals };
}

describe("requestJson's timeout signal", () => {
  it("is absent on an own-answers connection and present on any other", async () => {
    const own = recording(true);
    expect(await requestJson(own.conn, "GET", "/x", z.object({ ok: z.boolean() }))).toEqual({ ok: true });
    expect(own.signals).toEqual([undefined]);
    const other = recording(false);
    await requestJson(other.conn, "GET", "/x", z.object({ ok: z.boolean() }), { timeoutMs: 5_000 });
    expect(other.signals[0]).toBeInstanceOf(AbortSignal);
    expect(other.signals[0]?.aborted).toBe(false);
  });
});
