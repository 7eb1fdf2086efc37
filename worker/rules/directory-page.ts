// The dashboard's first frame lists the directory, but never more than DIRECTORY_PAGE_BYTES of it:
// the agents that do not fit follow as one presence frame each, so no frame is over the frame cap
// plus one agent's entry, at 10 agents or at 10,000.

/** Bytes of agents the first `directory` frame carries. */
export const DIRECTORY_PAGE_BYTES = 48 * 1024;

/** The entries that fit the first frame (at least one, in order), and the rest. */
export function firstPage<T>(entries: readonly T[], limit = DIRECTORY_PAGE_BYTES): { page: T[]; rest: T[] } {
  let bytes = 0;
  for (let i = 0; i < entries.length; i++) {
    bytes += JSON.stringify(entries[i]).length;
    if (bytes > limit && i > 0) return { page: entries.slice(0, i), rest: entries.slice(i) };
  }
  return { page: [...entries], rest: [] };
}
