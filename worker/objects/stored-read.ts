// A store's reading of a stored JSON value through its codec (rules/stored-json.ts): a corrupt one
// is logged once, with what the store does instead, and read as the store's named fallback.
import type { StoredJson } from "../rules/stored-json.ts";

/** The stored value; a corrupt one is logged with `instead` (what the store does about it) and read as `fallback`. */
export function readOr<T, F>(codec: StoredJson<T>, text: string, fallback: F, instead: string): T | F {
  const r = codec.read(text);
  if (r.ok) return r.value;
  reportCorrupt(r.problem, instead);
  return fallback;
}

/** One log line per corrupt read: what is wrong and what the store did instead. */
export function reportCorrupt(problem: string, instead: string): void {
  console.error(`corrupt stored JSON: ${problem}; ${instead}`);
}
