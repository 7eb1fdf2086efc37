// Values too large for a frame travel over HTTP (R2 on the coordinator): a run uploads them first
// and names the blob in the write that commits them, and reads recorded ones back.
import { LIMITS } from "../../worker/wire/protocol.ts";
import type { RunProof } from "../run-journal.ts";
import type { Run } from "./run.ts";

export interface Blobs {
  upload(proof: RunProof, bytes: Uint8Array): Promise<string>;
  download(id: number, blob: string): Promise<Uint8Array>;
}

export class RunBlobs {
  constructor(private readonly agent: string, private readonly blobs: Blobs | undefined) {}

  /** Uploads `bytes` under the run's token; refused over LIMITS.blobBytes or without a coordinator that keeps blobs. */
  async upload(run: Run, bytes: Uint8Array, what: string): Promise<string> {
    if (bytes.byteLength > LIMITS.blobBytes) throw new RangeError(`${what} is at most ${LIMITS.blobBytes} bytes, got ${bytes.byteLength}`);
    if (!this.blobs || run.msg.run_key === undefined) throw new RangeError(`${what} of ${bytes.byteLength} bytes needs a coordinator with large values (R2)`);
    run.throwIfStopped();
    return this.blobs.upload({ agent: this.agent, id: run.id, token: run.token, runKey: run.msg.run_key }, bytes);
  }

  async readJson(id: number, blob: string, what: string): Promise<unknown> {
    if (!this.blobs) throw new RangeError(`${what} is a blob and this runner cannot read blobs`);
    return JSON.parse(new TextDecoder().decode(await this.blobs.download(id, blob))) as unknown;
  }
}
