// The one reader of JSON kept in SQLite (a column of a row, or a key/value value), for the stores
// and for the rules that read a row's JSON themselves. Each stored shape is declared once, by name,
// with a schema (the wire's where it has one); the codec both writes the value and checks it on
// the way back. A stored text that is not JSON, or not of its shape, is corrupt: `read` names the
// problem and never throws (a throw inside a plan or its apply would leave the object's alarm and
// every later event failing on the same row). Pure: what a store does about a corrupt value, and
// its log line, is the store's (objects/stored-read.ts). test/unit/stored-json.test.ts keeps every
// other JSON.parse out of worker/objects and worker/rules; test/worker/stored-json.test.ts corrupts
// a row of each store.
import type * as z from "zod/mini";

export type StoredRead<T> = { ok: true; value: T } | { ok: false; problem: string };

export class StoredJson<T> {
  /**
   * `where`: the table and column (or key) the value lives in, named in the problem. `shape`: what
   * a stored value must be; it checks the fields readers rely on (the wire's schema where there is
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

  /** The stored value, or `fallback` when it is corrupt (a rule's reading: the store that reads the same row logs it). */
  valueOr<F>(text: string, fallback: F): T | F {
    const r = this.read(text);
    return r.ok ? r.value : fallback;
  }
}
