// The pure session-lease rules in plain Node, with time passed in.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT, leaseShardCount, MAX_LEASE_SHARDS } from "../../worker/config.ts";
import {
  acquire, EMPTY_SESSION_LEASE, fenceToken, forgottenKey, isCurrent, isLive, release, renew, shardOf, type SessionLeaseState,
} from "../../worker/rules/session-lease.ts";

const A = "00000000-0000-4000-8000-00000000000a";
const B = "00000000-0000-4000-8000-00000000000b";

function granted(state: SessionLeaseState, runId: string, ttl: number, now: number): SessionLeaseState {
  const result = acquire(state, runId, ttl, now);
  if (result.kind === "held") throw new Error("expected a grant");
  return result.state;
}

describe("session lease rules", () => {
  it("grants a free key with fence 1 and the TTL from now", () => {
    const result = acquire(EMPTY_SESSION_LEASE, A, 30, 1000);
    expect(result).toMatchObject({ kind: "granted", lease: { runId: A, fence: 1, grantedAt: 1000, expiresAt: 31_000, ttlSeconds: 30 } });
  });

  it("refuses another run while the lease is live and tells only the expiry", () => {
    const s = granted(EMPTY_SESSION_LEASE, A, 30, 0);
    expect(acquire(s, B, 30, 29_999)).toEqual({ kind: "held", expiresAt: 30_000 });
  });

  it("the lease is gone at its expiry instant, and the next grant takes the next fence", () => {
    const s = granted(EMPTY_SESSION_LEASE, A, 1, 0);
    expect(isLive(s.lease, 999)).toBe(true);
    expect(isLive(s.lease, 1000)).toBe(false);
    expect(acquire(s, B, 1, 1000)).toMatchObject({ kind: "granted", lease: { runId: B, fence: 2 } });
  });

  it("re-acquiring a live lease renews it under the same fence", () => {
    const s = granted(EMPTY_SESSION_LEASE, A, 10, 0);
    expect(acquire(s, A, 20, 5000)).toMatchObject({ kind: "renewed", lease: { fence: 1, expiresAt: 25_000, ttlSeconds: 20 } });
  });

  it("renew extends only the live lease of the same run; without a TTL it keeps the last one", () => {
    const s = granted(EMPTY_SESSION_LEASE, A, 10, 0);
    expect(renew(s, A, undefined, 9000)).toMatchObject({ kind: "renewed", lease: { expiresAt: 19_000, ttlSeconds: 10 } });
    expect(renew(s, B, undefined, 9000)).toEqual({ kind: "lost" });
    expect(renew(s, A, 60, 10_000)).toEqual({ kind: "lost" });
  });

  it("release frees the key only for its own live lease and never touches another run's", () => {
    const s = granted(EMPTY_SESSION_LEASE, A, 10, 0);
    expect(release(s, B, 1)).toEqual({ released: false, state: s });
    const freed = release(s, A, 1);
    expect(freed).toEqual({ released: true, state: { lastFence: 1, lease: null } });
    expect(release(freed.state, A, 2)).toEqual({ released: false, state: freed.state });
    expect(release(s, A, 10_000)).toEqual({ released: false, state: { lastFence: 1, lease: null } });
  });

  it("a fence is current only while its lease is live, and for its own run when one is named", () => {
    const s = granted(EMPTY_SESSION_LEASE, A, 10, 0);
    expect(isCurrent(s, 1, undefined, 1)).toBe(true);
    expect(isCurrent(s, 1, A, 1)).toBe(true);
    expect(isCurrent(s, 1, B, 1)).toBe(false);
    expect(isCurrent(s, 0, A, 1)).toBe(false);
    expect(isCurrent(s, 1, A, 10_000)).toBe(false);
  });

  it("fence tokens compare as strings exactly as fences compare as numbers", () => {
    expect(fenceToken(0)).toBe("0000000000000000");
    expect(fenceToken(Number.MAX_SAFE_INTEGER)).toHaveLength(16);
    fc.assert(fc.property(fc.nat(), fc.nat(), (x, y) => {
      const [a, b] = [fenceToken(x), fenceToken(y)];
      return Math.sign(x - y) === (a < b ? -1 : a > b ? 1 : 0);
    }));
  });

  it("across any sequence of operations the fence never repeats and at most one run holds", () => {
    const op = fc.record({
      kind: fc.constantFrom("acquire", "renew", "release"),
      run: fc.constantFrom(A, B),
      ttl: fc.integer({ min: 1, max: 5 }),
      advance: fc.integer({ min: 0, max: 3000 }),
    });
    fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      let state = EMPTY_SESSION_LEASE;
      let now = 0;
      const grants: number[] = [];
      for (const o of ops) {
        now += o.advance;
        const before = state;
        if (o.kind === "acquire") {
          const r = acquire(state, o.run, o.ttl, now);
          if (r.kind === "granted") grants.push(r.lease.fence);
          if (r.kind === "held" && before.lease?.runId === o.run) return false;
          if (r.kind !== "held") state = r.state;
        } else if (o.kind === "renew") {
          const r = renew(state, o.run, o.ttl, now);
          if (r.kind === "renewed") {
            if (r.lease.fence !== before.lease?.fence) return false;
            state = r.state;
          }
        } else {
          state = release(state, o.run, now).state;
        }
        if (state.lastFence < before.lastFence) return false;
      }
      return grants.every((f, i) => f === i + 1);
    }));
  });
});

describe("session-lease shards", () => {
  it("a forgotten key's first grant is one above the shard's fence floor", () => {
    expect(forgottenKey(0)).toBe(EMPTY_SESSION_LEASE);
    expect(acquire(forgottenKey(41), A, 30, 0)).toMatchObject({ kind: "granted", lease: { fence: 42 } });
  });

  it("a key always lands on the same shard, within the count, and the account is part of the key", () => {
    expect(shardOf("dev", "chat-1", 64)).toBe(shardOf("dev", "chat-1", 64));
    fc.assert(fc.property(fc.string(), fc.string(), fc.integer({ min: 1, max: MAX_LEASE_SHARDS }), (account, session, n) => {
      const shard = shardOf(account, session, n);
      return Number.isInteger(shard) && shard >= 0 && shard < n;
    }));
    const sessions = Array.from({ length: 200 }, (_, i) => `s-${i}`);
    expect(sessions.filter((s) => shardOf("dev", s, 64) !== shardOf("other", s, 64)).length).toBeGreaterThan(150);
  });

  it("spreads keys over the shards: 6,400 keys on 64 shards leave none empty and none above twice the mean", () => {
    const counts = new Array<number>(64).fill(0);
    for (let i = 0; i < 6400; i++) counts[shardOf("dev", `session-${i}`, 64)]! += 1;
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThan(200);
  });

  it("the shard count defaults, and a malformed one is refused with an exact message", () => {
    expect(leaseShardCount({})).toBe(DEFAULT.leaseShards);
    expect(leaseShardCount({ BATON_LEASE_SHARDS: "" })).toBe(DEFAULT.leaseShards);
    expect(leaseShardCount({ BATON_LEASE_SHARDS: "1" })).toBe(1);
    for (const raw of ["0", "-1", "1.5", "abc", String(MAX_LEASE_SHARDS + 1)]) {
      expect(() => leaseShardCount({ BATON_LEASE_SHARDS: raw }), raw).toThrow(
        `BATON_LEASE_SHARDS must be a whole number between 1 and ${MAX_LEASE_SHARDS}, got ${JSON.stringify(raw)}`,
      );
    }
  });
});
