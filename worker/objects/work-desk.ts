// Durable work of one agent: stores messages, pushes them to every serve connection (only the
// runner's copy says run), hands each message out under its own lease (message-leases.ts), and
// accepts idempotent replies, acks and checkpoints: under a message's token, or under the serve
// fence (the older form, single mode only). The agent object owns the sockets and the lease.
import type { LeaseRecord } from "../rules/election.ts";
import { checkFencedWrite } from "../rules/fencing.ts";
import { send, writeConn } from "./connections.ts";
import { MessageStore, type StoredMessage } from "./message-store.ts";
import { messageFrame, MessageLeases, type DeskSocket, type TokenWrite } from "./message-leases.ts";
import { errorFrame, type ClientFrame, type ErrorCode } from "../wire/protocol.ts";

export type { DeskSocket };

type WriteFrame = Extract<ClientFrame, { type: "ack" | "reply" | "checkpoint" | "park" }>;

export class WorkDesk {
  readonly messages: MessageStore;
  readonly leases: MessageLeases;
  /** Told of every write refused by the fence or a message token, before the error frame goes out (for /metrics). */
  onRefused: (code: ErrorCode) => void = () => {};

  constructor(sql: SqlStorage, private readonly lease: () => LeaseRecord, private readonly sockets: () => DeskSocket[]) {
    this.messages = new MessageStore(sql);
    this.leases = new MessageLeases(sql, this.messages, lease, sockets, (s, m, run) => this.push(s, m, run));
    this.leases.onRefused = (code) => this.onRefused(code);
  }

  /** Stores a message, hands it to a runner if one has a free slot, and shows it to every other serve connection. */
  post(text: string, now: number, opts: { group?: string; runTimeoutMs?: number } = {}): StoredMessage {
    const stored = this.messages.add(text, now, opts);
    const runner = this.leases.reconcile(now).get(stored.id);
    for (const s of this.sockets()) {
      if (s.ws !== runner?.ws) this.push(s, stored, false);
    }
    return this.messages.get(stored.id)!;
  }

  /** Takes back what its runner may no longer run, expires deadlines, and hands out queued messages. */
  reconcile(now: number): void {
    this.leases.reconcile(now);
  }

  /** Replays history after a cursor to a reconnecting client; never asks it to run anything. */
  sync(socket: DeskSocket, after: number, req?: string): void {
    const known = Math.min(after, this.messages.lastId());
    if (known > socket.state.cursor) {
      socket.state.cursor = known;
      writeConn(socket.ws, socket.state);
    }
    const page = this.messages.after(after);
    for (const m of page) this.push(socket, m, false);
    send(socket.ws, { type: "result", op: "sync", req, cursor: page.at(-1)?.id ?? after });
  }

  /**
   * An ack, reply, checkpoint or park. With a message token it goes to the message's own lease
   * (MessageLeases.write); without, it is the older fenced form: the agent's checkpoint, or (single
   * mode only) an ack or reply from the holder. An ack or reply is scoped to its message: the first
   * one acknowledges it, and any later one (same key or not) is answered `duplicate: true` with the
   * write that did, so an answer that looks like success always means that message is done.
   */
  write(socket: DeskSocket, frame: WriteFrame, now: number): void {
    if (frame.type === "park" || (frame.token !== undefined && frame.id !== undefined)) {
      return this.leases.write(socket, frame as TokenWrite, now);
    }
    const fence = frame.fence!;
    const verdict = checkFencedWrite(this.lease(), socket.state, fence);
    if (!verdict.ok) {
      this.onRefused(verdict.code);
      return send(socket.ws, errorFrame(verdict.code, verdict.message, frame.req));
    }
    if (frame.type === "checkpoint") {
      this.messages.saveCheckpoint(frame.value, fence, now);
      return send(socket.ws, { type: "result", op: "checkpoint", req: frame.req, fence });
    }
    if (this.leases.policies.policy().mode === "pool") {
      return send(socket.ws, errorFrame("bad_frame", "in pool mode a write for a message must carry the message's token", frame.req));
    }
    const message = this.messages.get(frame.id);
    if (!message) return send(socket.ws, errorFrame("unknown_message", `no message ${frame.id}`, frame.req));
    const key = frame.type === "reply" ? frame.key : "ack";
    if (message.status === "acknowledged") {
      const done = this.messages.ackedWrite(frame.id) ?? { id: frame.id, fence: message.acked_fence ?? fence, key };
      return send(socket.ws, { type: "result", ...done, op: frame.type, req: frame.req, duplicate: true });
    }
    if (message.status === "parked" || message.status === "failed") {
      return send(socket.ws, errorFrame("message_not_running", `message ${frame.id} is ${message.status}, not running`, frame.req));
    }
    const write = { id: frame.id, fence, key };
    this.messages.acknowledge(write, frame.type === "reply" ? frame.text : null, now);
    send(socket.ws, { type: "result", ...write, op: frame.type, req: frame.req, duplicate: false });
    this.leases.reconcile(now);
  }

  private push(socket: DeskSocket, m: StoredMessage, run: boolean): void {
    send(socket.ws, messageFrame(m, run, this.leases.policies.policy()));
    if (m.id > socket.state.cursor) {
      socket.state.cursor = m.id;
      writeConn(socket.ws, socket.state);
    }
  }
}

export function messageView(m: StoredMessage) {
  return {
    id: m.id,
    text: m.text,
    status: m.status,
    attempts: m.attempts,
    created_at: m.created_at,
    acked_at: m.acked_at,
    acked_fence: m.acked_fence,
    reply: m.reply,
    token: m.token,
    acked_token: m.acked_token,
    group: m.msg_group,
    run_timeout_seconds: m.run_timeout_ms === null ? null : m.run_timeout_ms / 1000,
    /** Run deadline while running, park deadline while parked (server ms). */
    expires_at: m.expires_at,
    claim_seq: m.runner === null ? null : Number(m.runner),
    checkpoint: m.checkpoint === null ? null : (JSON.parse(m.checkpoint) as unknown),
    resume_input: m.resume_input,
  };
}
