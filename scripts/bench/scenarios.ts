// The measured scenarios, written once against the System seam so baton, etcd and the floor probe
// run the same steps. Every trial uses fresh names and stops what it started before returning.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { DEV_TOKEN, ROOT } from "../../test/e2e/wrangler-dev.ts";
import { BatonCandidate, EtcdCandidate, FloorCandidate, type Candidate } from "./candidates.ts";
import { EtcdGateway } from "./etcd.ts";
import { shardOf } from "../../worker/rules/session-lease.ts";

export type SystemName = "baton" | "etcd" | "floor";

export interface System {
  name: SystemName;
  url: string;
  ttlSeconds: number;
  /** A name nobody used before: an agent name for baton, a key prefix for etcd, a room for the floor. */
  freshName(kind: string): string;
  candidate(name: string, machine: string): Candidate;
}

/** One client of a lock service: one identity for all its attempts (a run_id; an etcd session lease). */
export interface LeaseClient {
  /** One acquisition attempt, one round trip: true when granted, false when another client holds the key. */
  acquire(key: string): Promise<boolean>;
  release(key: string): Promise<void>;
  close(): Promise<void>;
}

export interface LeaseSystem {
  name: SystemName;
  freshName(kind: string): string;
  client(): Promise<LeaseClient>;
}

const TRIAL_TIMEOUT_MS = 15_000;
let counter = 0;

export function batonSystem(url: string, ttlSeconds: number): System {
  return {
    name: "baton", url, ttlSeconds,
    freshName: (kind) => `bench-${kind}-${process.pid}-${++counter}`,
    candidate: (name, machine) => new BatonCandidate(url, name, machine, ttlSeconds * 1000),
  };
}

export function etcdSystem(url: string, ttlSeconds: number): System {
  const gw = new EtcdGateway(url);
  return {
    name: "etcd", url, ttlSeconds,
    freshName: (kind) => `bench/${kind}/${process.pid}/${++counter}/`,
    candidate: (name) => new EtcdCandidate(gw, name, ttlSeconds),
  };
}

/** The floor probe: a room of the minimal object in scripts/bench/floor; the first socket in holds. */
export function floorSystem(url: string, ttlSeconds: number): System {
  return {
    name: "floor", url, ttlSeconds,
    freshName: (kind) => `floor-${kind}-${process.pid}-${++counter}`,
    candidate: (name, machine) => new FloorCandidate(url, name, machine === "holder"),
  };
}

/** Session leases over HTTP: each client is one run (run_id) asking POST /leases/{session}/acquire. */
export function batonLeases(url: string, ttlSeconds: number): LeaseSystem {
  const headers = { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" };
  const post = (path: string, body: unknown) => fetch(`${url}/leases/${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  return {
    name: "baton",
    freshName: (kind) => `bench-${kind}-${process.pid}-${++counter}`,
    client: async () => {
      const run_id = randomUUID();
      return {
        acquire: async (key) => {
          const res = await post(`${key}/acquire`, { run_id, ttl_seconds: ttlSeconds });
          const body = await res.text();
          if (res.status === 409) return false;
          if (res.status !== 200 && res.status !== 201) throw new Error(`acquire ${key} answered ${res.status}: ${body}`);
          return true;
        },
        release: async (key) => {
          const res = await post(`${key}/release`, { run_id });
          if (!res.ok) throw new Error(`release ${key} answered ${res.status}: ${await res.text()}`);
          await res.text();
        },
        close: async () => {},
      };
    },
  };
}

/**
 * etcd. "per-key": every attempt grants its own lease and then creates the key with it (two round
 * trips), which is what baton's per-key TTL takes in etcd. "session": each client grants one lease
 * before it starts, as concurrency.Mutex does, and every attempt is one create-if-absent txn.
 * Release deletes the key.
 */
export function etcdLeases(url: string, ttlSeconds: number, mode: "per-key" | "session"): LeaseSystem {
  const gw = new EtcdGateway(url);
  return {
    name: "etcd",
    freshName: (kind) => `bench/${kind}/${process.pid}/${++counter}/`,
    client: async () => {
      const session = mode === "session" ? await gw.grant(ttlSeconds) : null;
      const keepAlive = session && setInterval(() => void gw.keepAlive(session).catch(() => {}), (ttlSeconds * 1000) / 3);
      return {
        acquire: async (key) => (await gw.createIfAbsent(key, "holder", session ?? await gw.grant(ttlSeconds))).created,
        release: (key) => gw.deleteKey(key),
        close: async () => {
          if (keepAlive) clearInterval(keepAlive);
          if (session) await gw.revoke(session).catch(() => {});
        },
      };
    },
  };
}

/**
 * The floor of an acquisition: one Worker request, one RPC to one warm object that writes a row.
 * With `shards`, the object is the key's shard among that many, picked as baton picks its lease
 * shards: the floor of a sharded store, where fresh keys in flight do not share a commit.
 */
export function floorLeases(url: string, shards?: number): LeaseSystem {
  return {
    name: "floor",
    freshName: (kind) => `floor-${kind}-${process.pid}-${++counter}`,
    client: async () => ({
      acquire: async (key) => {
        const room = shards === undefined ? "acquisitions" : `shard-${shardOf("dev", key, shards)}`;
        const res = await fetch(`${url}/write/${room}`, { method: "POST" });
        const body = await res.text();
        if (res.status !== 201) throw new Error(`floor write answered ${res.status}: ${body}`);
        return true;
      },
      release: async () => {},
      close: async () => {},
    }),
  };
}

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${TRIAL_TIMEOUT_MS} ms`)), TRIAL_TIMEOUT_MS);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** (1) Holder resigns; milliseconds until the standby knows it leads. */
export async function gracefulTrial(sys: System): Promise<number> {
  const name = sys.freshName("graceful");
  const holder = sys.candidate(name, "holder");
  let standby: Candidate | null = null;
  try {
    await withTimeout(holder.leading, `${sys.name} holder election`);
    standby = sys.candidate(name, "standby");
    await withTimeout(standby.registered, `${sys.name} standby registration`);
    const t0 = performance.now();
    await holder.resign();
    await withTimeout(standby.leading, `${sys.name} graceful handoff`);
    return performance.now() - t0;
  } finally {
    holder.close();
    standby?.close();
  }
}

/** Starts a holder in its own process and resolves once it leads. */
async function spawnHolder(sys: System, name: string): Promise<{ proc: ChildProcess; exited: Promise<unknown> }> {
  const script = join(ROOT, "scripts/bench/candidate-process.ts");
  const proc = spawn(process.execPath, ["--import", "tsx", script, sys.name, sys.url, name, String(sys.ttlSeconds)], {
    cwd: ROOT, stdio: ["pipe", "pipe", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (d) => (err += d));
  const exited = new Promise((r) => proc.once("exit", r));
  const leading = new Promise<void>((resolve, reject) => {
    proc.stdout!.on("data", (d) => String(d).includes("leading") && resolve());
    void exited.then(() => reject(new Error(`holder process exited ${proc.exitCode}: ${err}`)));
  });
  try {
    await withTimeout(leading, `${sys.name} holder process election`);
  } catch (e) {
    proc.kill("SIGKILL");
    await exited;
    throw e;
  }
  return { proc, exited };
}

/** (2) SIGKILL or (3) SIGSTOP of the holder process; milliseconds until the standby leads. */
export async function signalTrial(sys: System, signal: "SIGKILL" | "SIGSTOP"): Promise<number> {
  const name = sys.freshName(signal === "SIGKILL" ? "crash" : "stop");
  const { proc, exited } = await spawnHolder(sys, name);
  const standby = sys.candidate(name, "standby");
  try {
    await withTimeout(standby.registered, `${sys.name} standby registration`);
    const t0 = performance.now();
    proc.kill(signal);
    await withTimeout(standby.leading, `${sys.name} failover after ${signal}`);
    return performance.now() - t0;
  } finally {
    standby.close();
    proc.kill("SIGKILL");
    await exited;
  }
}

export interface AcquireRound {
  latencies: number[];
  /** Attempts answered per second, granted or not. */
  perSecond: number;
  granted: number;
}

/** `concurrency` clients make `attempts` attempts in all, each timed; a granted key is released if `release`. */
async function leaseRound(sys: LeaseSystem, attempts: number, concurrency: number, keyOf: (i: number) => string, release: boolean): Promise<AcquireRound> {
  const clients = await Promise.all(Array.from({ length: concurrency }, () => sys.client()));
  const latencies: number[] = [];
  let granted = 0;
  let next = 0;
  try {
    const run = async (client: LeaseClient) => {
      while (next < attempts) {
        const key = keyOf(next++);
        const t0 = performance.now();
        const ok = await client.acquire(key);
        latencies.push(performance.now() - t0);
        if (!ok) continue;
        granted += 1;
        if (release) await client.release(key);
      }
    };
    const start = performance.now();
    await Promise.all(clients.map(run));
    return { latencies, perSecond: attempts / ((performance.now() - start) / 1000), granted };
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

/** (4) Acquisitions of keys nobody used before, `concurrency` in flight. Every one must be granted. */
export async function freshKeysRound(sys: LeaseSystem, attempts: number, concurrency: number): Promise<AcquireRound> {
  const base = sys.freshName("fresh");
  const round = await leaseRound(sys, attempts, concurrency, (i) => `${base}k${i}`, false);
  if (round.granted !== attempts) throw new Error(`${sys.name}: only ${round.granted} of ${attempts} fresh keys were granted`);
  return round;
}

/** (5) `concurrency` clients contend for one key; whoever is granted releases it at once and tries again. */
export function hotKeyRound(sys: LeaseSystem, attempts: number, concurrency: number): Promise<AcquireRound> {
  const key = `${sys.freshName("hot")}key`;
  return leaseRound(sys, attempts, concurrency, () => key, true);
}
