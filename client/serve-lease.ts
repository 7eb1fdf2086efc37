// The serve lease as this process sees it: the coordinator's serve_lease frames applied to the
// shared LeaseClock, read as one of four states.
import { LeaseClock } from "./lease-clock.ts";

export type LeaseView =
  | { kind: "connecting" }
  | { kind: "standby"; position: number; fence: number }
  | { kind: "holder"; fence: number }
  | { kind: "lapsed"; fence: number };

export interface LeaseFrame {
  held: boolean;
  fence: number;
  position: number;
  ttl_ms: number;
}

export class ServeLease {
  private view: LeaseView = { kind: "connecting" };
  private readonly clock: LeaseClock;

  constructor(ttlMs: number) {
    this.clock = new LeaseClock(ttlMs);
  }

  /** The state as of the last call that looked at the clock (valid, mayAct, acked, onLeaseFrame). */
  get state(): LeaseView {
    return this.view;
  }

  /** The deadline by the local monotonic clock, or null when not holding. */
  get deadline(): number | null {
    return this.clock.deadline;
  }

  /** A new connection: nothing is held until the coordinator says so. */
  reset(ttlMs: number): void {
    this.clock.reset(ttlMs);
    this.view = { kind: "connecting" };
  }

  /** A frame sent at `sentAt` is known to have reached the coordinator (answered at `now`). */
  acked(sentAt: number, now: number): void {
    this.clock.confirmed(sentAt, now);
    this.sync();
  }

  /** Applies a serve_lease frame; returns the new view. A lapsed lease stays lapsed. */
  onLeaseFrame(frame: LeaseFrame, now: number): LeaseView {
    if (this.view.kind === "lapsed") return this.view;
    this.clock.setTtl(frame.ttl_ms);
    if (frame.held) {
      this.view = { kind: "holder", fence: frame.fence };
      this.clock.hold(now);
    } else {
      this.clock.drop();
      this.view = { kind: "standby", position: frame.position, fence: frame.fence };
    }
    this.sync();
    return this.view;
  }

  /** True while this process may still act at `now` or is not holding; false once lapsed. */
  valid(now: number): boolean {
    const ok = this.clock.valid(now);
    this.sync();
    return ok;
  }

  /** True only while holding a lease that is still valid at `now`. */
  mayAct(now: number): boolean {
    const ok = this.clock.mayAct(now);
    this.sync();
    return ok;
  }

  private sync(): void {
    if (this.clock.lapsed && this.view.kind !== "lapsed" && this.view.kind !== "connecting") {
      this.view = { kind: "lapsed", fence: this.view.fence };
    }
  }
}
