// The four measured scenarios, written once against the System seam so baton and etcd run the
// same steps. Every trial uses fresh names and stops what it started before returning.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { DEV_TOKEN, ROOT } from "../../test/e2e/wrangler-dev.ts";
import { BatonCandidate, EtcdCandidate, type Candidate } from "./candidates.ts";
import { EtcdGateway } from "./etcd.ts";

export type SystemName = "baton" | "etcd";

export interface System {
  name: SystemName;
  url: string;
  ttlSeconds: number;
  /** A name nobody used before: an agent name for baton, a key prefix for etcd. */
  freshName(kind: string): string;
  candidate(name: string, machine: string): Candidate;
  /** One acquisition of a fresh key; resolves once the caller holds it. */
  acquire(key: string): Promise<void>;
}

const TRIAL_TIMEOUT_MS = 15_000;
let counter = 0;

export function batonSystem(url: string, ttlSeconds: number, sessionLeases: boolean): System {
  return {
    name: "baton", url, ttlSeconds,
    freshName: (kind) => `bench-${kind}-${process.pid}-${++counter}`,
    candidate: (name, machine) => new BatonCandidate(url, name, machine, ttlSeconds * 1000),
    acquire: sessionLeases ? (key) => acquireSessionLease(url, key, ttlSeconds) : (key) => claimServeLease(url, key, ttlSeconds),
  };
}

export function etcdSystem(url: string, ttlSeconds: number): System {
  const gw = new EtcdGateway(url);
  return {
    name: "etcd", url, ttlSeconds,
    freshName: (kind) => `bench/${kind}/${process.pid}/${++counter}/`,
    candidate: (name) => new EtcdCandidate(gw, name, ttlSeconds),
    acquire: async (key) => {
      const lease = await gw.grant(ttlSeconds);
      const r = await gw.createIfAbsent(key, "holder", lease);
      if (!r.created) throw new Error(`etcd key ${key} was already taken`);
    },
  };
}

async function acquireSessionLease(url: string, session: string, ttlSeconds: number): Promise<void> {
  const res = await fetch(`${url}/leases/${session}/acquire`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id: randomUUID(), ttl_seconds: Math.max(1, Math.round(ttlSeconds)) }),
  });
  const body = await res.text();
  if (res.status !== 200 && res.status !== 201) throw new Error(`acquire ${session} answered ${res.status}: ${body}`);
}

async function claimServeLease(url: string, agent: string, ttlSeconds: number): Promise<void> {
  const c = new BatonCandidate(url, agent, "bench", ttlSeconds * 1000);
  try {
    await c.leading;
  } finally {
    c.close();
  }
}

/** True when the coordinator serves the session-lease API (POST /leases/{session}/acquire). */
export async function hasSessionLeases(url: string): Promise<boolean> {
  try {
    await acquireSessionLease(url, `bench-probe-${randomUUID()}`, 5);
    return true;
  } catch {
    return false;
  }
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

/** (4) `keys` acquisitions of fresh keys, `concurrency` at a time: per-acquisition latency and rate. */
export async function acquisitionRound(sys: System, keys: number, concurrency: number): Promise<{ latencies: number[]; perSecond: number }> {
  const base = sys.freshName("acquire");
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < keys) {
      const key = sys.name === "etcd" ? `${base}${next++}` : `${base}-${next++}`;
      const t0 = performance.now();
      await sys.acquire(key);
      latencies.push(performance.now() - t0);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { latencies, perSecond: keys / ((performance.now() - start) / 1000) };
}
