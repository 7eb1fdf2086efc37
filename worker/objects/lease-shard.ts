// A session-lease shard: one of a fixed number of Durable Objects, each holding the leases of the
// (account, session) keys that hash to it, one SQLite row per key. The Worker validates the HTTP
// request and calls one RPC method; each method loads the key's record, applies one pure rule
// from session-lease.ts and stages the result. Decisions are serial (nothing awaits between a
// read and its staging). A decision is written at once when no commit is in flight; the decisions
// that arrive while one is share the next commit (group commit without a timer), and no answer
// leaves before the commit that holds what it says.
import { ClockedObject } from "./clock.ts";
import type { Env } from "../env.ts";
import { LIMITS } from "../wire/protocol.ts";
import { leaseShardCount } from "../config.ts";
import { LeaseShardStore, StagedLeases } from "./lease-store.ts";
import { LeaseDataStore, type DataRow, type StoredValue } from "./lease-data-store.ts";
import { checkDataWrite, pageSize, type BudgetVerdict, type DataUsage, type DataWriteVerdict } from "../rules/lease-data.ts";
import {
  acquire, isCurrent, isLive, release, renew, shardOf, type SessionLease,
} from "../rules/session-lease.ts";

export type AcquireAnswer = { kind: "granted" | "renewed"; lease: SessionLease } | { kind: "held"; expiresAt: number };
export type RenewAnswer = { kind: "renewed"; lease: SessionLease } | { kind: "lost" };
export interface CheckAnswer { current: boolean; latestFence: number }
/** A data write: stored (or `kept`, with an R2 object no row names any more as `garbage`), or refused. */
export type DataPutAnswer =
  | { ok: true; kept: boolean; garbage: string | null }
  | Exclude<DataWriteVerdict, { ok: true }>
  | Exclude<BudgetVerdict, { ok: true }>;
/** A key as its own account sees it: the live lease (if any) by the shard's clock at `now`. */
export interface KeyView { lastFence: number; live: SessionLease | null; now: number }

export class LeaseShard extends ClockedObject {
  private readonly store: LeaseShardStore;
  private readonly staged: StagedLeases;
  private readonly data: LeaseDataStore;
  private batch: Promise<void> | null = null;
  private committing: Promise<void> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new LeaseShardStore(ctx.storage.sql);
    this.staged = new StagedLeases(this.store, ctx.storage);
    this.data = new LeaseDataStore(ctx.storage.sql);
  }

  /**
   * Resolves once everything staged so far is written, or rejects if that write failed (then
   * nothing of the batch was stored and none of its requests is answered with success). With no
   * commit in flight the staged records are written at once, in this event; while one is in
   * flight, requests arriving meanwhile wait for it and then share the next commit. With nothing
   * staged it resolves at once.
   */
  private written(): Promise<void> {
    if (!this.staged.pending) return Promise.resolve();
    if (this.committing === null) {
      this.flush();
      return Promise.resolve();
    }
    this.batch ??= this.committing.then(() => {
      this.batch = null;
      this.flush();
    });
    return this.batch;
  }

  /** Writes what is staged; the output gate holds every answer until this commit is durable. */
  private flush(): void {
    this.staged.flush();
    const commit: Promise<void> = this.ctx.storage.sync().then(
      () => {
        if (this.committing === commit) this.committing = null;
      },
      () => {
        if (this.committing === commit) this.committing = null;
      },
    );
    this.committing = commit;
  }

  async acquire(account: string, session: string, runId: string, ttlSeconds: number): Promise<AcquireAnswer> {
    const now = this.now();
    const { state, remembered } = this.staged.load(account, session);
    const result = acquire(state, runId, ttlSeconds, now);
    if (result.kind !== "held") this.staged.stage(account, session, result.state, now, remembered);
    await this.written();
    return result.kind === "held" ? result : { kind: result.kind, lease: result.lease };
  }

  async renew(account: string, session: string, runId: string, ttlSeconds: number | undefined): Promise<RenewAnswer> {
    const now = this.now();
    const { state, remembered } = this.staged.load(account, session);
    const result = renew(state, runId, ttlSeconds, now);
    if (result.kind === "renewed") this.staged.stage(account, session, result.state, now, remembered);
    await this.written();
    return result.kind === "lost" ? result : { kind: "renewed", lease: result.lease };
  }

  async release(account: string, session: string, runId: string): Promise<{ released: boolean }> {
    const now = this.now();
    const { state, remembered } = this.staged.load(account, session);
    const result = release(state, runId, now);
    if (result.state !== state) this.staged.stage(account, session, result.state, now, remembered);
    await this.written();
    return { released: result.released };
  }

  async check(account: string, session: string, fence: number, runId: string | undefined): Promise<CheckAnswer> {
    const { state } = this.staged.load(account, session);
    const answer = { current: isCurrent(state, fence, runId, this.now()), latestFence: state.lastFence };
    await this.written();
    return answer;
  }

  async view(account: string, session: string): Promise<KeyView> {
    const now = this.now();
    const { lastFence, lease } = this.staged.load(account, session).state;
    await this.written();
    return { lastFence, live: isLive(lease, now) ? lease : null, now };
  }

  // Data under a lease (lease-data.ts in the Worker). A write is checked against the key's lease
  // record as staged (the latest decision) and answered only once that record is written too.

  /** Whether `runId` with `fence` may write now: asked before a large value is streamed to R2. */
  async checkData(account: string, session: string, runId: string, fence: number): Promise<DataWriteVerdict> {
    const verdict = checkDataWrite(this.staged.load(account, session).state, runId, fence, this.now());
    await this.written();
    return verdict;
  }

  /**
   * Stores one value if the writer holds the lease with this fence now (with `ifAbsent`, only if
   * the key has none: `kept`); `garbage` is an R2 object no row names any more.
   */
  async putData(
    account: string, session: string, key: string, runId: string, fence: number, value: StoredValue, ifAbsent = false,
  ): Promise<DataPutAnswer> {
    const now = this.now();
    const verdict = checkDataWrite(this.staged.load(account, session).state, runId, fence, now);
    const stored: DataPutAnswer = verdict.ok ? this.data.put(account, session, key, fence, value, now, ifAbsent) : verdict;
    await this.written();
    return stored;
  }

  async getData(account: string, session: string, key: string): Promise<DataRow | null> {
    return this.data.get(account, session, key);
  }

  /** One page of keys under `prefix` after `after`: inline values within the page's byte budget. */
  async listData(
    account: string, session: string, prefix: string, after: string | null, desc: boolean, limit: number,
  ): Promise<{ rows: DataRow[]; more: boolean; usage: DataUsage }> {
    const rows = this.data.list(account, session, prefix, after, desc, limit + 1);
    const { take, more } = pageSize(rows, limit, LIMITS.leaseDataPageBytes);
    return { rows: rows.slice(0, take), more, usage: this.data.usage(account, session) };
  }

  /** Deletes a batch of keys under `prefix` if the writer holds the lease with this fence now. */
  async deleteData(
    account: string, session: string, prefix: string, runId: string, fence: number,
  ): Promise<DataWriteVerdict & { deleted?: number; more?: boolean; garbage?: string[] }> {
    const verdict = checkDataWrite(this.staged.load(account, session).state, runId, fence, this.now());
    const result = verdict.ok ? this.data.deletePrefix(account, session, prefix) : null;
    await this.written();
    return result ? { ok: true, deleted: result.deleted, more: result.more, garbage: result.r2Keys } : verdict;
  }

  // The three below wait for what is staged to be written through written(), never flush it
  // themselves: a flush of theirs that failed would drop decisions whose requests, waiting on the
  // next batch, would then be answered as if they were stored.

  /** Prunes keys idle since before `now - retentionMs`; tests drive it with a `now` in the future. */
  async pruneIdle(now: number, retentionMs?: number, limit = Number.MAX_SAFE_INTEGER): Promise<number> {
    await this.written();
    return this.store.prune(now, retentionMs, limit);
  }

  async keyCount(): Promise<number> {
    await this.written();
    return this.store.keyCount();
  }

  /** GET /metrics: this shard's session leases of one account, active and expired. */
  async leaseCounts(account: string): Promise<{ active: number; expired: number }> {
    await this.written();
    return this.store.accountCounts(account, this.now());
  }
}

/** The shard that owns the (account, session) key in this deployment. */
export function leaseShardStub(env: Env, account: string, session: string): DurableObjectStub<LeaseShard> {
  return leaseShardAt(env, shardOf(account, session, leaseShardCount(env)));
}

/** Shard number `index` (0-based) of this deployment. */
export function leaseShardAt(env: Env, index: number): DurableObjectStub<LeaseShard> {
  return env.LEASES.get(env.LEASES.idFromName(`lease-shard-${index}`));
}
