// A run copy as the text its runner receives. Its journal rides in it whole (the wire is as it
// was), but each recorded value goes in as the JSON text the journal stored, so a successor's
// hand-out parses and writes again none of them: a takeover of a message with 100 recorded steps
// costs about what one with none does (docs/benchmarks.md, issue 47 item 5).
import type { StepRecord } from "../rules/step-journal.ts";
import type { JournalEntry, MessageFrame } from "../wire/protocol.ts";

/**
 * One journal entry's JSON: its fields as the wire types them, then its value as stored. Every
 * stored value is JSON text the coordinator wrote itself (JSON.stringify of a value it parsed), so
 * it splices in as one well-formed JSON value.
 */
export function entryText(r: StepRecord): string {
  const fields = {
    name: r.name, kind: r.kind, status: r.status, on_unknown: r.onUnknown, attempt: r.attempt, ...(r.blob === null ? {} : { blob: r.blob }),
  } satisfies Omit<JournalEntry, "value">;
  const text = JSON.stringify(fields);
  return r.value === null ? text : `${text.slice(0, -1)},"value":${r.value}}`;
}

/** The text of a run copy (`frame`, built without `steps`: message-row.ts messageFrame) carrying `journal` as its `steps`, in journal order. */
export function runCopyText(frame: MessageFrame, journal: readonly StepRecord[]): string {
  const text = JSON.stringify(frame);
  return journal.length === 0 ? text : `${text.slice(0, -1)},"steps":[${journal.map(entryText).join(",")}]}`;
}
