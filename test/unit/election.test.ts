// The pure lease rules: who is elected, when the fence moves, when the next scan is due, who may write.
import { describe, expect, it } from "vitest";
import { applyElection, EMPTY_LEASE, isStale, nextStaleDeadline, provenAlive, holderCheckAt, type Candidate } from "../../worker/rules/election.ts";
import { checkFencedWrite } from "../../worker/rules/fencing.ts";

const ttl = 1000;
const cand = (claimSeq: number, lastHeartbeat = 0, machine = `m${claimSeq}`): Candidate => ({ claimSeq, machine, lastHeartbeat });

describe("isStale", () => {
  it("a heartbeat exactly at the TTL is still live; one millisecond later is stale", () => {
    expect(isStale({ lastHeartbeat: 0 }, 1000, ttl)).toBe(false);
    expect(isStale({ lastHeartbeat: 0 }, 1001, ttl)).toBe(true);
  });
});

describe("applyElection", () => {
  it("bumps the fence by one when the lease passes to a new holder", () => {
    const first = applyElection(EMPTY_LEASE, cand(1), 10, "claimed");
    expect(first.lease).toEqual({ fence: 1, holderClaim: 1, holderMachine: "m1", since: 10 });
    expect(first.transition).toEqual({ at: 10, fromClaim: null, toClaim: 1, fromMachine: null, toMachine: "m1", fence: 1, reason: "claimed" });
    const second = applyElection(first.lease, cand(2), 20, "closed");
    expect(second.lease.fence).toBe(2);
    expect(second.transition?.fromClaim).toBe(1);
  });

  it("keeps everything when the holder is unchanged", () => {
    const { lease } = applyElection(EMPTY_LEASE, cand(1), 10, "claimed");
    const again = applyElection(lease, cand(1), 99, "claimed");
    expect(again.lease).toBe(lease);
    expect(again.transition).toBeNull();
  });

  it("keeps the fence when the holder leaves without a successor, and bumps it for the next one", () => {
    const { lease } = applyElection(EMPTY_LEASE, cand(1), 10, "claimed");
    const empty = applyElection(lease, null, 20, "released");
    expect(empty.lease).toMatchObject({ fence: 1, holderClaim: null });
    expect(empty.transition?.reason).toBe("released");
    expect(applyElection(empty.lease, cand(5), 30, "claimed").lease.fence).toBe(2);
  });

  it("never lets the fence decrease over any sequence of winners", () => {
    let lease = EMPTY_LEASE;
    const winners = [cand(1), null, cand(2), cand(2), cand(3), null, null, cand(4)];
    for (const w of winners) {
      const next = applyElection(lease, w, 0, "closed").lease;
      expect(next.fence).toBeGreaterThanOrEqual(lease.fence);
      lease = next;
    }
    expect(lease.fence).toBe(4);
  });
});

describe("nextStaleDeadline", () => {
  it("is the earliest heartbeat plus the TTL, just past it; null with nobody to watch", () => {
    expect(nextStaleDeadline([{ lastHeartbeat: 500 }, { lastHeartbeat: 200 }], ttl)).toBe(1201);
    expect(nextStaleDeadline([], ttl)).toBeNull();
  });
});

describe("checkFencedWrite", () => {
  const lease = { fence: 3, holderClaim: 7, holderMachine: "m", since: 0 };
  it("accepts only the holder with the current fence", () => {
    expect(checkFencedWrite(lease, { claimSeq: 7, released: false }, 3)).toEqual({ ok: true });
  });
  it("names a stale fence before anything else", () => {
    expect(checkFencedWrite(lease, { claimSeq: 7, released: false }, 2)).toMatchObject({ ok: false, code: "stale_fence" });
    expect(checkFencedWrite(lease, { claimSeq: 1, released: false }, 2)).toMatchObject({ ok: false, code: "stale_fence" });
  });
  it("refuses a standby or a released holder that knows the current fence", () => {
    expect(checkFencedWrite(lease, { claimSeq: 8, released: false }, 3)).toMatchObject({ ok: false, code: "not_holder" });
    expect(checkFencedWrite(lease, { claimSeq: 7, released: true }, 3)).toMatchObject({ ok: false, code: "not_holder" });
    expect(checkFencedWrite(lease, { claimSeq: null, released: false }, 3)).toMatchObject({ ok: false, code: "not_holder" });
  });
});

describe("provenAlive", () => {
  const ttl = 1000;
  it("a standby's auto-answered ping always counts, even after a long silence", () => {
    expect(provenAlive(0, 5000, false, ttl)).toBe(5000);
    expect(provenAlive(0, null, false, ttl)).toBe(0);
  });
  it("a holder's auto-answered ping counts up to its deadline and never after it", () => {
    expect(provenAlive(0, 1000, true, ttl)).toBe(1000);
    expect(provenAlive(0, 1001, true, ttl)).toBe(0);
    expect(provenAlive(0, 9000, true, ttl)).toBe(0);
  });
  it("an auto ping older than the last processed frame changes nothing", () => {
    expect(provenAlive(700, 300, true, ttl)).toBe(700);
    expect(provenAlive(700, 300, false, ttl)).toBe(700);
  });
});

describe("holderCheckAt", () => {
  const ttl = 1000;
  it("looks halfway to the holder's deadline while that is ahead, then just past the deadline", () => {
    expect(holderCheckAt(0, 100, ttl)).toBe(500);
    expect(holderCheckAt(0, 500, ttl)).toBe(1001);
    expect(holderCheckAt(0, 900, ttl)).toBe(1001);
  });
});
