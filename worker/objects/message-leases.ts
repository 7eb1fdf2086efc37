// Each message's own lease, as a store: reads what a runner's write touches (its lease, its
// journal, its blobs, its question) for the plan to decide (../rules/plan/write-event.ts), and
// stores the plan's message changes (message-changes.ts). Decides nothing; the rules of one
// message are in ../rules/message-lease.ts. Beside it: the writes' answers (message-writes.ts) and
// what presence shows of the work (work-report.ts).
import type { MessageChange, TargetMessage } from "../rules/agent-plan.ts";
import type { AttemptTraces, RunnerWrite, WriteTarget } from "../rules/plan/write.ts";
import type { KeptQuestion } from "../rules/plan/kept-question.ts";
import { checkRun, effectKeyOf, type JournalRows, type ReserveRows, type RunWriter, type StepRows } from "../rules/plan/run-write.ts";
import type { MessageLease } from "../rules/message-lease.ts";
import type { WriteInput } from "../rules/plan/write-event.ts";
import type { BlobRow } from "../rules/blob-ledger.ts";
import type { StepRecord, StepWrite } from "../rules/step-journal.ts";
import { leaseOf, questionOf, type MessageStore, type StoredMessage } from "./message-store.ts";
import { quorumOf } from "../rules/quorum.ts";
import { approvalAsk } from "../rules/permits.ts";
import { RunPolicyStore } from "./run-policy-store.ts";
import type { StepStore } from "./step-store.ts";
import type { BlobStore } from "./blob-store.ts";
import type { OutputStore } from "./output-store.ts";
import { randomHex128, sameSecret } from "./secrets.ts";
import type { WorkReport } from "../wire/server-frames.ts";
import { saveChange, type MessageStores } from "./message-changes.ts";
import { workReport } from "./work-report.ts";
import type { Refusal, TokenWrite, Writer } from "./message-writes.ts";

export {
  JOURNAL_BUDGET, type Answerer, type BlobReserve, type DeskSocket, type HeartbeatAnswer, type Refusal, type StepAnswer, type TokenWrite, type Writer,
} from "./message-writes.ts";

/** A step frame as the journal writes it. */
function stepWriteOf(frame: Extract<TokenWrite, { type: "step" }>): StepWrite {
  return {
    name: frame.name, kind: frame.kind, phase: frame.phase, onUnknown: frame.on_unknown ?? null,
    value: frame.value === undefined ? null : JSON.stringify(frame.value), blob: frame.blob === undefined ? null : { id: frame.blob, bytes: 0 },
    approve: frame.approve === undefined ? null : approvalAsk(frame.approve),
  };
}

export class MessageLeases {
  readonly policies: RunPolicyStore;
  /** Whose effects' idempotency keys this object hands out (wire/step-keys.ts); null until it knows its account. */
  private keys: { tag: string; agent: string } | null = null;

  private readonly stores: MessageStores;

  constructor(
    sql: SqlStorage, private readonly messages: MessageStore, private readonly steps: StepStore, private readonly blobs: BlobStore, private readonly output: OutputStore,
  ) {
    this.policies = new RunPolicyStore(sql);
    this.stores = { messages, steps, blobs };
  }

  /**
   * A runner's frame write for a message, with what it touches, for the plan to decide
   * (rules/plan/write-event.ts): a reply, ack, fail, park or checkpoint reads its lease, the write
   * that finished it, the question its attempt stored, the blob it names and the journal a park's
   * question is checked against; a step or heartbeat reads what runWrite reads.
   */
  frameWrite(runner: string, frame: TokenWrite, stopping = false): WriteInput {
    const writer = { runner };
    if (frame.type === "step") {
      const step = stepWriteOf(frame);
      return { kind: "step", ...this.runOf(frame.id, frame.token, writer), step, rows: this.stepRows(frame.id, step), req: frame.req, frame: true };
    }
    if (frame.type === "heartbeat") return { kind: "heartbeat", ...this.runOf(frame.id, frame.token, writer), details: frame.details, req: frame.req, frame: true };
    return { kind: "runner", frame, writer: runner, target: this.writeTarget(frame), ...(stopping ? { stopping } : {}) };
  }

  /** What every run write reads: its message's lease, and over HTTP whether its run key is the attempt's. */
  runOf(id: number, token: number, writer: Writer): { id: number; token: number; writer: RunWriter; lease: MessageLease | null } {
    const stored = this.messages.runOf(id);
    const runWriter: RunWriter = "runner" in writer ? writer : { runKeyMatches: stored !== null && sameSecret(writer.runKey, stored.run_key) };
    return { id, token, writer: runWriter, lease: stored && leaseOf(stored) };
  }

  /** What a step write reads: the journal's size, its record, the blob it names; an effect's also the open intents and the key kept. */
  stepRows(id: number, write: StepWrite): StepRows {
    // Only an effect's write reads the open intents (whether the message now waits on one).
    const effect = write.kind === "effect";
    return {
      openIntents: effect ? this.steps.openIntents(id) : [], record: this.steps.get(id, write.name),
      usage: this.steps.usage(id), blob: write.blob ? this.blobs.get(id, write.blob.id) : null,
      keptKey: write.kind === "effect" ? this.steps.effectKey(id, write.name) : null, keys: this.keys,
      permit: write.approve ? this.messages.permits.get(id, write.name) : null,
    };
  }

  /** The open intents and the record under `name` (null: none). */
  journalRows(id: number, name: string | null): JournalRows {
    return { openIntents: this.steps.openIntents(id), record: name === null ? null : this.steps.get(id, name) };
  }

  /** What an upload's reserve reads: the message's blobs, and a fresh blob id with its R2 key. */
  reserveRows(id: number): ReserveRows {
    const blob = `b-${randomHex128()}`;
    return { blobs: this.blobs.of(id), fresh: { blob, r2Key: this.blobs.keyOf(id, blob) } };
  }

  /** The question the attempt of `token` stored (`baton ask`), or null. */
  openQuestion(id: number, token: number): KeptQuestion | null {
    const stored = this.messages.get(id);
    return stored && questionOf(stored, token);
  }

  /** What a reply, ack, fail, park or message checkpoint reads of its message; null when there is none. */
  private writeTarget(frame: RunnerWrite): WriteTarget | null {
    const stored = this.messages.get(frame.id);
    if (!stored) return null;
    const asked = questionOf(stored, frame.token);
    const key = frame.type === "reply" ? frame.key : "ack";
    const done = stored.status === "acknowledged" ? this.messages.ackedWrite(stored.id) : null;
    const step = frame.type !== "park" ? null : frame.question ? frame.question.step ?? null : asked?.step ?? null;
    return {
      lease: leaseOf(stored), asked,
      acked: { runner: stored.acked_runner, write: done ?? { id: stored.id, fence: stored.acked_fence ?? 0, key } },
      blob: "blob" in frame && frame.blob !== undefined ? this.blobs.get(stored.id, frame.blob) : null,
      journal: frame.type === "park" ? this.journalRows(stored.id, step) : { openIntents: [], record: null },
      traces: frame.type === "decline" ? this.traces(stored, frame.token) : null,
    };
  }

  /** What the attempt under `token` stored (a hand-out clears the heartbeat time, so any is this attempt's). */
  private traces(stored: StoredMessage, token: number): AttemptTraces {
    return {
      steps: this.steps.countUnder(stored.id, token),
      checkpoint: stored.checkpoint_token === token,
      heartbeatAt: stored.token === token ? stored.heartbeat_at : null,
      output: stored.token === token && this.output.wroteDuring(stored.id, stored.attempts),
      blobs: this.blobs.of(stored.id).filter((b) => b.token === token).length,
    };
  }

  /** A run reading its journal to replay it: refused as its write would be, so a stale attempt never takes another's result for its own. */
  checkReplay(id: number, token: number, writer: Writer, now: number): Refusal | { ok: true } {
    const w = this.runOf(id, token, writer);
    const run = checkRun(w.lease, id, token, w.writer, now);
    return run.ok ? { ok: true } : run;
  }

  /** The account (its tag) and agent whose effect keys this object hands out, once known. */
  knowKeys(tag: string, agent: string): void {
    this.keys = { tag, agent };
  }

  /** The idempotency key an effect of this name hands out (kept with its first intent, or the one it would be given). */
  effectKeyOf(id: number, name: string): string | null {
    return effectKeyOf(id, name, { keptKey: this.steps.effectKey(id, name), keys: this.keys, record: this.steps.get(id, name) })?.key ?? null;
  }

  /** The blob row an upload's stage reads (null: none such). */
  blobRow(id: number, blob: string): BlobRow | null {
    return this.blobs.get(id, blob);
  }

  /** An upload that finished after its message was pruned: nothing of a message changes, its R2 object goes to the garbage. */
  forgetStored(id: number, blob: string, now: number): void {
    if (!this.blobs.get(id, blob)) this.blobs.forgetStored(id, blob, now);
  }

  /** The R2 key of a blob a journal record refers to (staged or committed). */
  blobKey(id: number, blob: string): string | null {
    const row = this.blobs.get(id, blob);
    return row && row.state !== "uploading" ? this.blobs.keyOf(id, blob) : null;
  }

  /** A message as a person's input (or a deadline that answers for one) reads it; null when there is none. */
  target(id: number): TargetMessage | null {
    const stored = this.messages.get(id);
    if (!stored) return null;
    const asked = questionOf(stored);
    const entries = new Map<string, StepRecord>();
    for (const name of [asked?.step, stored.pending_ask]) {
      const record = name ? this.steps.get(id, name) : null;
      if (record) entries.set(record.name, record);
    }
    return {
      lease: leaseOf(stored), question: asked && { text: asked.text, choices: asked.choices, step: asked.step, approve: asked.approve ?? null, token: asked.token, quorum: quorumOf(asked) }, error: stored.error,
      entries, openIntents: stored.pending_ask === null ? [] : this.steps.openIntents(id), usage: this.steps.usage(id),
    };
  }

  /**
   * Stores one message change of a plan (message-changes.ts). Returns the row as stored when its
   * lease was written, for the webhook event its status change makes.
   */
  save(c: MessageChange, now: number): StoredMessage | null {
    return saveChange(this.stores, c, now);
  }

  /** `machines`: the machine of each connected runner (by runnerOf). */
  report(machines: ReadonlyMap<string, string>): WorkReport {
    return workReport(this.messages, this.policies.policy(), this.policies.problem(), machines);
  }
}
