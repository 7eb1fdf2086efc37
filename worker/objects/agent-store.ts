// SQLite seam of the agent object: counters, the lease record and its transitions.
// Every write here is synchronous and lands before the object sends anything that depends on it.
import { EMPTY_LEASE, type LeaseRecord, type Transition } from "../rules/election.ts";
import { KeyValueTable } from "./kv-table.ts";
import { migrate, type Migration } from "./migrations.ts";
import * as z from "zod/mini";
import { StoredJson } from "../rules/stored-json.ts";
import { readOr } from "./stored-read.ts";

export interface AgentIdentity {
  account: string;
  agent: string;
}

const identityJson = new StoredJson<AgentIdentity>("meta.identity", z.object({ account: z.string(), agent: z.string() }));
const maybeNumber = z.nullable(z.number());
const leaseJson = new StoredJson<LeaseRecord>("meta.lease", z.object({ fence: z.number(), holderClaim: maybeNumber, holderMachine: z.nullable(z.string()), since: maybeNumber }));

const TRANSITIONS_KEPT = 50;
const TRANSITIONS_TRIM_EVERY = 10;
/** Wakes are counted in memory and written at most once per this many (and at every alarm). */
const WAKES_WRITTEN_EVERY = 100;

const TRANSITION_MIGRATIONS: Migration[] = [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, from_claim INTEGER, to_claim INTEGER,
    from_machine TEXT, to_machine TEXT, fence INTEGER NOT NULL, reason TEXT NOT NULL)`),
];

export class AgentStore {
  private cachedLease: LeaseRecord | null = null;
  private unsavedWakes = 0;

  private readonly meta: KeyValueTable;

  constructor(private readonly sql: SqlStorage) {
    this.meta = new KeyValueTable(sql, "meta");
    migrate(sql, "transitions", TRANSITION_MIGRATIONS);
  }

  private get(key: string): string | null {
    return this.meta.get(key);
  }

  private set(key: string, value: string): void {
    this.meta.set(key, value);
  }

  /**
   * Who this object serves. The runtime names an object on requests but not when its alarm wakes
   * it, so the name seen first is stored and an unnamed wake reads it back; null only for an object
   * that was never reached by name.
   */
  identity(fromName: AgentIdentity | null): AgentIdentity | null {
    const stored = this.get("identity");
    if (fromName !== null) {
      const text = identityJson.write(fromName);
      if (stored !== text) this.set("identity", text);
      return fromName;
    }
    // A corrupt identity is as if never stored: the next request by name stores it again.
    return stored === null ? null : readOr(identityJson, stored, null, "identity unknown until the next request by name");
  }

  /** The last claim sequence handed out: they only grow and are never reused, across restarts of the object. */
  claimCounter(): number {
    return Number(this.get("claim_counter") ?? "0");
  }

  saveClaimCounter(last: number): void {
    this.set("claim_counter", String(last));
  }

  /** The stored lease, parsed once per object instance and kept in step by saveLease. */
  lease(): LeaseRecord {
    if (this.cachedLease === null) {
      const raw = this.get("lease");
      this.cachedLease = raw ? readOr(leaseJson, raw, null, "no holder; the fence goes on from the latest transition") ?? this.leaseAfterCorrupt() : EMPTY_LEASE;
    }
    return this.cachedLease;
  }

  /** A corrupt lease holds for nobody, but fences only grow: the next grant goes past the latest one any transition carried. */
  private leaseAfterCorrupt(): LeaseRecord {
    const { fence } = this.sql.exec<{ fence: number | null }>(`SELECT MAX(fence) AS fence FROM transitions`).one();
    return { ...EMPTY_LEASE, fence: fence ?? 0 };
  }

  saveLease(lease: LeaseRecord, transition: Transition | null): void {
    this.set("lease", leaseJson.write(lease));
    this.cachedLease = lease;
    if (transition) {
      const { id } = this.sql.exec<{ id: number }>(
        `INSERT INTO transitions (at, from_claim, to_claim, from_machine, to_machine, fence, reason) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
        transition.at, transition.fromClaim, transition.toClaim, transition.fromMachine, transition.toMachine, transition.fence, transition.reason,
      ).one();
      // Trimmed every TRANSITIONS_TRIM_EVERY transitions rather than on each: one statement less per handoff.
      if (id % TRANSITIONS_TRIM_EVERY === 0) this.sql.exec(`DELETE FROM transitions WHERE id <= ?`, id - TRANSITIONS_KEPT);
    }
  }

  recentTransitions(limit = 20): Transition[] {
    return this.sql
      .exec<{ at: number; from_claim: number | null; to_claim: number | null; from_machine: string | null; to_machine: string | null; fence: number; reason: string }>(
        `SELECT at, from_claim, to_claim, from_machine, to_machine, fence, reason FROM transitions ORDER BY id DESC LIMIT ?`, limit)
      .toArray()
      .map((r) => ({
        at: r.at, fromClaim: r.from_claim, toClaim: r.to_claim, fromMachine: r.from_machine, toMachine: r.to_machine,
        fence: r.fence, reason: r.reason as Transition["reason"],
      }));
  }

  /**
   * Counts invocations of the object (requests, frames, alarms, closes); heartbeats must not add to
   * it. In memory, so a wake costs no write: the count is written at the next
   * alarm, or every WAKES_WRITTEN_EVERY wakes, and an eviction loses at most what was not written.
   */
  countWake(): void {
    this.unsavedWakes += 1;
    if (this.unsavedWakes >= WAKES_WRITTEN_EVERY) this.saveWakes();
  }

  saveWakes(): void {
    if (this.unsavedWakes === 0) return;
    this.set("wakes", String(Number(this.get("wakes") ?? "0") + this.unsavedWakes));
    this.unsavedWakes = 0;
  }

  wakes(): number {
    return Number(this.get("wakes") ?? "0") + this.unsavedWakes;
  }
}
