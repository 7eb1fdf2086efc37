// send() in baton-client refuses a text over the wire's limit before anything leaves the process.
import { describe, expect, it } from "vitest";
import { send } from "../../client/send.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";

describe("send", () => {
  it("refuses a text over LIMITS.messageTextBytes without a request, and sends one at the limit", async () => {
    const sent: string[] = [];
    const conn = {
      url: "http://coordinator.test", token: "t",
      request: async (url: string, init: { body?: string }) => {
        sent.push(init.body ?? "");
        return { status: 201, text: JSON.stringify({ error: "not_found", message: "canned" }) };
      },
    };
    await expect(send("a", "é".repeat(LIMITS.messageTextBytes / 2 + 1), conn)).rejects.toThrow(RangeError);
    expect(sent).toEqual([]);
    await send("a", "x".repeat(LIMITS.messageTextBytes), conn).catch(() => {});
    expect(sent).toHaveLength(1);
  });
});
