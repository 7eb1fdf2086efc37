// A running message's journal over HTTP, for code that is not the serve connection itself: a
// command `baton serve` started (`baton step`, `baton effect`, `baton heartbeat`) or a program in
// any language. The run key serve hands its command (BATON_RUN_KEY) stands for the connection, so a
// write is honoured only while that hand-out is the message's current one.
import {
  blobStagedSchema, errorBodySchema, heartbeatAnswerSchema, stepViewSchema, stepWrittenSchema, type BlobStaged, type HeartbeatAnswer, type MessageView, type StepView,
  type StepWritten,
} from "../worker/wire/http-responses.ts";
import { LIMITS, type EffectApproval, type OnUnknown } from "../worker/wire/protocol.ts";
import { resultBody, type StepJournal } from "./core/journal-rules.ts";
import { CoordinatorError, LeaseLostError } from "./errors.ts";
import { refusal, requestJson, send, type Connection } from "./http.ts";
import { routePath } from "../worker/wire/routes.ts";
import { outputWrittenSchema, type OutputChunk } from "../worker/wire/output.ts";
import type { ErrorCode } from "../worker/wire/error-codes.ts";

/** Refusals that mean this run is no longer the message's current one: whatever it reads or writes is not its own. */
const RUN_GONE: ReadonlySet<ErrorCode> = new Set(["stale_token", "message_not_running", "cancelled", "not_your_message"]);

/** A refusal of a run's read or write, as the LeaseLostError of a run that lost its message; anything else unchanged. */
async function asRun<T>(id: number, call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (err instanceof CoordinatorError && err.code !== null && RUN_GONE.has(err.code)) {
      throw new LeaseLostError(`this run lost message ${id}: ${err.message}`, err.code);
    }
    throw err;
  }
}

const BLOB_TIMEOUT_MS = 120_000;

/** What proves a write belongs to the message's current run. */
export interface RunProof {
  agent: string;
  id: number;
  token: number;
  runKey: string;
}

/** The run a command was started for, from the environment `baton serve` gives it; null outside one. */
export function runProofFromEnv(env: Record<string, string | undefined> = globalThis.process?.env ?? {}): RunProof | null {
  const { BATON_AGENT: agent, BATON_MESSAGE_ID: id, BATON_MESSAGE_TOKEN: token, BATON_RUN_KEY: runKey } = env;
  if (!agent || !id || !token || !runKey) return null;
  return { agent, id: Number(id), token: Number(token), runKey };
}

export class RunJournal {
  constructor(readonly connection: Connection, readonly proof: RunProof) {}

  private get where(): { agent: string; id: number } {
    return { agent: this.proof.agent, id: this.proof.id };
  }

  /**
   * The record under `name` with its value, or null when nothing is recorded yet; read as this run
   * (its token and run key), so a run that lost the message gets LeaseLostError, never another attempt's result.
   */
  async get(name: string): Promise<StepView | null> {
    const headers = { "x-baton-token": String(this.proof.token), "x-baton-run-key": this.proof.runKey };
    try {
      return await asRun(this.proof.id, requestJson(this.connection, "GET", routePath("/agents/{agent}/messages/{id}/steps/{step}", { ...this.where, step: name }), stepViewSchema, { headers }));
    } catch (err) {
      if (err instanceof CoordinatorError && err.status === 404 && err.code === "not_found") return null;
      throw err;
    }
  }

  /** Writes a step's result (inline, or a staged blob), or an effect's intent or outcome; resolves with what the journal holds now. */
  record(name: string, write: { kind: "step" | "effect"; phase: "intent" | "done"; value?: unknown; blob?: string; onUnknown?: OnUnknown; approve?: EffectApproval }): Promise<StepWritten> {
    const result = write.phase !== "done" ? {} : write.blob !== undefined ? { blob: write.blob } : { value: write.value ?? null };
    const body = {
      token: this.proof.token, run_key: this.proof.runKey, kind: write.kind, phase: write.phase,
      ...result, ...(write.onUnknown === undefined ? {} : { on_unknown: write.onUnknown }), ...(write.approve === undefined ? {} : { approve: write.approve }),
    };
    return asRun(this.proof.id, requestJson(this.connection, "PUT", routePath("/agents/{agent}/messages/{id}/steps/{step}", { ...this.where, step: name }), stepWrittenSchema, { body }));
  }

  /** Uploads a value too large to ride inline; a later `record` with its id commits it. */
  upload(bytes: Uint8Array): Promise<BlobStaged> {
    return asRun(this.proof.id, uploadBlob(this.connection, this.proof, bytes));
  }

  download(blob: string): Promise<Uint8Array> {
    return downloadBlob(this.connection, this.proof.agent, this.proof.id, blob);
  }

  /** A batch of the run's live output (at most LIMITS.outputBatchBytes); resolves with the offset its next byte gets. */
  output(chunks: OutputChunk[]): Promise<{ id: number; token: number; offset: number }> {
    const body = { token: this.proof.token, run_key: this.proof.runKey, chunks };
    return requestJson(this.connection, "POST", routePath("/agents/{agent}/messages/{id}/output", this.where), outputWrittenSchema, { body });
  }

  /** The run is alive; `details` become its progress. Resolves with its deadline now. */
  heartbeat(details?: unknown): Promise<HeartbeatAnswer> {
    const body = { token: this.proof.token, run_key: this.proof.runKey, ...(details === undefined ? {} : { details }) };
    return asRun(this.proof.id, requestJson(this.connection, "POST", routePath("/agents/{agent}/messages/{id}/heartbeat", this.where), heartbeatAnswerSchema, { body }));
  }
}

/**
 * This run's journal for the journal rules (client/core/journal-rules.ts), the same rules the
 * library's runs follow: a result over the inline limit is uploaded to R2 first, and recorded
 * values are read back from there.
 */
export function stepJournal(run: RunJournal): StepJournal {
  const read = async (view: { value: unknown; blob?: { id: string } | null }): Promise<unknown> =>
    view.blob ? (JSON.parse(new TextDecoder().decode(await run.download(view.blob.id))) as unknown) : view.value;
  return {
    async get(name) {
      const view = await run.get(name);
      return view && { kind: view.kind, status: view.status, value: await read(view) };
    },
    async record(name, write) {
      const upload = async (bytes: Uint8Array) => (await run.upload(bytes)).blob;
      const body = write.phase === "done" ? await resultBody(write.value, LIMITS.stepValueBytes, upload, `${write.kind} ${name}'s result`) : {};
      const written = await run.record(name, { kind: write.kind, phase: write.phase, ...body, onUnknown: write.onUnknown, approve: write.approve });
      return {
        status: written.status, value: written.status === "done" ? await read(written) : null,
        ...(written.idempotency_key === undefined ? {} : { key: written.idempotency_key }),
      };
    },
  };
}

/** PUT …/messages/{id}/blobs: staged under the run's token until a journal write commits it. */
export async function uploadBlob(conn: Connection, proof: RunProof, bytes: Uint8Array): Promise<BlobStaged> {
  const res = await send(conn, "PUT", routePath("/agents/{agent}/messages/{id}/blobs", { agent: proof.agent, id: proof.id }), {
    headers: { "x-baton-token": String(proof.token), "x-baton-run-key": proof.runKey, "content-type": "application/octet-stream" },
    body: bytes as BodyInit, timeoutMs: BLOB_TIMEOUT_MS,
  });
  const data = (await res.json().catch(() => null)) as unknown;
  const parsed = blobStagedSchema.safeParse(data);
  if (res.status === 201 && parsed.success) return parsed.data;
  const body = errorBodySchema.safeParse(data);
  throw refusal(conn, res.status, body.success ? body.data : null);
}

/** GET …/messages/{id}/blobs/{blob}: the bytes a journal record refers to. */
export async function downloadBlob(conn: Connection, agent: string, id: number, blob: string): Promise<Uint8Array> {
  const res = await send(conn, "GET", routePath("/agents/{agent}/messages/{id}/blobs/{blob}", { agent, id, blob }), { timeoutMs: BLOB_TIMEOUT_MS });
  if (res.ok) return new Uint8Array(await res.arrayBuffer());
  const body = errorBodySchema.safeParse(await res.json().catch(() => null));
  throw refusal(conn, res.status, body.success ? body.data : null);
}

/** A finished message's reply: inline, or read back from R2 when it was too large to keep inline. */
export async function replyText(conn: Connection, agent: string, view: Pick<MessageView, "id" | "reply" | "reply_blob">): Promise<string | null> {
  if (view.reply_blob === null) return view.reply;
  return new TextDecoder().decode(await downloadBlob(conn, agent, view.id, view.reply_blob.id));
}
