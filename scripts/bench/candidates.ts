// One election candidate per system, with the same shape, so every scenario runs the same steps
// against baton, etcd and the floor probe. Baton and etcd heartbeat every TTL/3 (what etcd's client
// does for its leases); the floor probe has no election and no heartbeat.
import WebSocket from "ws";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { PING_TEXT } from "../../worker/wire/protocol.ts";
import { EtcdGateway } from "./etcd.ts";

/** What the floor probe's object sends the other sockets of a room (HANDOFF_FRAME in floor-worker.ts). */
const FLOOR_HANDOFF_FRAME = '{"type":"held"}';

export interface Candidate {
  /** Resolves once the candidate is in line: it leads, or it waits with the server knowing it. */
  readonly registered: Promise<void>;
  /** Resolves when the candidate learns it leads. */
  readonly leading: Promise<void>;
  /** Gives the lead up at once, as the holder of a graceful handoff does. */
  resign(): Promise<void>;
  /** Stops heartbeats and drops the connection. */
  close(): void;
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** A serve connection that claims the agent's lease; `held:true` from the coordinator means it leads. */
export class BatonCandidate implements Candidate {
  private readonly ws: WebSocket;
  private readonly reg = deferred();
  private readonly lead = deferred();
  private readonly timer: NodeJS.Timeout;
  readonly registered = this.reg.promise;
  readonly leading = this.lead.promise;
  fence = 0;
  /** The close code once the socket closed, null while it is open. */
  closeCode: number | null = null;

  constructor(baseUrl: string, agent: string, machine: string, ttlMs: number, pingText = PING_TEXT) {
    const url = `${baseUrl.replace(/^http/, "ws")}/agents/${agent}/serve?machine=${encodeURIComponent(machine)}`;
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    this.ws.on("open", () => this.ws.send(JSON.stringify({ type: "serve_lease", op: "claim" })));
    this.ws.on("message", (data) => this.onFrame(String(data)));
    const fail = (e: Error) => (this.reg.reject(e), this.lead.reject(e));
    this.ws.on("error", fail);
    this.ws.on("close", (code) => {
      this.closeCode = code;
      fail(new Error(`baton socket closed (${code})`));
    });
    this.timer = setInterval(() => this.ws.readyState === WebSocket.OPEN && this.ws.send(pingText), Math.max(50, ttlMs / 3));
  }

  private onFrame(text: string): void {
    const frame = JSON.parse(text) as { type?: string; held?: boolean; fence?: number };
    if (frame.type !== "serve_lease") return;
    this.reg.resolve();
    if (frame.held) {
      this.fence = frame.fence ?? 0;
      this.lead.resolve();
    }
  }

  async resign(): Promise<void> {
    this.ws.send(JSON.stringify({ type: "serve_lease", op: "release" }));
  }

  close(): void {
    clearInterval(this.timer);
    this.ws.terminate();
  }
}

/**
 * etcd's concurrency.Election over the JSON gateway: a key per candidate under the prefix, bound
 * to a lease kept alive every TTL/3; the key with the lowest create revision leads, and each
 * other candidate waits for the deletion of the next older key.
 */
export class EtcdCandidate implements Candidate {
  private readonly reg = deferred();
  private readonly lead = deferred();
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private lease: string | null = null;
  private key: string | null = null;
  readonly registered = this.reg.promise;
  readonly leading = this.lead.promise;

  constructor(private readonly gw: EtcdGateway, private readonly prefix: string, private readonly ttlSeconds: number) {
    this.campaign().catch((e: Error) => {
      if (!this.abort.signal.aborted) (this.reg.reject(e), this.lead.reject(e));
    });
  }

  private async campaign(): Promise<void> {
    const lease = await this.gw.grant(this.ttlSeconds);
    this.lease = lease;
    this.timer = setInterval(() => void this.gw.keepAlive(lease).catch(() => {}), (this.ttlSeconds * 1000) / 3);
    this.key = `${this.prefix}${BigInt(lease).toString(16)}`;
    const { revision } = await this.gw.createIfAbsent(this.key, "candidate", lease);
    const myRevision = BigInt(revision);
    for (;;) {
      const older = await this.gw.lastCreatedBefore(this.prefix, myRevision - 1n);
      if (older.kv === null) break;
      await this.gw.waitDelete(older.kv.key, String(BigInt(older.revision) + 1n), this.abort.signal, () => this.reg.resolve());
    }
    this.reg.resolve();
    this.lead.resolve();
  }

  async resign(): Promise<void> {
    if (this.key) await this.gw.deleteKey(this.key);
  }

  close(): void {
    clearInterval(this.timer);
    this.abort.abort();
    if (this.lease) void this.gw.revoke(this.lease).catch(() => {});
  }
}

/**
 * A socket of the floor probe's room (scripts/bench/floor): the first one in holds, a later one
 * leads once the object tells it `{"type":"held"}` after the holder's frame or close.
 */
export class FloorCandidate implements Candidate {
  private readonly ws: WebSocket;
  private readonly reg = deferred();
  private readonly lead = deferred();
  readonly registered = this.reg.promise;
  readonly leading = this.lead.promise;

  constructor(baseUrl: string, room: string, holder: boolean) {
    this.ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/rooms/${room}`);
    this.ws.on("open", () => {
      this.reg.resolve();
      if (holder) this.lead.resolve();
    });
    this.ws.on("message", (data) => String(data) === FLOOR_HANDOFF_FRAME && this.lead.resolve());
    const fail = (e: Error) => (this.reg.reject(e), this.lead.reject(e));
    this.ws.on("error", fail);
    this.ws.on("close", (code) => fail(new Error(`floor socket closed (${code})`)));
  }

  async resign(): Promise<void> {
    this.ws.send('{"type":"release"}');
  }

  close(): void {
    this.ws.terminate();
  }
}
