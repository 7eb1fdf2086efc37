// What leaves an agent object for a connection (a frame, a close, an attachment written after
// them), sent at once, or held while a transaction runs and sent only once it has committed: a
// transaction that throws rolls storage back, and a frame already sent could not be taken back
// (a schedule fire's hand-out would carry a message id and token that storage no longer has).
export class Outbound {
  private held: (() => void)[] | null = null;

  /** Sends now, or after the transaction that is running commits. */
  send(out: () => void): void {
    if (this.held === null) out();
    else this.held.push(out);
  }

  /**
   * Runs `work` in one synchronous transaction of the object's storage; what it sends goes out only
   * if it committed. One that throws is rolled back, sends nothing and rethrows: the caller must
   * then rebuild the memory the work touched (open work, journals, caches) from storage.
   */
  transaction(ctx: DurableObjectState, work: () => void): void {
    if (this.held !== null) throw new Error("transactions of the outbound are not nested");
    const held: (() => void)[] = [];
    this.held = held;
    try {
      ctx.storage.transactionSync(work);
    } finally {
      this.held = null;
    }
    for (const out of held) out();
  }
}
