// The client-side lease clock: validity counts from when the last answered heartbeat was sent,
// and a lapsed lease never comes back by itself. Serve leases (ServeLease) and session leases
// (withSessionLease) use the same LeaseClock.
import { describe, expect, it } from "vitest";
import { LeaseClock } from "../../client/lease-clock.ts";
import { ServeLease as ClientLease } from "../../client/serve-lease.ts";

const TTL = 1000;
const held = (fence: number) => ({ held: true, fence, position: 0, ttl_ms: TTL });

describe("ClientLease", () => {
  it("a holder is valid until the send time of its last answered ping plus the TTL", () => {
    const lease = new ClientLease(TTL);
    lease.acked(100, 120); // the claim, sent at 100, answered at 120
    expect(lease.onLeaseFrame(held(3), 120)).toEqual({ kind: "holder", fence: 3 });
    expect(lease.deadline).toBe(1100);
    lease.acked(400, 900); // a ping sent at 400 whose pong came late, at 900
    expect(lease.deadline).toBe(1400); // counted from the send, not from the pong
    expect(lease.mayAct(1399)).toBe(true);
    expect(lease.mayAct(1400)).toBe(false);
    expect(lease.state).toEqual({ kind: "lapsed", fence: 3 });
  });

  it("after a pause past the deadline, a late pong does not revive the lease (SIGSTOP then SIGCONT)", () => {
    const lease = new ClientLease(TTL);
    lease.acked(0, 10);
    lease.onLeaseFrame(held(5), 10);
    // process stopped from 20 to 5000; on wake-up the pong of a ping sent at 4990 arrives first
    lease.acked(4990, 5000);
    expect(lease.state.kind).toBe("lapsed");
    expect(lease.mayAct(5001)).toBe(false);
    lease.onLeaseFrame(held(5), 5002);
    expect(lease.state.kind).toBe("lapsed");
  });

  it("a standby may not act, and held:false demotes a holder", () => {
    const lease = new ClientLease(TTL);
    lease.acked(0, 5);
    expect(lease.onLeaseFrame({ held: false, fence: 2, position: 2, ttl_ms: TTL }, 5)).toEqual({ kind: "standby", position: 2, fence: 2 });
    expect(lease.mayAct(6)).toBe(false);
    lease.onLeaseFrame(held(3), 10);
    expect(lease.mayAct(11)).toBe(true);
    lease.onLeaseFrame({ held: false, fence: 4, position: 1, ttl_ms: TTL }, 12);
    expect(lease.mayAct(13)).toBe(false);
  });

  it("a promotion that arrives after the last answered heartbeat went stale lapses at once", () => {
    const lease = new ClientLease(TTL);
    lease.acked(0, 5);
    lease.onLeaseFrame({ held: false, fence: 1, position: 1, ttl_ms: TTL }, 5);
    expect(lease.onLeaseFrame(held(2), 2000).kind).toBe("lapsed");
  });

  it("reset (a new connection) forgets everything: nothing is held until the coordinator says so", () => {
    const lease = new ClientLease(TTL);
    lease.acked(0, 5);
    lease.onLeaseFrame(held(1), 5);
    lease.reset(TTL);
    expect(lease.state).toEqual({ kind: "connecting" });
    expect(lease.mayAct(10)).toBe(false);
  });
});

describe("LeaseClock (session leases)", () => {
  it("a grant is valid for one TTL from the acquire's send time; each renewal counts from its own send", () => {
    const clock = new LeaseClock(3000);
    clock.confirmed(100, 180); // acquire sent at 100, granted at 180
    clock.hold(180);
    expect(clock.deadline).toBe(3100);
    clock.confirmed(1100, 2900); // a renewal sent at 1100 answered slowly
    expect(clock.deadline).toBe(4100);
    expect(clock.mayAct(4099)).toBe(true);
    expect(clock.mayAct(4100)).toBe(false);
    expect(clock.lapsed).toBe(true);
    clock.confirmed(4050, 4200); // a renewal answered after the deadline revives nothing
    clock.hold(4200);
    expect(clock.mayAct(4201)).toBe(false);
  });
});
