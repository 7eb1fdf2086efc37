// The step journals of the messages an agent object touched lately, kept in memory: a step's write
// then reads no rows, and a successor's hand-out carries the journal without reading 100 of them.
// StepStore is the journal's only writer and updates a kept journal with every write, so memory
// and SQLite agree. Bounded in bytes, the least recently used journal leaves first; a journal
// larger than the bound is never kept (StepStore reads it from SQLite instead).
import type { StepRecord } from "../rules/step-journal.ts";
import { utf8Bytes } from "../wire/protocol.ts";

/** A record as the journal keeps it, with the idempotency key its effect was first begun under. */
export interface KeptRecord extends StepRecord {
  effectKey: string | null;
}

/** What the kept journals may take in memory, roughly: a journal at its full budget (2 MiB) and then some. */
export const KEPT_BYTES = 4 * 1024 * 1024;
/** A record's memory beyond its value, roughly (its name, numbers and map entry). */
const RECORD_OVERHEAD = 160;

/** One message's journal: its records by name, and in journal order (at, then name) when asked. */
export class KeptJournal {
  private readonly records = new Map<string, KeptRecord>();
  private ordered: KeptRecord[] | null = null;
  /** The inline values' bytes, as the journal budget counts them. */
  valueBytes = 0;
  /** What this journal takes in memory, roughly. */
  size = 0;

  constructor(rows: readonly KeptRecord[]) {
    for (const r of rows) this.put(r);
  }

  get(name: string): KeptRecord | null {
    return this.records.get(name) ?? null;
  }

  get count(): number {
    return this.records.size;
  }

  /** Every record in journal order: the order the steps began in, as SQLite's ORDER BY at, name. */
  inOrder(): readonly KeptRecord[] {
    this.ordered ??= [...this.records.values()].sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return this.ordered;
  }

  put(record: KeptRecord): void {
    this.drop(record.name);
    this.records.set(record.name, record);
    this.valueBytes += valueBytes(record);
    this.size += memoryOf(record);
    this.ordered = null;
  }

  drop(name: string): void {
    const old = this.records.get(name);
    if (old === undefined) return;
    this.records.delete(name);
    this.valueBytes -= valueBytes(old);
    this.size -= memoryOf(old);
    this.ordered = null;
  }
}

const valueBytes = (r: StepRecord): number => (r.value === null ? 0 : utf8Bytes(r.value));
const memoryOf = (r: StepRecord): number => RECORD_OVERHEAD + r.name.length + (r.value?.length ?? 0);

/** The kept journals by message, least recently used first. */
export class JournalCache {
  private readonly journals = new Map<number, KeptJournal>();
  private size = 0;

  constructor(private readonly bound = KEPT_BYTES) {}

  /** The kept journal of a message (now the most recently used), or null. */
  get(messageId: number): KeptJournal | null {
    const kept = this.journals.get(messageId);
    if (kept === undefined) return null;
    this.journals.delete(messageId);
    this.journals.set(messageId, kept);
    return kept;
  }

  /** Keeps a journal just read whole, unless it alone is over the bound; older journals leave to make room. */
  keep(messageId: number, journal: KeptJournal): KeptJournal | null {
    if (journal.size > this.bound) return null;
    this.forget(messageId);
    this.journals.set(messageId, journal);
    this.size += journal.size;
    this.fit();
    return this.journals.get(messageId) ?? null;
  }

  /** A kept journal changed by `change` (a write to it); one that grew over the bound is no longer kept. */
  update(messageId: number, change: (journal: KeptJournal) => void): void {
    const kept = this.journals.get(messageId);
    if (kept === undefined) return;
    this.size -= kept.size;
    change(kept);
    this.size += kept.size;
    if (kept.size > this.bound) this.forget(messageId);
    else this.fit();
  }

  forget(messageId: number): void {
    const kept = this.journals.get(messageId);
    if (kept === undefined) return;
    this.journals.delete(messageId);
    this.size -= kept.size;
  }

  private fit(): void {
    for (const [id] of this.journals) {
      if (this.size <= this.bound) return;
      this.forget(id);
    }
  }
}
