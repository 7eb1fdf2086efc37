// Each message's own lease, wired to storage: accepts writes only under a message's current token,
// from the connection it was handed to, before its run deadline by this object's clock, and
// resumes parked messages. Who runs what, and what is taken back, is decided by
// ../rules/agent-plan.ts; the rules of one message are in ../rules/message-lease.ts.
import {
  checkMessageWrite, failAttempt, park, resume, type MessagePolicy,
} from "../rules/message-lease.ts";
import { runnerOf } from "../rules/agent-plan.ts";
import { send, type ConnState } from "./connections.ts";
import { leaseOf, type MessageStore, type StoredMessage } from "./message-store.ts";
import { RunPolicyStore } from "./run-policy-store.ts";
import { errorFrame, type ClientFrame, type ErrorCode, type MessageFrame } from "../wire/protocol.ts";
import type { WorkReport } from "../wire/server-frames.ts";

export interface DeskSocket {
  ws: WebSocket;
  state: ConnState;
}

/** A write made under a message's token: reply, ack, message checkpoint, fail or park. */
export type TokenWrite = Extract<ClientFrame, { type: "ack" | "reply" | "checkpoint" | "fail" | "park" }> & { id: number; token: number };

const REPORTED_RUNNING = 50;
const REPORTED_PARKED = 20;
const REPORTED_FAILED = 10;

export class MessageLeases {
  readonly policies: RunPolicyStore;
  /** Told of every write refused by the token check, before the error frame goes out (for /metrics). */
  onRefused: (code: ErrorCode) => void = () => {};

  constructor(sql: SqlStorage, private readonly messages: MessageStore) {
    this.policies = new RunPolicyStore(sql);
  }

  /**
   * A write under a message token, checked at this moment by this object's clock. A token other
   * than the message's current one is refused as stale_token (also once the message finished), a
   * write from any connection but the one the message was handed to as not_your_message, and a
   * write after the run deadline as message_not_running (the message is taken back at once). A
   * reply or ack under the token that finished the message, from its runner, is answered
   * `duplicate: true` with the write that did. Returns true when the message may have moved, so
   * the object plans again (a checkpoint moves nothing).
   */
  write(socket: DeskSocket, frame: TokenWrite, now: number, fence: number): boolean {
    const stored = this.messages.get(frame.id);
    if (!stored) {
      send(socket.ws, errorFrame("unknown_message", `no message ${frame.id}`, frame.req));
      return false;
    }
    const m = leaseOf(stored);
    const key = frame.type === "reply" ? frame.key : "ack";
    const writer = runnerOf(socket.state);
    if (frame.token === m.token && m.status === "acknowledged" && (frame.type === "reply" || frame.type === "ack") && stored.acked_runner === writer) {
      const done = this.messages.ackedWrite(m.id) ?? { id: m.id, fence: stored.acked_fence ?? 0, key };
      send(socket.ws, { type: "result", ...done, token: m.token, op: frame.type, req: frame.req, duplicate: true });
      return false;
    }
    const verdict = checkMessageWrite(m, frame.token, writer, now);
    if (!verdict.ok) {
      this.onRefused(verdict.code);
      send(socket.ws, errorFrame(verdict.code, verdict.message, frame.req));
      // A deadline that passed before its alarm ran is applied now: the message goes back at once.
      return m.status === "running" && m.expiresAt !== null && now >= m.expiresAt;
    }
    switch (frame.type) {
      case "checkpoint":
        this.messages.saveMessageCheckpoint(m.id, frame.value, frame.token);
        send(socket.ws, { type: "result", op: "checkpoint", req: frame.req, id: m.id, token: frame.token });
        return false;
      case "park": {
        if (frame.value !== undefined) this.messages.saveMessageCheckpoint(m.id, frame.value, frame.token);
        const deadline = frame.deadline_seconds === undefined ? null : now + frame.deadline_seconds * 1000;
        this.messages.saveLease(park(m, deadline));
        send(socket.ws, { type: "result", op: "park", req: frame.req, id: m.id, token: frame.token, deadline });
        return true;
      }
      case "fail": {
        const next = failAttempt(m, now, this.policies.policy());
        this.messages.recordFailure(m.id, frame.reason || "the run failed");
        this.messages.saveLease(next);
        send(socket.ws, { type: "result", op: "fail", req: frame.req, id: m.id, token: frame.token, status: next.status, retry_at: next.retryAt });
        return true;
      }
      default: {
        const write = { id: m.id, fence, key };
        this.messages.acknowledge(write, frame.type === "reply" ? frame.text : null, now, frame.token, writer);
        send(socket.ws, { type: "result", ...write, token: frame.token, op: frame.type, req: frame.req, duplicate: false });
        return true;
      }
    }
  }

  /**
   * Queues a parked message again with the person's input; it is handed out with attempt + 1 and
   * its checkpoint by the plan that follows. A park deadline that passed before its alarm ran
   * refuses the resume; the plan that follows fails the message.
   */
  resume(id: number, input: string | null, now: number): { ok: true; message: StoredMessage } | { ok: false; status: 404 | 409; code: "not_found" | "not_parked"; message: string } {
    const stored = this.messages.get(id);
    if (!stored) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
    const result = resume(leaseOf(stored), now);
    if (!result.ok) return { ...result, status: 409 };
    this.messages.setResumeInput(id, input);
    this.messages.saveLease(result.message);
    return { ok: true, message: this.messages.get(id)! };
  }

  setPolicy(update: Partial<MessagePolicy>): MessagePolicy {
    const policy = { ...this.policies.policy(), ...update };
    this.policies.savePolicy(policy);
    return policy;
  }

  /** `machines`: the machine of each connected runner (by runnerOf). */
  report(machines: ReadonlyMap<string, string>): WorkReport {
    const policy = this.policies.policy();
    return {
      mode: policy.mode,
      max_running: policy.maxRunning,
      run_timeout_seconds: policy.runTimeoutMs / 1000,
      max_attempts: policy.maxAttempts,
      counts: this.messages.countByStatus(),
      running: this.messages.inStatus("running", REPORTED_RUNNING).map((m) => ({
        id: m.id, attempt: m.attempts, token: m.token, claim_seq: m.runner === null ? null : Number(m.runner),
        machine: machines.get(m.runner ?? "") ?? null, expires_at: m.expires_at, group: m.msg_group,
      })),
      parked: this.messages.inStatus("parked", REPORTED_PARKED).map((m) => ({ id: m.id, attempt: m.attempts, deadline: m.expires_at, group: m.msg_group })),
      failed: this.messages.inStatus("failed", REPORTED_FAILED).map((m) => ({ id: m.id, attempts: m.attempts, error: m.error })),
    };
  }
}

/** The frame for one message; a run copy carries what its runner needs: token, timeout, checkpoint, resume input. */
export function messageFrame(m: StoredMessage, run: boolean, policy: MessagePolicy): MessageFrame {
  const frame: MessageFrame = { type: "message", id: m.id, text: m.text, attempt: m.attempts, created_at: m.created_at, run };
  if (!run) return frame;
  return {
    ...frame,
    token: m.token,
    run_timeout_ms: m.run_timeout_ms ?? policy.runTimeoutMs,
    group: m.msg_group,
    resume_input: m.resume_input,
    ...(m.checkpoint === null ? {} : { checkpoint: JSON.parse(m.checkpoint) as unknown }),
  };
}
