// The agent object's kept step journals (worker/objects/journal-cache.ts): journal order, the
// budget's byte count, and the bound in memory (least recently used out, an oversized one never kept).
import { describe, expect, it } from "vitest";
import { JournalCache, KeptJournal, type KeptRecord } from "../../worker/objects/journal-cache.ts";

const record = (name: string, at: number, value: string | null = "1", over: Partial<KeptRecord> = {}): KeptRecord => ({
  name, kind: "step", status: "done", value, blob: null, onUnknown: null, attempt: 1, token: 1, at, effectKey: null, ...over,
});

describe("a kept journal", () => {
  it("is in journal order: by the time each record began, then by name, as SQLite orders it", () => {
    const j = new KeptJournal([record("b", 2), record("c", 1), record("a", 2)]);
    j.put(record("0", 3));
    expect(j.inOrder().map((r) => r.name)).toEqual(["c", "a", "b", "0"]);
  });

  it("counts its inline values in UTF-8 bytes, as the journal budget does, and a rewrite or drop corrects the count", () => {
    const j = new KeptJournal([record("a", 1, JSON.stringify("é")), record("b", 2, null)]);
    expect([j.count, j.valueBytes]).toEqual([2, 4]);
    j.put(record("a", 1, "12345"));
    expect([j.count, j.valueBytes]).toEqual([2, 5]);
    j.drop("a");
    expect([j.count, j.valueBytes, j.inOrder().map((r) => r.name)]).toEqual([1, 0, ["b"]]);
  });
});

describe("the cache of journals", () => {
  const sized = (bytes: number) => new KeptJournal([record("r", 1, "x".repeat(bytes))]);

  it("lets the least recently used journal go first when the bound is passed", () => {
    const cache = new JournalCache(3000);
    cache.keep(1, sized(1000));
    cache.keep(2, sized(1000));
    cache.get(1);
    cache.keep(3, sized(1000));
    expect([cache.get(1) !== null, cache.get(2) !== null, cache.get(3) !== null]).toEqual([true, false, true]);
  });

  it("never keeps a journal larger than the bound, and forgets one that grows past it", () => {
    const cache = new JournalCache(3000);
    expect(cache.keep(1, sized(5000))).toBeNull();
    cache.keep(2, sized(1000));
    cache.update(2, (j) => j.put(record("big", 2, "x".repeat(4000))));
    expect([cache.get(1), cache.get(2)]).toEqual([null, null]);
  });
});
