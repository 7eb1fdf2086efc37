// The one client-side lease clock, shared by serve leases and session leases. The coordinator
// expires a lease by its own clock; a client must never act later than that, so it counts
// validity from when its last confirmed request was SENT: the coordinator saw that request no
// earlier, hence cannot expire the lease before sentAt + ttl (clock rates being equal). Once
// lapsed, a lease stays lapsed: a late answer never revives it; the owner must claim anew.
// Times are monotonic milliseconds (the client's one clock, core/clock.ts), passed in so tests drive them.

export class LeaseClock {
  private ttlMs: number;
  /** Send time of the latest request the coordinator is known to have received. */
  private lastConfirmedSend = -Infinity;
  private validUntil = -Infinity;
  private holding = false;
  private lapsedFlag = false;

  constructor(ttlMs: number) {
    this.ttlMs = ttlMs;
  }

  /** Forgets everything (a new connection or a new acquisition): nothing is held, nothing lapsed. */
  reset(ttlMs: number = this.ttlMs): void {
    this.ttlMs = ttlMs;
    this.lastConfirmedSend = -Infinity;
    this.validUntil = -Infinity;
    this.holding = false;
    this.lapsedFlag = false;
  }

  /** The TTL the coordinator announced; it applies from the next confirmation on. */
  setTtl(ttlMs: number): void {
    if (ttlMs > 0) this.ttlMs = ttlMs;
  }

  /**
   * A request sent at `sentAt` is known to have reached the coordinator (its answer arrived at
   * `now`). Extends a held lease, unless it has already lapsed by `now`.
   */
  confirmed(sentAt: number, now: number): void {
    if (!this.valid(now)) return;
    this.lastConfirmedSend = Math.max(this.lastConfirmedSend, sentAt);
    if (this.holding) this.validUntil = this.lastConfirmedSend + this.ttlMs;
  }

  /** The coordinator says we hold the lease: valid from the last confirmed send for one TTL. */
  hold(now: number): void {
    if (this.lapsedFlag) return;
    this.holding = true;
    this.validUntil = this.lastConfirmedSend + this.ttlMs;
    this.valid(now);
  }

  /** The coordinator says we do not hold it (a standby): nothing to count down. */
  drop(): void {
    this.holding = false;
    this.validUntil = -Infinity;
  }

  /**
   * False once lapsed. Marks the lease lapsed the first time `now` reaches the deadline; call it
   * right before every action taken under the lease.
   */
  valid(now: number): boolean {
    if (this.lapsedFlag) return false;
    if (!this.holding) return true;
    if (now < this.validUntil) return true;
    this.holding = false;
    this.lapsedFlag = true;
    return false;
  }

  /** True only while holding a lease still valid at `now`. */
  mayAct(now: number): boolean {
    return this.valid(now) && this.holding;
  }

  get lapsed(): boolean {
    return this.lapsedFlag;
  }

  get held(): boolean {
    return this.holding;
  }

  /** The local deadline while holding, else null. */
  get deadline(): number | null {
    return this.holding ? this.validUntil : null;
  }
}
