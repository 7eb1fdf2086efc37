// etcd on loopback for the side-by-side benchmark: installs Debian's etcd-server if missing,
// starts a single member with a temporary data dir on free ports, and talks to it through the v3
// JSON gateway (plain fetch), so no etcd client library is needed.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, isPortLost, PortLost, retryLostPort } from "../../test/e2e/wrangler-dev.ts";

export interface EtcdServer {
  url: string;
  version: string;
  stop(): Promise<void>;
}

/** Installs etcd-server and etcd-client with apt when /usr/bin/etcd is missing (needs root or sudo). */
export function ensureEtcdInstalled(): void {
  if (existsSync("/usr/bin/etcd")) return;
  const policy = spawnSync("apt-cache", ["policy", "etcd-server"], { encoding: "utf8" });
  if (!/Candidate: (?!\(none\))/.test(policy.stdout ?? "")) throw new Error("etcd-server is not available from apt on this machine");
  const sudo = process.getuid?.() === 0 ? "" : "sudo ";
  const cmd = `${sudo}apt-get update -qq && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq etcd-server etcd-client`;
  console.log(`$ ${cmd}`);
  const r = spawnSync(cmd, { shell: true, stdio: ["ignore", "ignore", "inherit"] });
  if (r.status !== 0 || !existsSync("/usr/bin/etcd")) throw new Error("installing etcd-server failed");
}

/** Starts one etcd member on 127.0.0.1; resolves once it answers. A port lost before etcd binds it: new ports. */
export function startEtcd(): Promise<EtcdServer> {
  return retryLostPort(startEtcdOnce);
}

async function startEtcdOnce(): Promise<EtcdServer> {
  const [client, peer] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), "baton-bench-etcd-"));
  const url = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const proc: ChildProcess = spawn("/usr/bin/etcd", [
    "--name", "bench", "--data-dir", dataDir,
    "--listen-client-urls", url, "--advertise-client-urls", url,
    "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl,
    "--initial-cluster", `bench=${peerUrl}`, "--log-level", "error",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let errOut = "";
  proc.stderr!.on("data", (d) => (errOut += d));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) {
      await stop();
      throw new (isPortLost(errOut) ? PortLost : Error)(`etcd exited ${proc.exitCode}: ${errOut}`);
    }
    try {
      const res = await fetch(`${url}/version`);
      if (res.ok) {
        const body = (await res.json()) as { etcdserver?: string };
        // A write proves the member has elected itself and serves the gateway.
        await new EtcdGateway(url).call("/v3/kv/put", { key: b64("bench/ready"), value: b64("1") });
        return { url, version: body.etcdserver ?? "?", stop };
      }
    } catch {
      // not ready yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`etcd did not start: ${errOut}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function b64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

export interface KeyValue {
  key: string;
  create_revision?: string;
  mod_revision?: string;
  lease?: string;
}

interface Header {
  revision?: string;
}

/** The v3 JSON gateway: int64 values stay strings, keys and values are base64. */
export class EtcdGateway {
  constructor(readonly url: string) {}

  async call<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    const res = await fetch(this.url + path, { method: "POST", body: JSON.stringify(body), signal });
    const text = await res.text();
    if (!res.ok) throw new Error(`etcd ${path} answered ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  }

  async grant(ttlSeconds: number): Promise<string> {
    return (await this.call<{ ID: string }>("/v3/lease/grant", { TTL: ttlSeconds })).ID;
  }

  /** One keepalive round trip; returns the remaining TTL (0 once the lease is gone). */
  async keepAlive(lease: string): Promise<number> {
    const body = await this.call<{ result?: { TTL?: string } }>("/v3/lease/keepalive", { ID: lease });
    return Number(body.result?.TTL ?? 0);
  }

  async revoke(lease: string): Promise<void> {
    await this.call("/v3/lease/revoke", { ID: lease });
  }

  /** Creates key with the lease unless it exists; returns its create revision either way. */
  async createIfAbsent(key: string, value: string, lease: string): Promise<{ created: boolean; revision: string }> {
    const body = await this.call<{ succeeded?: boolean; header: Header; responses?: { response_range?: { kvs?: KeyValue[] } }[] }>(
      "/v3/kv/txn",
      {
        compare: [{ key: b64(key), target: "CREATE", result: "EQUAL", create_revision: "0" }],
        success: [{ request_put: { key: b64(key), value: b64(value), lease } }],
        failure: [{ request_range: { key: b64(key) } }],
      },
    );
    if (body.succeeded) return { created: true, revision: body.header.revision! };
    const kv = body.responses?.[0]?.response_range?.kvs?.[0];
    return { created: false, revision: kv?.create_revision ?? "0" };
  }

  /** The newest key under the prefix created before maxCreateRevision, or null. */
  async lastCreatedBefore(prefix: string, maxCreateRevision: bigint): Promise<{ kv: KeyValue | null; revision: string }> {
    const body = await this.call<{ header: Header; kvs?: KeyValue[] }>("/v3/kv/range", {
      key: b64(prefix), range_end: b64(prefixEnd(prefix)), limit: 1,
      sort_order: "DESCEND", sort_target: "CREATE", max_create_revision: String(maxCreateRevision),
    });
    return { kv: body.kvs?.[0] ?? null, revision: body.header.revision ?? "0" };
  }

  async deleteKey(key: string): Promise<void> {
    await this.call("/v3/kv/deleterange", { key: b64(key) });
  }

  /**
   * Resolves when keyB64 is deleted at or after fromRevision. `onWatching` runs once the
   * server confirmed the watch, so callers know the waiter is in place.
   */
  async waitDelete(keyB64: string, fromRevision: string, signal: AbortSignal, onWatching?: () => void): Promise<void> {
    const res = await fetch(`${this.url}/v3/watch`, {
      method: "POST", signal,
      body: JSON.stringify({ create_request: { key: keyB64, start_revision: fromRevision } }),
    });
    if (!res.ok || !res.body) throw new Error(`etcd watch answered ${res.status}`);
    const decoder = new TextDecoder();
    let buffer = "";
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) throw new Error("etcd watch stream ended");
        buffer += decoder.decode(value, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (!line) continue;
          const msg = JSON.parse(line) as { result?: { created?: boolean; events?: { type?: string }[] }; error?: unknown };
          if (msg.error) throw new Error(`etcd watch error: ${JSON.stringify(msg.error)}`);
          if (msg.result?.created) onWatching?.();
          if (msg.result?.events?.some((e) => e.type === "DELETE")) return;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }
}

function prefixEnd(prefix: string): string {
  const bytes = Buffer.from(prefix, "utf8");
  bytes[bytes.length - 1]! += 1;
  return bytes.toString("utf8");
}
