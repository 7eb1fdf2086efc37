// The permit rule as a table (rules/permits.ts), and what a permit is bound to (wire/approvals.ts):
// canonical JSON and a SHA-256 that agree with Node's own.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decidePermit, permitGranted, type Permit } from "../../worker/rules/permits.ts";
import { argsDigest, canonicalJson, sha256Hex } from "../../worker/wire/approvals.ts";

const ask = (amount: number) => {
  const args = canonicalJson({ card: "4242", amount });
  return { question: `Charge $${amount}?`, choices: null, onDeadline: null, args, digest: argsDigest(args), quorum: {} };
};
const by = { account: "acme", token: "ana", via: "page" };
const granted = (amount: number, over: Partial<Permit> = {}): Permit => ({
  effect: "charge", digest: ask(amount).digest, args: ask(amount).args, askedToken: 3, grantedAt: 100, by, spentToken: null, spentAt: null, ...over,
});

describe("decidePermit", () => {
  const rows: [string, Permit | null, number, number, string][] = [
    ["an unspent permit for the same arguments, from a later attempt: spent", granted(500), 500, 4, "spend"],
    ["no permit: ask", null, 500, 4, "ask:none"],
    ["a permit for other arguments ($500 approved, $5,000 asked): ask again", granted(500), 5000, 4, "ask:other_args"],
    ["a spent permit: ask again", granted(500, { spentToken: 4, spentAt: 150 }), 500, 5, "ask:spent"],
    ["the attempt that asked (its own token): ask again", granted(500), 500, 3, "ask:same_attempt"],
  ];
  for (const [name, permit, amount, token, expected] of rows) {
    it(name, () => {
      const d = decidePermit(permit, "charge", ask(amount), token, 200);
      expect(d.action === "spend" ? "spend" : `ask:${d.reason}`).toBe(expected);
      if (d.action === "ask") {
        expect(d.question).toMatchObject({ text: `Charge $${amount}?`, step: "ask:approve:charge", token, asked_at: 200, approve: { effect: "charge", args: ask(amount).args, digest: ask(amount).digest } });
      } else expect(d).toEqual({ action: "spend", effect: "charge", token, at: 200 });
    });
  }
});

describe("permitGranted", () => {
  const question = { token: 3, approve: { effect: "charge", args: ask(500).args, digest: ask(500).digest } };
  it("approve of an effect's question grants a permit bound to its effect, digest and the asking token", () => {
    expect(permitGranted(question, "approve", by, 100)).toEqual(granted(500));
  });
  it("another choice, or a question asked for no effect, grants none", () => {
    expect(permitGranted(question, "deny", by, 100)).toBeNull();
    expect(permitGranted({ token: 3, approve: null }, "approve", by, 100)).toBeNull();
    expect(permitGranted(null, "approve", by, 100)).toBeNull();
  });
});

describe("canonical JSON and its digest", () => {
  it("sorts keys at every depth, drops undefined members, writes no whitespace", () => {
    expect(canonicalJson({ b: [1, { z: 1, a: undefined, y: "é" }], a: null })).toBe('{"a":null,"b":[1,{"y":"é","z":1}]}');
  });
  it("refuses what JSON cannot say", () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson(() => 1)).toThrow(TypeError);
  });
  it("SHA-256 agrees with node:crypto across block boundaries", () => {
    for (const n of [0, 1, 55, 56, 63, 64, 65, 127, 128, 4096, 10_001]) {
      const bytes = new Uint8Array(n).map((_, i) => (i * 31 + 7) & 255);
      expect(sha256Hex(bytes)).toBe(createHash("sha256").update(bytes).digest("hex"));
    }
  });
});
