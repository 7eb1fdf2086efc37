// How far one page of history (GET /agents/{agent}/messages) goes: a count and a byte budget
// (LIMITS.historyPageMessages, LIMITS.historyPageBytes), whichever comes first, and never an empty
// page while a message is left, so a cursor always moves on. 500 messages of 32 KiB were one
// 16.6 MB answer that held the agent's object for 1.5 s; a page now weighs what a sync page does
// (256 KiB), and the cursor takes the reader on.

/** How many of `sizes` (each item's bytes, in order) one page takes: at most `count`, at most `budget` bytes in all, but at least one. */
export function pageLength(sizes: readonly number[], count: number, budget: number): number {
  let taken = 0;
  let bytes = 0;
  for (const size of sizes) {
    if (taken === count || (taken > 0 && bytes + size > budget)) break;
    taken += 1;
    bytes += size;
  }
  return taken;
}
