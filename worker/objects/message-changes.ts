// Stores one message change of a plan (../rules/plan/message-change.ts), by its kind: what the
// row keeps first (journal, answer record, failure, cancel, question, resume input), then its
// lease, then its blobs. Interprets the change and decides nothing: every verdict was the plan's.
import type { AnswerRecord, ChangeOf, JournalWrite, MessageChange } from "../rules/plan/message-change.ts";
import type { BlobStore } from "./blob-store.ts";
import type { CancelRecord } from "../rules/message-json.ts";
import type { MessageStore, StoredMessage, StoredValue } from "./message-store.ts";
import type { StepStore } from "./step-store.ts";

export interface MessageStores {
  messages: MessageStore;
  steps: StepStore;
  blobs: BlobStore;
}

/**
 * Stores one message change of a plan: the row's own writes, its lease (a hand-out with the fence, machine and run key it names),
 * then its blobs. Returns the row as stored when its lease was written, for the webhook event its
 * status change makes.
 */
export function saveChange(stores: MessageStores, c: MessageChange, now: number): StoredMessage | null {
  storeRow(stores, c, now);
  let saved: StoredMessage | null = null;
  if (c.kind === "ack") stores.messages.acknowledge({ id: c.id, fence: c.ack.fence, key: c.ack.key }, c.ack.reply, now, c.ack.token, c.ack.runner, c.lease);
  else if (c.lease !== null) saved = stores.messages.saveLease(c.lease, c.kind === "hand_out" ? { fence: c.fence, machine: c.machine, runKey: c.runKey } : null);
  storeBlobs(stores, c, now);
  if (c.dropUncommitted) stores.blobs.discardUnkept(c.id, now);
  return saved;
}

/** What the row keeps before its lease is written (the webhook event reads it with the lease). */
function storeRow(stores: MessageStores, c: MessageChange, now: number): void {
  const { messages, steps } = stores;
  switch (c.kind) {
    case "fail":
      return messages.recordFailure(c.id, c.failure);
    case "park":
      if (c.checkpoint) saveCheckpoint(stores, c.id, c.checkpoint.kept, c.checkpoint.token, now);
      return messages.ask(c.id, c.question);
    case "checkpoint":
      return saveCheckpoint(stores, c.id, c.checkpoint.kept, c.checkpoint.token, now);
    case "step":
      return storeStep(stores, c, now);
    case "ask":
      return messages.ask(c.id, c.question);
    case "heartbeat":
      return messages.saveHeartbeat(c.id, c.expiresAt, c.progress, now);
    case "votes":
      recordAnswer(messages, c.id, c.answer, now);
      return messages.setVotes(c.id, c.votes);
    case "outcome":
      storeJournal(steps, c.id, c.forgetStep, c.journal, now);
      messages.setPendingAsk(c.id, c.pendingAsk);
      return recordAnswer(messages, c.id, c.answer, now);
    case "settled":
      return storeSettled(stores, c, now);
    case "retried":
      return recordAnswer(messages, c.id, c.answer, now);
    case "taken_back":
      if (c.failure !== null) messages.recordFailure(c.id, c.failure);
      return;
    case "cancelled": {
      const record: CancelRecord = { at: now, ...c.by, reason: c.reason };
      messages.saveCancel(c.id, record);
      return recordAnswer(messages, c.id, { choice: "cancel", text: record.reason, question: null, by: c.by }, now);
    }
    case "superseded":
      return messages.saveSupersededBy(c.id, c.by);
    case "hand_out": case "ack": case "declined": case "reserve": case "stage": case "output":
      return;
  }
}

function storeStep(stores: MessageStores, c: ChangeOf<"step">, now: number): void {
  storeJournal(stores.steps, c.id, null, c.journal, now);
  if (c.keepKey) stores.steps.keepEffectKey(c.id, c.keepKey.name, c.keepKey.key);
  if (c.pendingAsk) stores.messages.setPendingAsk(c.id, c.pendingAsk.step);
  if (c.spend) stores.messages.permits.spend(c.id, c.spend.effect, c.spend.token, c.spend.at);
}

function storeSettled(stores: MessageStores, c: ChangeOf<"settled">, now: number): void {
  const { messages } = stores;
  storeJournal(stores.steps, c.id, c.forgetStep, c.journal, now);
  if (c.answer) recordAnswer(messages, c.id, c.answer, now);
  if (c.personReply !== null) messages.answeredForPerson(c.id, c.personReply, now);
  if (c.failure !== null) messages.recordFailure(c.id, c.failure);
  if (c.grant) messages.permits.grant(c.id, c.grant);
  messages.ask(c.id, null);
  if (c.resume) {
    messages.setResumeInput(c.id, c.resume.input);
    messages.setResumeChoice(c.id, c.resume.choice);
  }
}

/** An unknown effect's intent forgotten (a person said it must run again), then a record stored. */
function storeJournal(steps: StepStore, id: number, forget: string | null, journal: JournalWrite | null, now: number): void {
  if (forget !== null) steps.forget(id, forget);
  if (journal) steps.save(id, journal.record, now, journal.existing);
}

function recordAnswer(messages: MessageStore, id: number, a: AnswerRecord, now: number): void {
  messages.answers.record(id, { at: now, choice: a.choice, text: a.text, question: a.question, account: a.by.account, token: a.by.token, via: a.by.via });
}

/** What the change does to the message's uploads, after its lease. */
function storeBlobs({ blobs }: MessageStores, c: MessageChange, now: number): void {
  if (c.kind === "reserve") {
    blobs.discardUncommitted(c.id, c.dropBefore, now);
    if (c.reserve) blobs.add(c.id, { ...c.reserve, state: "uploading" }, now);
  } else if (c.kind === "stage") {
    if (c.staged) blobs.setState(c.id, c.blob, "staged");
    else blobs.discard(c.id, c.blob, now);
  } else if ((c.kind === "ack" || c.kind === "step") && c.commitBlob !== null) {
    blobs.setState(c.id, c.commitBlob, "committed");
  }
}

/** A message checkpoint, inline or a blob it commits; the blob of the checkpoint it replaces goes. */
function saveCheckpoint({ messages, blobs }: MessageStores, id: number, checkpoint: StoredValue, token: number, now: number): void {
  const replaced = messages.saveMessageCheckpoint(id, checkpoint, token);
  if ("blob" in checkpoint) blobs.setState(id, checkpoint.blob.id, "committed");
  if (replaced !== null) blobs.discard(id, replaced, now);
}
