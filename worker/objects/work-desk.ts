// Durable work of one agent: stores messages, pushes them to every serve connection (only the
// holder's copy says run), redelivers unacknowledged work to a new holder, and accepts fenced,
// idempotent replies, acks and checkpoints. The agent object owns the sockets and the lease.
import type { LeaseRecord } from "../rules/election.ts";
import { checkFencedWrite } from "../rules/fencing.ts";
import { send, writeConn, type ConnState } from "./connections.ts";
import { MessageStore, type StoredMessage } from "./message-store.ts";
import { errorFrame, type ClientFrame, type MessageFrame } from "../wire/protocol.ts";

export interface DeskSocket {
  ws: WebSocket;
  state: ConnState;
}

type WriteFrame = Extract<ClientFrame, { type: "ack" | "reply" | "checkpoint" }>;

export class WorkDesk {
  readonly messages: MessageStore;

  constructor(sql: SqlStorage, private readonly lease: () => LeaseRecord, private readonly sockets: () => DeskSocket[]) {
    this.messages = new MessageStore(sql);
  }

  /** Stores a message, shows it to every serve connection, and hands it to the holder if there is one. */
  post(text: string, now: number): StoredMessage {
    const stored = this.messages.add(text, now);
    const holderClaim = this.lease().holderClaim;
    for (const s of this.sockets()) {
      if (!isHolder(s.state, holderClaim)) this.push(s, stored, false);
    }
    this.dispatch();
    return this.messages.get(stored.id)!;
  }

  /**
   * Hands the holder every unacknowledged message it has not been given under the current fence.
   * A message a former holder received but never acknowledged comes back with its attempt count raised.
   */
  dispatch(): void {
    const lease = this.lease();
    if (lease.holderClaim === null) return;
    const holder = this.sockets().find((s) => isHolder(s.state, lease.holderClaim));
    if (!holder) return;
    for (const m of this.messages.undeliveredFor(lease.fence)) {
      this.push(holder, this.messages.markDelivered(m.id, lease.fence), true);
    }
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
   * A fenced ack, reply or checkpoint. An ack or reply is scoped to its message: the first one
   * acknowledges it, and any later one (same key or not) is answered `duplicate: true` with the
   * write that did, so an answer that looks like success always means that message is done.
   */
  write(socket: DeskSocket, frame: WriteFrame, now: number): void {
    const verdict = checkFencedWrite(this.lease(), socket.state, frame.fence);
    if (!verdict.ok) return send(socket.ws, errorFrame(verdict.code, verdict.message, frame.req));
    if (frame.type === "checkpoint") {
      this.messages.saveCheckpoint(frame.value, frame.fence, now);
      return send(socket.ws, { type: "result", op: "checkpoint", req: frame.req, fence: frame.fence });
    }
    const message = this.messages.get(frame.id);
    if (!message) return send(socket.ws, errorFrame("unknown_message", `no message ${frame.id}`, frame.req));
    const key = frame.type === "reply" ? frame.key : "ack";
    if (message.status === "acknowledged") {
      const done = this.messages.ackedWrite(frame.id) ?? { id: frame.id, fence: message.acked_fence ?? frame.fence, key };
      return send(socket.ws, { type: "result", ...done, op: frame.type, req: frame.req, duplicate: true });
    }
    const write = { id: frame.id, fence: frame.fence, key };
    this.messages.acknowledge(write, frame.type === "reply" ? frame.text : null, now);
    send(socket.ws, { type: "result", ...write, op: frame.type, req: frame.req, duplicate: false });
  }

  private push(socket: DeskSocket, m: StoredMessage, run: boolean): void {
    const frame: MessageFrame = { type: "message", id: m.id, text: m.text, attempt: m.attempts, created_at: m.created_at, run };
    send(socket.ws, frame);
    if (m.id > socket.state.cursor) {
      socket.state.cursor = m.id;
      writeConn(socket.ws, socket.state);
    }
  }
}

function isHolder(state: ConnState, holderClaim: number | null): boolean {
  return state.role === "serve" && state.claimSeq !== null && !state.released && state.claimSeq === holderClaim;
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
  };
}
