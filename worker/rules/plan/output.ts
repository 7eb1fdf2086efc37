// A run's live output, decided like any runner write (./write.ts): a batch of chunks is stored
// only under the message's current token, from its runner, before its run deadline; anything else
// is refused with the same verdict as a stale reply, so no reader ever sees a chunk of an attempt
// that no longer holds the message. Past the message's budget the oldest bytes go, and the change
// says how many must be freed. Beside it: the marks a message change leaves in its output (an
// attempt began on a machine, an attempt ended and why). Pure: nothing here stores or sends.
import { checkMessageWrite, type MessageLease } from "../message-lease.ts";
import { errorFrame, type ErrorCode } from "../../wire/protocol.ts";
import { chunkSize, type AttemptEndReason, type OutputChunk } from "../../wire/output.ts";
import type { ServerFrame } from "../../wire/server-frames.ts";
import type { MessageChange } from "./types.ts";

/** What an output write reads of its message's output so far. */
export interface OutputHead {
  /** The offset the next byte gets (bytes written since the start, dropped ones included). */
  nextOffset: number;
  /** Bytes kept now. */
  keptBytes: number;
}

export interface OutputTarget {
  lease: MessageLease;
  head: OutputHead;
  /** The machine the current attempt was handed to. */
  machine: string;
}

/** A runner's connection (by runnerOf), or a served command's HTTP write and whether its run key matched the attempt's. */
export type OutputWriter = { runner: string } | { runKeyMatches: boolean };

/** The batch as the plan stores it: appended at `offset`, after the oldest `free` bytes of the message went. */
export interface OutputAppend {
  token: number;
  attempt: number;
  machine: string;
  offset: number;
  chunks: readonly OutputChunk[];
  bytes: number;
  free: number;
}

export interface OutputDecision {
  reply: ServerFrame;
  change: MessageChange | null;
  refused: ErrorCode | null;
  /** Refused because its run deadline had passed: the plan takes the message back now. */
  expired: boolean;
  /** The HTTP status of a refusal (200 when stored). */
  status: 200 | 404 | 409;
}


/**
 * Decides one batch at `now`: refused (unknown_message, or checkMessageWrite's stale_token,
 * not_your_message, message_not_running, cancelled), or stored at the head's offset with
 * `free` = how far the message's kept bytes would pass `budget`.
 */
export function decideOutput(
  t: OutputTarget | null, id: number, token: number, chunks: readonly OutputChunk[], writer: OutputWriter, budget: number, now: number, req?: string,
): OutputDecision {
  if (t === null) return { reply: errorFrame("unknown_message", `no message ${id}`, req), change: null, refused: null, expired: false, status: 404 };
  const m = t.lease;
  const runner = "runner" in writer ? writer.runner : writer.runKeyMatches ? (m.runner ?? "") : "(wrong run key)";
  const verdict = checkMessageWrite(m, token, runner, now);
  if (!verdict.ok) {
    const expired = m.status === "running" && m.expiresAt !== null && now >= m.expiresAt;
    return { reply: errorFrame(verdict.code, verdict.message, req), change: null, refused: verdict.code, expired, status: 409 };
  }
  const bytes = chunks.reduce((n, c) => n + chunkSize(c), 0);
  const free = Math.max(0, t.head.keptBytes + bytes - budget);
  const output: OutputAppend = { token, attempt: m.attempts, machine: t.machine, offset: t.head.nextOffset, chunks, bytes, free };
  return {
    reply: { type: "result", op: "output", req, id, token, offset: t.head.nextOffset + bytes },
    change: { kind: "output", id, before: m.status, lease: null, output },
    refused: null, expired: false, status: 200,
  };
}

/** Whether the change says why its attempt failed. */
function failed(c: MessageChange): boolean {
  return c.kind === "fail" || ((c.kind === "taken_back" || c.kind === "settled") && c.failure !== null);
}

/** What a message change marks in its output: an attempt that began (a hand-out) and one that ended, with why. */
export interface OutputMarks {
  ended: { attempt: number; reason: AttemptEndReason } | null;
  began: { attempt: number; machine: string } | null;
}

/**
 * The marks of one change: a running message whose lease leaves running ended its attempt (why:
 * the reason the take-back gave, else a reply or ack, a decline, a cancel, a park, or a failed run);
 * a hand-out began the next one on `machine`. Every hand-out has a number of its own (a declined
 * one too), so no two attempts share a section of the output.
 */
export function outputMarks(c: MessageChange, machine: string | null): OutputMarks {
  const lease = c.lease;
  let ended: OutputMarks["ended"] = null;
  if (c.before === "running" && lease !== null && lease.status !== "running") {
    const reason: AttemptEndReason = (c.kind === "taken_back" ? c.ended : null) ??
      (c.kind === "declined" ? "declined" : c.kind === "ack" ? "replied" : c.kind === "cancelled" ? "cancelled" : lease.status === "parked" ? "parked" : failed(c) ? "failed" : "lease_lost");
    ended = { attempt: lease.attempts, reason };
  }
  const began = c.kind === "hand_out" ? { attempt: c.lease.attempts, machine: machine ?? "unknown" } : null;
  return { ended, began };
}
