// Readers following a message's live output wait here for its next change: a long poll of the
// Worker (GET …/output holds the reader's stream; the object holds only a callback and a timer per
// waiting call, never a reader's bytes). A change of the message (a batch, a mark, its status)
// wakes its waiters, who read the new events from storage. Past MAX_WAITERS a call does not wait:
// the Worker asks again after a pause, so many readers cannot grow the object's memory.
const MAX_WAITERS = 1000;

export class OutputFollowers {
  private readonly waiting = new Map<number, Set<() => void>>();
  private count = 0;

  /** Resolves true when message `id` changes, or after `ms`; false at once when too many calls wait already. */
  wait(id: number, ms: number): Promise<boolean> {
    if (this.count >= MAX_WAITERS) return Promise.resolve(false);
    return new Promise((resolve) => {
      const set = this.waiting.get(id) ?? new Set<() => void>();
      this.waiting.set(id, set);
      this.count++;
      const done = () => {
        clearTimeout(timer);
        if (set.delete(done)) this.count--;
        if (set.size === 0 && this.waiting.get(id) === set) this.waiting.delete(id);
        resolve(true);
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }

  /** Wakes every call waiting on message `id`. */
  wake(id: number): void {
    const set = this.waiting.get(id);
    if (!set) return;
    for (const done of [...set]) done();
  }
}
