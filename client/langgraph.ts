// A LangGraph checkpointer whose writes for a thread are fenced by baton (`@langchain/langgraph-
// checkpoint`, an optional peer dependency). Each thread is a session lease (threadSession); its
// checkpoints and pending writes are data under that lease (client/lease-data.ts), stored only
// while the writer holds the lease with its fence, by the coordinator's clock. A second worker on
// the same thread cannot fork it: its writes are refused (stale_fence, not_holder,
// lease_expired), the saver throws LeaseLostError and aborts the lease's signal so it stops.
// Reads need no lease. Not fenced: what a node does outside the checkpointer (see the guide).
import {
  BaseCheckpointSaver, compareWritesSortKeys, TASKS, WRITES_IDX_MAP, maxChannelVersion, writesSortKey,
  type ChannelVersions, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointPendingWrite,
  type CheckpointTuple, type PendingWrite, type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { CoordinatorError, LeaseLostError } from "./errors.ts";
import type { Connection } from "./http.ts";
import { deleteLeaseData, getLeaseData, listLeaseData, putLeaseData, type LeaseWriter } from "./lease-data.ts";
import { withSessionLease, type SessionLease, type SessionLeaseOptions } from "./session-lease.ts";
import { SESSION_NAME } from "../worker/wire/protocol.ts";

type Config = Parameters<BaseCheckpointSaver["getTuple"]>[0];

/** The lease a write is made under: a SessionLease from withSessionLease, or any holder with these fields. */
export interface ThreadLease extends LeaseWriter {
  /** Told when the coordinator refuses a write under this lease (SessionLease aborts its signal). */
  refused?(error: LeaseLostError): void;
}

export interface BatonSaverOptions extends Connection {
  /** The lease of the one thread this saver writes (from withThreadLease or withSessionLease on threadSession). */
  lease?: ThreadLease;
  /** Or: the lease for any thread this saver writes, e.g. kept per thread by your worker. */
  leaseFor?: (threadId: string) => ThreadLease | Promise<ThreadLease>;
  /** Prefix of the session names of threads (default "langgraph"): threads of one app share one. */
  namespace?: string;
  serde?: SerializerProtocol;
}

const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$/;
const REFUSALS = new Set(["stale_fence", "not_holder", "lease_expired", "lease_lost"]);

/**
 * The session lease of a LangGraph thread: `<namespace>.<thread_id>` when that is a valid session
 * name, else `<namespace>-` and a SHA-256 of the thread id (the separator keeps the two apart).
 */
export async function threadSession(threadId: string, namespace = "langgraph"): Promise<string> {
  if (!NAMESPACE.test(namespace)) throw new Error(`a namespace is 1-48 chars of A-Z, a-z, 0-9, '_' or '-', starting with a letter or digit: ${JSON.stringify(namespace)}`);
  const literal = `${namespace}.${threadId}`;
  if (SESSION_NAME.test(literal)) return literal;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(threadId)));
  return `${namespace}-${[...digest.slice(0, 20)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Holds the thread's lease for as long as fn runs (withSessionLease on threadSession: waits
 * while another worker holds it when `wait` is set, renews, aborts `lease.signal` when lost) and
 * hands fn a saver bound to it. Pass `lease.signal` to the graph's invoke to stop at once.
 */
export function withThreadLease<T>(
  threadId: string, fn: (saver: BatonSaver, lease: SessionLease) => Promise<T> | T,
  options: SessionLeaseOptions & { namespace?: string; serde?: SerializerProtocol },
): Promise<T> {
  return threadSession(threadId, options.namespace).then((session) =>
    withSessionLease(session, (lease) => fn(new BatonSaver({ ...options, lease }), lease), options));
}

const enc = encodeURIComponent;
const b64 = (bytes: Uint8Array) => {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
};
const unb64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const parse = <T>(bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as T;

/**
 * Keys, each part %-encoded: c/{ns}/{checkpoint_id} (the checkpoint without its channel values),
 * v/{ns}/{channel}/{version} (one value of a channel, written only when its version is new, as
 * LangGraph's Postgres saver does), w/{ns}/{checkpoint_id}/{task_id}/{idx} (pending writes).
 */
const checkpointKey = (ns: string, id: string) => `c/${enc(ns)}/${enc(id)}`;
const valueKey = (ns: string, channel: string, version: string | number) => `v/${enc(ns)}/${enc(channel)}/${enc(String(version))}`;
const writesPrefix = (ns: string, id: string) => `w/${enc(ns)}/${enc(id)}/`;

/** What a channel's version holds when the channel has no value at it. */
const EMPTY: [string, string] = ["empty", ""];

interface StoredCheckpoint { parent: string | null; checkpoint: [string, string]; metadata: [string, string] }
interface StoredWrite { task_id: string; task_path: string; idx: number; channel: string; value: [string, string] }

export class BatonSaver extends BaseCheckpointSaver {
  private readonly conn: Connection;
  private readonly namespace: string;

  constructor(private readonly options: BatonSaverOptions) {
    super(options.serde);
    this.conn = { url: options.url, token: options.token, fetch: options.fetch };
    this.namespace = options.namespace ?? "langgraph";
    if (!NAMESPACE.test(this.namespace)) throw new Error(`a BatonSaver namespace is 1-48 chars of A-Z, a-z, 0-9, '_' or '-': ${JSON.stringify(this.namespace)}`);
  }

  async getTuple(config: Config): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) return undefined;
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const session = await threadSession(threadId, this.namespace);
    const id = config.configurable?.checkpoint_id as string | undefined;
    if (id) {
      const bytes = await getLeaseData(this.conn, session, checkpointKey(ns, id));
      return bytes === null ? undefined : this.tuple(session, threadId, ns, id, parse<StoredCheckpoint>(bytes));
    }
    for await (const item of listLeaseData(this.conn, session, { prefix: `c/${enc(ns)}/`, order: "desc" })) {
      return this.tuple(session, threadId, ns, decodeURIComponent(item.key.split("/")[2]!), parse<StoredCheckpoint>(await item.value()));
    }
    return undefined;
  }

  /** Newest first. Lists one thread (configurable.thread_id is required): threads are separate leases. */
  async *list(config: Config, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) throw new Error("BatonSaver lists one thread at a time: pass configurable.thread_id (each thread is its own lease)");
    const ns = config.configurable?.checkpoint_ns as string | undefined;
    const only = config.configurable?.checkpoint_id as string | undefined;
    const before = options.before?.configurable?.checkpoint_id as string | undefined;
    const session = await threadSession(threadId, this.namespace);
    let left = options.limit ?? Infinity;
    const prefix = ns === undefined ? "c/" : `c/${enc(ns)}/`;
    const after = ns !== undefined && before !== undefined ? checkpointKey(ns, before) : undefined;
    for await (const item of listLeaseData(this.conn, session, { prefix, order: "desc", after })) {
      if (left <= 0) return;
      const [, nsPart, idPart] = item.key.split("/");
      const id = decodeURIComponent(idPart!);
      if ((only && id !== only) || (before !== undefined && id >= before)) continue;
      const stored = parse<StoredCheckpoint>(await item.value());
      if (options.filter) {
        const metadata = (await this.load(stored.metadata)) as Record<string, unknown>;
        if (!Object.entries(options.filter).every(([k, v]) => metadata[k] === v)) continue;
      }
      left--;
      yield await this.tuple(session, threadId, decodeURIComponent(nsPart!), id, stored);
    }
  }

  /** Writes the values of the channels in `newVersions` first, then the checkpoint that names them. */
  async put(config: Config, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<Config> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) throw new Error("BatonSaver.put needs configurable.thread_id: the thread names the lease its checkpoints are written under");
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const values = checkpoint.channel_values as Record<string, unknown>;
    const changed = await Promise.all(Object.entries(newVersions).map(async ([channel, version]) => (
      { key: valueKey(ns, channel, version), value: channel in values ? await this.dump(values[channel]) : EMPTY })));
    const stored: StoredCheckpoint = {
      parent: (config.configurable?.checkpoint_id as string | undefined) ?? null,
      checkpoint: await this.dump({ ...checkpoint, channel_values: {} }),
      metadata: await this.dump(metadata),
    };
    await this.write(threadId, async (writer) => {
      await Promise.all(changed.map((c) => putLeaseData(this.conn, writer, c.key, json(c.value))));
      await putLeaseData(this.conn, writer, checkpointKey(ns, checkpoint.id), json(stored));
    });
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  /** Regular writes keep the first value stored for (task, index), as LangGraph's savers do; special ones replace. */
  async putWrites(config: Config, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    const threadId = config.configurable?.thread_id as string | undefined;
    const id = config.configurable?.checkpoint_id as string | undefined;
    if (threadId === undefined) throw new Error("BatonSaver.putWrites needs configurable.thread_id");
    if (id === undefined) throw new Error("BatonSaver.putWrites needs configurable.checkpoint_id: writes belong to a checkpoint");
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const rows = await Promise.all(writes.map(async ([channel, value], i): Promise<StoredWrite> => (
      { task_id: taskId, task_path: taskPath, idx: WRITES_IDX_MAP[channel] ?? i, channel, value: await this.dump(value) })));
    await this.write(threadId, (writer) => Promise.all(rows.map((row) =>
      putLeaseData(this.conn, writer, `${writesPrefix(ns, id)}${enc(taskId)}/${row.idx}`, json(row), { ifAbsent: row.idx >= 0 }))));
  }

  /** Deletes every checkpoint and write of the thread, under its lease. */
  async deleteThread(threadId: string): Promise<void> {
    await this.write(threadId, (writer) => deleteLeaseData(this.conn, writer, ""));
  }

  /** Runs one fenced write; a refusal becomes LeaseLostError, told to the lease (which aborts its signal). */
  private async write<T>(threadId: string, fn: (writer: LeaseWriter) => Promise<T>): Promise<T> {
    const lease = await this.leaseOf(threadId);
    try {
      return await fn(lease);
    } catch (err) {
      if (!(err instanceof CoordinatorError) || !REFUSALS.has(err.code ?? "")) throw err;
      const lost = new LeaseLostError(
        `baton refused a checkpoint write on LangGraph thread ${threadId} under fence ${lease.fence} (${err.code}): another worker holds the thread now; stop this run`,
        err.code!);
      lease.refused?.(lost);
      throw lost;
    }
  }

  private async leaseOf(threadId: string): Promise<ThreadLease> {
    const session = await threadSession(threadId, this.namespace);
    const lease = this.options.lease ?? (await this.options.leaseFor?.(threadId));
    if (!lease) throw new Error(`BatonSaver writes thread ${threadId} only under its lease: pass \`lease\` (withThreadLease) or \`leaseFor\``);
    if (lease.session !== session) throw new Error(`this BatonSaver holds the lease of ${lease.session}, but thread ${threadId} is session ${session}`);
    return lease;
  }

  private async tuple(session: string, threadId: string, ns: string, id: string, stored: StoredCheckpoint): Promise<CheckpointTuple> {
    const checkpoint = (await this.load(stored.checkpoint)) as Checkpoint;
    const [writes] = await Promise.all([this.writesOf(session, ns, id), this.loadValues(session, ns, checkpoint)]);
    if (checkpoint.v < 4 && stored.parent !== null) await this.migratePendingSends(checkpoint, session, ns, stored.parent);
    const config = (checkpointId: string) => ({ configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } });
    return {
      config: config(id),
      checkpoint,
      metadata: (await this.load(stored.metadata)) as CheckpointMetadata,
      pendingWrites: await Promise.all(writes.map(async (w): Promise<CheckpointPendingWrite> => [w.task_id, w.channel, await this.load(w.value)])),
      ...(stored.parent === null ? {} : { parentConfig: config(stored.parent) }),
    };
  }

  /**
   * Fills in the checkpoint's channel values: for each channel, the value stored at its version. A
   * version no value was written for has none, as LangGraph's own savers read it (only newVersions
   * are stored); a value stored and since lost is an error from the coordinator (a 500, not a 404),
   * which getLeaseData throws, so a graph never resumes from a state that silently lacks it.
   */
  private async loadValues(session: string, ns: string, checkpoint: Checkpoint): Promise<void> {
    const values = checkpoint.channel_values as Record<string, unknown>;
    await Promise.all(Object.entries(checkpoint.channel_versions).map(async ([channel, version]) => {
      const bytes = await getLeaseData(this.conn, session, valueKey(ns, channel, version));
      const stored = bytes === null ? EMPTY : parse<[string, string]>(bytes);
      if (stored[0] !== EMPTY[0]) values[channel] = await this.load(stored);
    }));
  }

  /** A checkpoint's writes in writesSortKey order (task path, task id, index), as live execution applies them. */
  private async writesOf(session: string, ns: string, id: string): Promise<StoredWrite[]> {
    const rows: StoredWrite[] = [];
    for await (const item of listLeaseData(this.conn, session, { prefix: writesPrefix(ns, id) })) rows.push(parse<StoredWrite>(await item.value()));
    return rows.sort((a, b) => compareWritesSortKeys(writesSortKey(a.task_path, a.task_id, a.idx), writesSortKey(b.task_path, b.task_id, b.idx)));
  }

  /** Checkpoints before format 4 kept pending sends as the parent's TASKS writes; LangGraph expects them as a channel. */
  private async migratePendingSends(checkpoint: Checkpoint, session: string, ns: string, parent: string): Promise<void> {
    const sends = await Promise.all((await this.writesOf(session, ns, parent)).filter((w) => w.channel === TASKS).map((w) => this.load(w.value)));
    const values = checkpoint.channel_values as Record<string, unknown>;
    const versions = checkpoint.channel_versions as Record<string, number | string>;
    values[TASKS] = sends;
    versions[TASKS] = Object.keys(versions).length > 0 ? maxChannelVersion(...Object.values(versions)) : this.getNextVersion(undefined);
  }

  private async dump(value: unknown): Promise<[string, string]> {
    const [type, bytes] = await this.serde.dumpsTyped(value);
    return [type, b64(bytes)];
  }

  private load([type, data]: [string, string]): Promise<unknown> {
    return this.serde.loadsTyped(type, unb64(data));
  }
}
