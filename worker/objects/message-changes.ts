// Stores one message change of a plan (../rules/plan/types.ts MessageChange), write by write in the
// order it names. Interprets the change and decides nothing: every verdict was the plan's.
import type { MessageChange } from "../rules/agent-plan.ts";
import type { BlobStore } from "./blob-store.ts";
import type { CancelRecord, MessageStore, StoredMessage, StoredValue } from "./message-store.ts";
import type { StepStore } from "./step-store.ts";

export interface MessageStores {
  messages: MessageStore;
  steps: StepStore;
  blobs: BlobStore;
}

/**
 * Stores one message change of a plan, in the order MessageChange names: its journal, its answer
 * record, why it failed, who cancelled or replaced it, its question and resume input, then its
 * lease (a hand-out with `handOut`: the serve fence, the runner's machine and a fresh run key).
 * Returns the row as stored when its lease was written, for the webhook event its status change makes.
 */
export function saveChange(stores: MessageStores, c: MessageChange, now: number, handOut: { fence: number; machine: string; runKey: string } | null): StoredMessage | null {
  const { messages, steps, blobs } = stores;
  if (c.forgetStep !== undefined) steps.forget(c.id, c.forgetStep);
  if (c.journal) steps.save(c.id, c.journal.record, now, c.journal.existing);
  if (c.keepKey) steps.keepEffectKey(c.id, c.keepKey.name, c.keepKey.key);
  if (c.heartbeat) messages.saveHeartbeat(c.id, c.heartbeat.expiresAt, c.heartbeat.progress, now);
  if (c.pendingAsk !== undefined) messages.setPendingAsk(c.id, c.pendingAsk);
  if (c.answer) {
    const { by, ...answered } = c.answer;
    messages.answers.record(c.id, { at: now, ...answered, account: by.account, token: by.token, via: by.via });
  }
  if (c.votes !== undefined) messages.setVotes(c.id, c.votes);
  if (c.personReply !== undefined) messages.answeredForPerson(c.id, c.personReply, now);
  if (c.failure !== undefined) messages.recordFailure(c.id, c.failure);
  if (c.cancel) {
    const record: CancelRecord = { at: now, ...c.cancel.by, reason: c.cancel.reason };
    messages.saveCancel(c.id, record);
    messages.answers.record(c.id, { at: now, choice: "cancel", text: record.reason, question: null, account: record.account, token: record.token, via: record.via });
  }
  if (c.supersededBy !== undefined) messages.saveSupersededBy(c.id, c.supersededBy);
  if (c.checkpoint) saveCheckpoint(stores, c.id, c.checkpoint.kept, c.checkpoint.token, now);
  if (c.question !== undefined) messages.ask(c.id, c.question);
  if (c.permit) {
    if ("grant" in c.permit) messages.permits.grant(c.id, c.permit.grant);
    else messages.permits.spend(c.id, c.permit.spend.effect, c.permit.spend.token, c.permit.spend.at);
  }
  if (c.closeQuestion) messages.ask(c.id, null);
  if (c.resume) {
    messages.setResumeInput(c.id, c.resume.input);
    messages.setResumeChoice(c.id, c.resume.choice);
  }
  let saved: StoredMessage | null = null;
  if (c.ack && c.lease) messages.acknowledge({ id: c.id, fence: c.ack.fence, key: c.ack.key }, c.ack.reply, now, c.ack.token, c.ack.runner, c.lease);
  else if (c.lease) saved = messages.saveLease(c.lease, handOut);
  if (c.upload) {
    const u = c.upload;
    if (u.dropBefore !== undefined) blobs.discardUncommitted(c.id, u.dropBefore, now);
    if (u.reserve) blobs.add(c.id, { ...u.reserve, state: "uploading" }, now);
    if (u.stage !== undefined) blobs.setState(c.id, u.stage, "staged");
    if (u.discard !== undefined) blobs.discard(c.id, u.discard, now);
  }
  if (c.commitBlob !== undefined) blobs.setState(c.id, c.commitBlob, "committed");
  if (c.dropUncommitted) blobs.discardUnkept(c.id, now);
  return saved;
}

/** A message checkpoint, inline or a blob it commits; the blob of the checkpoint it replaces goes. */
function saveCheckpoint({ messages, blobs }: MessageStores, id: number, checkpoint: StoredValue, token: number, now: number): void {
  const replaced = messages.saveMessageCheckpoint(id, checkpoint, token);
  if ("blob" in checkpoint) blobs.setState(id, checkpoint.blob.id, "committed");
  if (replaced !== null) blobs.discard(id, replaced, now);
}
