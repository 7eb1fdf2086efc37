// A run's StepJournal over the serve socket: reads what the hand-out carried (and what this run
// wrote since), writes `step` frames under the message's token.
import { LIMITS } from "../../worker/wire/protocol.ts";
import type { JournalEntry } from "../../worker/wire/server-frames.ts";
import { CoordinatorError } from "../errors.ts";
import { resultBody, type JournalWrite, type Recorded, type StepJournal, type Written } from "./journal-rules.ts";
import type { RunBlobs } from "./run-blobs.ts";
import type { Run } from "./run.ts";
import type { Writer } from "./writes.ts";

export class FrameJournal implements StepJournal {
  constructor(private readonly run: Run, private readonly writer: Writer, private readonly blobs: RunBlobs) {}

  async get(name: string): Promise<Recorded | null> {
    const entry = this.run.journal.get(name);
    return entry ? { kind: entry.kind, status: entry.status, value: await this.valueOf(entry) } : null;
  }

  check(): void {
    this.run.throwIfStopped();
  }

  async record(name: string, write: JournalWrite): Promise<Written> {
    const { run } = this;
    const result = write.phase !== "done" ? {} : await resultBody(write.value, LIMITS.stepValueBytes, (bytes) => this.blobs.upload(run, bytes, "a step's result"), "a step's result");
    const answer = await this.writer.send(run, {
      type: "step", id: run.id, token: run.token, name, kind: write.kind, phase: write.phase,
      ...result, ...(write.onUnknown === undefined ? {} : { on_unknown: write.onUnknown }), ...(write.approve === undefined ? {} : { approve: write.approve }),
    });
    if (answer.op !== "step") throw new CoordinatorError("step answered with another result", 0, null);
    const entry: JournalEntry = {
      name, kind: write.kind, status: answer.status, value: answer.value, on_unknown: write.onUnknown ?? null, attempt: run.msg.attempt,
      ...(answer.blob ? { blob: answer.blob } : {}),
    };
    run.journal.set(name, entry);
    return {
      status: answer.status, value: answer.status === "done" ? await this.valueOf(entry) : null,
      ...(answer.idempotency_key === undefined ? {} : { key: answer.idempotency_key }),
    };
  }

  /** A recorded result: inline, or read back from the coordinator's R2. */
  private valueOf(entry: JournalEntry): Promise<unknown> {
    return entry.blob ? this.blobs.readJson(this.run.id, entry.blob.id, `step ${entry.name}'s result`) : Promise.resolve(entry.value);
  }
}
