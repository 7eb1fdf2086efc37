// The lease-data rules in plain Node: who may write under a session lease, and what one list page holds.
import { describe, expect, it } from "vitest";
import { checkDataBudget, checkDataWrite, pageSize, prefixRange, type DataUsage } from "../../worker/rules/lease-data.ts";
import { EMPTY_SESSION_LEASE, type SessionLeaseState } from "../../worker/rules/session-lease.ts";

const A = "00000000-0000-4000-8000-00000000000a";
const B = "00000000-0000-4000-8000-00000000000b";
const held = (runId: string, fence: number, expiresAt: number): SessionLeaseState =>
  ({ lastFence: fence, lease: { runId, fence, grantedAt: 0, expiresAt, ttlSeconds: 10 } });

describe("checkDataWrite", () => {
  const cases: [string, SessionLeaseState, string, number, number, string][] = [
    ["the holder with its fence before expiry writes", held(A, 3, 10_000), A, 3, 9_999, "ok"],
    ["the holder at the expiry instant is refused: the lease is gone", held(A, 3, 10_000), A, 3, 10_000, "lease_expired"],
    ["a former holder after a new grant gets stale_fence", held(B, 4, 20_000), A, 3, 12_000, "stale_fence"],
    ["a former holder is told stale_fence even after the new lease ended", { lastFence: 4, lease: null }, A, 3, 50_000, "stale_fence"],
    ["a run that guesses the live fence is not the holder", held(A, 3, 10_000), B, 3, 5_000, "not_holder"],
    ["a released lease refuses its own run", { lastFence: 3, lease: null }, A, 3, 5_000, "lease_expired"],
    ["a key never granted refuses every fence", EMPTY_SESSION_LEASE, A, 1, 0, "stale_fence"],
    ["a fence from the future is stale too", held(A, 3, 10_000), A, 4, 5_000, "stale_fence"],
  ];
  it.each(cases)("%s", (_name, state, runId, fence, now, expected) => {
    const verdict = checkDataWrite(state, runId, fence, now);
    expect(verdict.ok ? "ok" : verdict.code).toBe(expected);
  });
});

describe("pageSize", () => {
  const row = (bytes: number, inline = true) => ({ key: "k", bytes, inline });
  const cases: [string, ReturnType<typeof row>[], number, number, { take: number; more: boolean }][] = [
    ["an empty listing is one empty page", [], 10, 100, { take: 0, more: false }],
    ["stops at the entry limit and says more", [row(1), row(1), row(1)], 2, 100, { take: 2, more: true }],
    ["stops before the inline bytes would pass the budget", [row(60), row(60), row(1)], 10, 100, { take: 1, more: true }],
    ["always takes one row, even one over the budget", [row(500), row(1)], 10, 100, { take: 1, more: true }],
    ["R2 values cost nothing in the page", [row(500, false), row(500, false), row(90)], 10, 100, { take: 3, more: false }],
  ];
  it.each(cases)("%s", (_name, rows, maxEntries, maxBytes, expected) => {
    expect(pageSize(rows, maxEntries, maxBytes)).toEqual(expected);
  });
});

describe("prefixRange", () => {
  it("holds exactly the printable keys that start with the prefix", () => {
    const { from, to } = prefixRange("cp/a");
    const inside = (k: string) => k >= from && k < to;
    expect(["cp/a", "cp/a/1", "cp/a~~~"].every(inside)).toBe(true);
    expect(["cp/", "cp/b", "cp/`"].some(inside)).toBe(false);
  });
});

describe("checkDataBudget", () => {
  const budget = { keys: 3, bytes: 100 };
  const cases: [string, DataUsage, number | null, number, DataUsage | string][] = [
    ["a new key within both budgets is counted", { keys: 1, bytes: 10 }, null, 20, { keys: 2, bytes: 30 }],
    ["replacing a key counts only the difference", { keys: 3, bytes: 90 }, 50, 60, { keys: 3, bytes: 100 }],
    ["a new key past the key budget is refused", { keys: 3, bytes: 10 }, null, 1, "at most 3 keys"],
    ["a value past the byte budget is refused", { keys: 1, bytes: 90 }, null, 11, "at most 100 bytes"],
    ["a replacement that grows past the bytes is refused", { keys: 2, bytes: 90 }, 10, 21, "at most 100 bytes"],
    ["a session already over its budget may still shrink", { keys: 5, bytes: 500 }, 100, 1, { keys: 5, bytes: 401 }],
  ];
  it.each(cases)("%s", (_name, usage, oldBytes, newBytes, expected) => {
    const verdict = checkDataBudget(usage, oldBytes, newBytes, budget);
    if (typeof expected === "string") expect(verdict).toMatchObject({ ok: false, code: "too_large", message: expect.stringContaining(expected) });
    else expect(verdict).toEqual({ ok: true, usage: expected });
  });
});
