// Each message's own lease, wired to storage and sockets: hands queued messages to runners with
// free slots (the holder alone in single mode, every serving runner in pool mode), takes them back
// when their runner leaves or their run timeout passes (by this object's clock, also while the
// runner's connection lives), and accepts writes only under a message's current token. The rules
// are in ../rules/message-lease.ts; this file only loads, applies and tells.
import type { LeaseRecord } from "../rules/election.ts";
import {
  checkMessageWrite, expireDue, failAttempt, isOpen, lease, park, planDispatch, resume, takeBack,
  type MessageLease, type MessagePolicy,
} from "../rules/message-lease.ts";
import { send, type ConnState } from "./connections.ts";
import { leaseOf, type MessageStore, type StoredMessage } from "./message-store.ts";
import { RunPolicyStore } from "./run-policy-store.ts";
import { errorFrame, type ClientFrame, type ErrorCode, type MessageFrame, type RevokeReason } from "../wire/protocol.ts";
import type { WorkReport } from "../wire/work-report.ts";

export interface DeskSocket {
  ws: WebSocket;
  state: ConnState;
}

/** A write made under a message's token: reply, ack, message checkpoint, fail or park. */
export type TokenWrite = Extract<ClientFrame, { type: "ack" | "reply" | "checkpoint" | "fail" | "park" }> & { id: number; token: number };

/** What `error` says of a message taken back from its runner. */
const TAKEN_BACK: Record<RevokeReason, string> = {
  run_timeout: "its run timeout passed before the runner finished",
  runner_gone: "its runner left (disconnected, released the lease or went silent) before finishing",
};

type Push = (socket: DeskSocket, m: StoredMessage, run: boolean) => void;

const REPORTED_RUNNING = 50;
const REPORTED_PARKED = 20;
const REPORTED_FAILED = 10;

export class MessageLeases {
  readonly policies: RunPolicyStore;
  /** Told of every write refused by the token check, before the error frame goes out (for /metrics). */
  onRefused: (code: ErrorCode) => void = () => {};

  constructor(
    sql: SqlStorage,
    private readonly messages: MessageStore,
    private readonly serveLease: () => LeaseRecord,
    private readonly sockets: () => DeskSocket[],
    private readonly push: Push,
    /** Whether a runner may take new work now; one that may not keeps what it runs. */
    private readonly accepts: (state: ConnState) => boolean = () => true,
  ) {
    this.policies = new RunPolicyStore(sql);
  }

  /**
   * Takes back every running message whose runner may no longer run it (gone, released, or not
   * the holder in single mode) or whose run timeout passed, fails parked messages past their
   * deadline, then hands queued messages out under fresh tokens. Returns where each message
   * handed out in this pass went.
   */
  reconcile(now: number): Map<number, DeskSocket> {
    const policy = this.policies.policy();
    const holder = this.serveLease().holderClaim;
    const live = this.sockets().filter((s) => s.state.role === "serve" && s.state.claimSeq !== null);
    const eligible = live
      .filter((s) => !s.state.released && (policy.mode === "pool" || s.state.claimSeq === holder))
      .sort((x, y) => x.state.claimSeq! - y.state.claimSeq!);
    const runners = new Map(eligible.map((s) => [runnerId(s.state), s]));
    const open = new Map(this.messages.openLeases(now).map((m) => [m.id, m]));
    const avoid = new Map<number, string>();

    for (const m of open.values()) {
      if (m.status === "running" && !runners.has(m.runner ?? "")) this.takeBack(m, takeBack(m, policy), "runner_gone", live, open);
    }
    for (const next of expireDue([...open.values()], now, policy)) {
      const before = open.get(next.id)!;
      if (before.runner !== null) avoid.set(before.id, before.runner);
      this.takeBack(before, next, "run_timeout", live, open);
    }

    const running = new Map<string, number>();
    for (const m of open.values()) if (m.status === "running") running.set(m.runner!, (running.get(m.runner!) ?? 0) + 1);
    const slots = eligible.map((s) => ({
      id: runnerId(s.state), free: this.accepts(s.state) ? (s.state.slots ?? 1) - (running.get(runnerId(s.state)) ?? 0) : 0,
    }));
    const handed = new Map<number, DeskSocket>();
    const fence = this.serveLease().fence;
    for (const a of planDispatch([...open.values()].filter(isOpen), slots, policy, avoid, now)) {
      const leased = lease(open.get(a.id)!, a.runner, this.policies.nextToken(), now, policy);
      const socket = runners.get(a.runner)!;
      this.push(socket, this.messages.saveLease(leased, fence, socket.state.machine), true);
      handed.set(a.id, socket);
    }
    return handed;
  }

  private takeBack(before: MessageLease, after: MessageLease, reason: RevokeReason, live: DeskSocket[], open: Map<number, MessageLease>): void {
    this.messages.saveLease(after);
    if (before.status === "running") this.messages.recordFailure(before.id, TAKEN_BACK[reason]);
    if (before.status === "parked") this.messages.recordFailure(before.id, "its park deadline passed before anyone resumed it");
    open.set(after.id, after);
    if (before.status !== "running") return;
    const runner = live.find((s) => runnerId(s.state) === before.runner);
    if (runner) send(runner.ws, { type: "revoked", id: before.id, token: before.token, reason });
  }

  /**
   * A write under a message token, checked at this moment by this object's clock. A token other
   * than the message's current one is refused as stale_token (also once the message finished), a
   * write from any connection but the one the message was handed to as not_your_message, and a
   * write after the run deadline as message_not_running (the message is taken back at once). A
   * reply or ack under the token that finished the message, from its runner, is answered
   * `duplicate: true` with the write that did.
   */
  write(socket: DeskSocket, frame: TokenWrite, now: number): void {
    const stored = this.messages.get(frame.id);
    if (!stored) return send(socket.ws, errorFrame("unknown_message", `no message ${frame.id}`, frame.req));
    const m = leaseOf(stored);
    const key = frame.type === "reply" ? frame.key : "ack";
    const writer = runnerId(socket.state);
    if (frame.token === m.token && m.status === "acknowledged" && (frame.type === "reply" || frame.type === "ack") && stored.acked_runner === writer) {
      const done = this.messages.ackedWrite(m.id) ?? { id: m.id, fence: stored.acked_fence ?? 0, key };
      return send(socket.ws, { type: "result", ...done, token: m.token, op: frame.type, req: frame.req, duplicate: true });
    }
    const verdict = checkMessageWrite(m, frame.token, writer, now);
    if (!verdict.ok) {
      this.onRefused(verdict.code);
      send(socket.ws, errorFrame(verdict.code, verdict.message, frame.req));
      // A deadline that passed before its alarm ran is applied now: the message goes back at once.
      if (m.status === "running" && m.expiresAt !== null && now >= m.expiresAt) this.reconcile(now);
      return;
    }
    switch (frame.type) {
      case "checkpoint":
        this.messages.saveMessageCheckpoint(m.id, frame.value, frame.token);
        return send(socket.ws, { type: "result", op: "checkpoint", req: frame.req, id: m.id, token: frame.token });
      case "park": {
        if (frame.value !== undefined) this.messages.saveMessageCheckpoint(m.id, frame.value, frame.token);
        const deadline = frame.deadline_seconds === undefined ? null : now + frame.deadline_seconds * 1000;
        this.messages.saveLease(park(m, deadline));
        send(socket.ws, { type: "result", op: "park", req: frame.req, id: m.id, token: frame.token, deadline });
        this.reconcile(now);
        return;
      }
      case "fail": {
        const next = failAttempt(m, now, this.policies.policy());
        this.messages.recordFailure(m.id, frame.reason || "the run failed");
        this.messages.saveLease(next);
        send(socket.ws, { type: "result", op: "fail", req: frame.req, id: m.id, token: frame.token, status: next.status, retry_at: next.retryAt });
        this.reconcile(now);
        return;
      }
      default: {
        const write = { id: m.id, fence: this.serveLease().fence, key };
        this.messages.acknowledge(write, frame.type === "reply" ? frame.text : null, now, frame.token, writer);
        send(socket.ws, { type: "result", ...write, token: frame.token, op: frame.type, req: frame.req, duplicate: false });
        this.reconcile(now);
      }
    }
  }

  /** Queues a parked message again with the person's input; it is handed out with attempt + 1 and its checkpoint. */
  resume(id: number, input: string | null, now: number): { ok: true; message: StoredMessage } | { ok: false; status: 404 | 409; code: "not_found" | "not_parked"; message: string } {
    const stored = this.messages.get(id);
    if (!stored) return { ok: false, status: 404, code: "not_found", message: `no message ${id}` };
    const result = resume(leaseOf(stored), now);
    if (!result.ok) {
      // A park deadline that passed before its alarm ran fails the message now.
      this.reconcile(now);
      return { ...result, status: 409 };
    }
    this.messages.setResumeInput(id, input);
    this.messages.saveLease(result.message);
    this.reconcile(now);
    return { ok: true, message: this.messages.get(id)! };
  }

  setPolicy(update: Partial<MessagePolicy>, now: number): MessagePolicy {
    const policy = { ...this.policies.policy(), ...update };
    this.policies.savePolicy(policy);
    this.reconcile(now);
    return policy;
  }

  report(): WorkReport {
    const policy = this.policies.policy();
    const machines = new Map(this.sockets().map((s) => [runnerId(s.state), s.state.machine]));
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

function runnerId(state: ConnState): string {
  return String(state.claimSeq);
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
