// One message's writes in a plan, as a union on `kind`: each kind of change names exactly what it
// stores (objects/message-changes.ts stores each kind, in the order written here). Every kind
// carries the message's status before the event and its lease after (null: unchanged), so the
// status change names the webhook event it makes (rules/webhooks.ts statusChangeEvent).
import type { Vote } from "../quorum.ts";
import type { Permit } from "../permits.ts";
import type { MessageLease, MessageStatus } from "../message-lease.ts";
import type { BlobRef, StepRecord } from "../step-journal.ts";
import type { KeptQuestion } from "./kept-question.ts";
import type { OutputAppend } from "./output.ts";
import type { AttemptEndReason } from "../../wire/output.ts";
import type { Canceller } from "./types.ts";

/** A journal record to store, over the record it replaces (null: none). */
export interface JournalWrite {
  record: Omit<StepRecord, "at">;
  existing: StepRecord | null;
}

/** A person's answer (or a deadline's, a cancel's), kept with who gave it. */
export interface AnswerRecord {
  choice: string;
  text: string | null;
  question: string | null;
  by: Canceller;
}

/** The message's own checkpoint, inline or a committed blob, under the token that wrote it (the blob of the one it replaces goes). */
export interface CheckpointWrite {
  kept: { value: unknown } | { blob: BlobRef };
  token: number;
}

/** A reply or ack that finished the message (rules/message-lease.ts complete): the write, kept with it. */
export interface AckWrite {
  fence: number;
  key: string;
  reply: string | BlobRef | null;
  token: number;
  runner: string;
}

interface Base<K extends string> {
  kind: K;
  id: number;
  /** Its status before this event: with the status after, it names the webhook event. */
  before: MessageStatus;
  /** It ended by this change: the uploads it never committed go (objects/blob-store.ts discardUnkept). */
  dropUncommitted?: true;
}

/** Its lease as the rules left it. */
type Moves<K extends string> = Base<K> & { lease: MessageLease };
/** Its lease unchanged. */
type Stays<K extends string> = Base<K> & { lease: null };

export type MessageChange =
  /** Handed out to connection `to`: stored with the serve fence, the runner's machine and the run key the object drew for it. */
  | (Moves<"hand_out"> & { to: number; fence: number; machine: string; runKey: string })
  /** A reply or ack finished it; a staged blob it names is committed. */
  | (Moves<"ack"> & { ack: AckWrite; commitBlob: string | null })
  /** The attempt failed, and why. */
  | (Moves<"fail"> & { failure: string })
  /** A stopping runner gave back an attempt it never started: queued, the attempt not counted. */
  | Moves<"declined">
  /** Parked with its question (null: none), and the checkpoint the park carries. */
  | (Moves<"park"> & { question: KeptQuestion | null; checkpoint: CheckpointWrite | null })
  | (Stays<"checkpoint"> & { checkpoint: CheckpointWrite })
  /**
   * A step's result or an effect's intent or outcome: its record (null: a repeat), the effect's
   * idempotency key kept with its first intent, the unknown effect it now waits on (null:
   * unchanged), the permit an approved intent spent, the blob the record commits.
   */
  | (Stays<"step"> & {
    journal: JournalWrite | null; keepKey: { name: string; key: string } | null; pendingAsk: { step: string | null } | null;
    spend: { effect: string; token: number; at: number } | null; commitBlob: string | null;
  })
  /** The running attempt's question (`baton ask`, or the approval an intent needs), which its park carries. */
  | (Stays<"ask"> & { question: KeptQuestion })
  /** A run's heartbeat: its new deadline and its progress (JSON text; null keeps the last). */
  | (Stays<"heartbeat"> & { expiresAt: number | null; progress: string | null })
  /** An upload's room: uploads of attempts before `dropBefore` that nothing committed go, one is reserved (null: refused). */
  | (Stays<"reserve"> & { dropBefore: number; reserve: { blob: string; token: number; bytes: number } | null })
  /** An upload stored: staged, or discarded (its run ended while it streamed, or it failed). */
  | (Stays<"stage"> & { blob: string; staged: boolean })
  /** A batch of the running attempt's live output (./output.ts). */
  | (Stays<"output"> & { output: OutputAppend })
  /** An answer that did not decide its question (several people): the question's votes now, and the answer's record. */
  | (Stays<"votes"> & { votes: Vote[]; answer: AnswerRecord })
  /** An unknown effect a person answered while another still waits: the effect's record (or its intent forgotten) and the next one it waits on. */
  | (Stays<"outcome"> & { answer: AnswerRecord; journal: JournalWrite | null; forgetStep: string | null; pendingAsk: string })
  /**
   * Its question settled (a person's answer or resume, or a deadline's): the journal record of the
   * answer (or an unknown effect's intent forgotten), the answer's record, a question for a person
   * alone's reply, why it failed, the permit an approval grants, the question closed, and a queued
   * message's resume input.
   */
  | (Moves<"settled"> & {
    journal: JournalWrite | null; forgetStep: string | null; answer: AnswerRecord | null; personReply: string | null; failure: string | null;
    grant: Permit | null; resume: { input: string | null; choice: string | null } | null;
  })
  /** A failed message queued again by a person. */
  | (Moves<"retried"> & { answer: AnswerRecord })
  /**
   * Taken back (runner gone, run or heartbeat timeout, park deadline): why it failed (null: it did
   * not), whether its deadline asked people again (its own webhook event), why the running attempt ended.
   */
  | (Moves<"taken_back"> & { failure: string | null; escalate: boolean; ended: AttemptEndReason | null })
  | (Moves<"cancelled"> & { by: Canceller; reason: string | null })
  /** Replaced by message `by` (on_busy replace). */
  | (Moves<"superseded"> & { by: number });

export type ChangeKind = MessageChange["kind"];
export type ChangeOf<K extends ChangeKind> = Extract<MessageChange, { kind: K }>;
