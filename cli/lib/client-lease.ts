// The serve lease as this process sees it, judged by its own monotonic clock. The coordinator
// expires a silent holder by its clock; the client must never act later than that, so it counts
// validity from when its last answered heartbeat was SENT: the server saw that frame no earlier,
// hence cannot expire us before sentAt + ttl (clock rates being equal). Once lapsed, a lease stays
// lapsed: a late pong never revives it; the owner must reconnect and claim anew (soft lease).

export type LeaseView =
  | { kind: "connecting" }
  | { kind: "standby"; position: number; fence: number }
  | { kind: "holder"; fence: number; legacy: boolean }
  | { kind: "lapsed"; fence: number };

export interface LeaseFrame {
  held: boolean;
  fence: number;
  position: number;
  ttl_ms: number;
}

export class ClientLease {
  private view: LeaseView = { kind: "connecting" };
  private ttlMs: number;
  /** Send time (monotonic ms) of the latest frame the coordinator is known to have received. */
  private lastAckedSend = -Infinity;
  private validUntil = -Infinity;

  constructor(ttlMs: number) {
    this.ttlMs = ttlMs;
  }

  get state(): LeaseView {
    return this.view;
  }

  /** The deadline by the local monotonic clock, or null when not holding. */
  get deadline(): number | null {
    return this.view.kind === "holder" ? this.validUntil : null;
  }

  /** A new connection: nothing is held until the coordinator says so. */
  reset(ttlMs: number): void {
    this.ttlMs = ttlMs;
    this.view = { kind: "connecting" };
    this.lastAckedSend = -Infinity;
    this.validUntil = -Infinity;
  }

  /**
   * A frame sent at `sentAt` is known to have reached the coordinator (its pong or answer
   * arrived at `now`). Extends a held lease unless it already lapsed.
   */
  acked(sentAt: number, now: number): void {
    if (!this.valid(now)) return;
    this.lastAckedSend = Math.max(this.lastAckedSend, sentAt);
    if (this.view.kind === "holder") this.validUntil = this.lastAckedSend + this.ttlMs;
  }

  /** Applies a serve_lease frame; returns the new view. */
  onLeaseFrame(frame: LeaseFrame, now: number): LeaseView {
    if (this.view.kind === "lapsed") return this.view;
    this.ttlMs = frame.ttl_ms > 0 ? frame.ttl_ms : this.ttlMs;
    if (frame.held) {
      this.view = { kind: "holder", fence: frame.fence, legacy: false };
      this.validUntil = this.lastAckedSend + this.ttlMs;
      this.valid(now);
    } else {
      this.view = { kind: "standby", position: frame.position, fence: frame.fence };
    }
    return this.view;
  }

  /** An old coordinator that never speaks serve_lease: the connection itself is the lease. */
  grantLegacy(now: number): LeaseView {
    if (this.view.kind !== "connecting") return this.view;
    this.view = { kind: "holder", fence: 0, legacy: true };
    this.validUntil = this.lastAckedSend + this.ttlMs;
    this.valid(now);
    return this.view;
  }

  /**
   * True while this process may act as holder at `now`. Marks the lease lapsed the first time the
   * local clock passes the deadline; call it right before every run, reply, ack or checkpoint.
   */
  valid(now: number): boolean {
    if (this.view.kind !== "holder") return this.view.kind !== "lapsed";
    if (now < this.validUntil) return true;
    this.view = { kind: "lapsed", fence: this.view.fence };
    return false;
  }

  /** True only while holding a lease that is still valid at `now`. */
  mayAct(now: number): boolean {
    return this.valid(now) && this.view.kind === "holder";
  }
}
