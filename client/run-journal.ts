// A running message's journal over HTTP, for code that is not the serve connection itself: a
// command `baton serve` started (`baton step`, `baton effect`, `baton heartbeat`) or a program in
// any language. The run key serve hands its command (BATON_RUN_KEY) stands for the connection, so a
// write is honoured only while that hand-out is the message's current one.
import {
  heartbeatAnswerSchema, stepViewSchema, stepWrittenSchema, type HeartbeatAnswer, type StepView, type StepWritten,
} from "../worker/wire/http-responses.ts";
import type { OnUnknown } from "../worker/wire/protocol.ts";
import { CoordinatorError } from "./errors.ts";
import { requestJson, type Connection } from "./http.ts";

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
  constructor(private readonly conn: Connection, readonly proof: RunProof) {}

  private path(tail: string): string {
    return `/agents/${encodeURIComponent(this.proof.agent)}/messages/${this.proof.id}/${tail}`;
  }

  /** The record under `name` with its value, or null when nothing is recorded yet. */
  async get(name: string): Promise<StepView | null> {
    try {
      return await requestJson(this.conn, "GET", this.path(`steps/${encodeURIComponent(name)}`), stepViewSchema);
    } catch (err) {
      if (err instanceof CoordinatorError && err.status === 404 && err.code === "not_found") return null;
      throw err;
    }
  }

  /** Writes a step's result, or an effect's intent or outcome; resolves with what the journal holds now. */
  record(name: string, write: { kind: "step" | "effect"; phase: "intent" | "done"; value?: unknown; onUnknown?: OnUnknown }): Promise<StepWritten> {
    const body = {
      token: this.proof.token, run_key: this.proof.runKey, kind: write.kind, phase: write.phase,
      ...(write.phase === "done" ? { value: write.value ?? null } : {}), ...(write.onUnknown === undefined ? {} : { on_unknown: write.onUnknown }),
    };
    return requestJson(this.conn, "PUT", this.path(`steps/${encodeURIComponent(name)}`), stepWrittenSchema, { body });
  }

  /** The run is alive; `details` become its progress. Resolves with its deadline now. */
  heartbeat(details?: unknown): Promise<HeartbeatAnswer> {
    const body = { token: this.proof.token, run_key: this.proof.runKey, ...(details === undefined ? {} : { details }) };
    return requestJson(this.conn, "POST", this.path("heartbeat"), heartbeatAnswerSchema, { body });
  }
}
