// The one reader of JSON that the objects keep in SQLite (a column of a row, or a key/value
// value). Each stored shape is declared once, by name, with a schema (the wire's where it has
// one); the codec both writes the value and checks it on the way back. A stored text that is not
// JSON, or not of its shape, is corrupt: `read` names the problem and never throws, and each
// store says, where it reads, what a corrupt row becomes (the row skipped, or a named default),
// so one bad row never takes its object down. test/unit/stored-json.test.ts keeps every other
// JSON.parse out of worker/objects; test/worker/stored-json.test.ts corrupts a row of each store.
import type * as z from "zod/mini";

export type StoredRead<T> = { ok: true; value: T } | { ok: false; problem: string };

export class StoredJson<T> {
  /**
   * `where`: the table and column (or key) the value lives in, for the log line. `shape`: what a
   * stored value must be; it checks the fields readers rely on (the wire's schema where there is
   * one), and values it accepts are read as the `T` that `write` alone produces.
   */
  constructor(readonly where: string, private readonly shape: z.ZodMiniType) {}

  /** The text to store for `value`. */
  write(value: T): string {
    return JSON.stringify(value);
  }

  /** The stored value, or what is wrong with the stored text. Never throws. */
  read(text: string): StoredRead<T> {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return { ok: false, problem: `${this.where} holds text that is not JSON: ${JSON.stringify(text.slice(0, 80))}` };
    }
    const checked = this.shape.safeParse(raw);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      const at = issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
      return { ok: false, problem: `${this.where} holds JSON of the wrong shape${at}: ${issue?.message ?? "rejected"}` };
    }
    // The shape accepted it, and `write(value: T)` is the only writer of the column.
    return { ok: true, value: raw as T };
  }

  /** The stored value; a corrupt one is logged with `instead` (what the store does about it) and read as `fallback`. */
  readOr<F>(text: string, fallback: F, instead: string): T | F {
    const r = this.read(text);
    if (r.ok) return r.value;
    reportCorrupt(r.problem, instead);
    return fallback;
  }
}

/** One log line per corrupt read: what is wrong and what the store did instead. */
export function reportCorrupt(problem: string, instead: string): void {
  console.error(`corrupt stored JSON: ${problem}; ${instead}`);
}
