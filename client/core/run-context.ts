// What a handler's `ctx` does for one run: steps and effects through the journal rules over the
// socket's frames, asks and parks, checkpoints in call order, heartbeats. Every write goes through
// the Writer, under the message's token (the agent's checkpoint under the serve fence).
import { checkpointTooLarge, LIMITS, type OnUnknown, type Question } from "../../worker/wire/protocol.ts";
import { CoordinatorError, WaitingForPersonError } from "../errors.ts";
import type { Clock } from "./clock.ts";
import { FrameJournal } from "./frame-journal.ts";
import type { AskOptions, MessageContext, PersonAnswer, ServeEvent } from "./handler.ts";
import { ApprovalRequiredError, checkStepName, recordedAnswer, runEffect, runStep } from "./journal-rules.ts";
import type { RunBlobs } from "./run-blobs.ts";
import type { Run } from "./run.ts";
import type { Writer } from "./writes.ts";
import type { OutputBatcher } from "./output-batcher.ts";

export interface RunEnv {
  agent: string;
  writer: Writer;
  blobs: RunBlobs;
  clock: Clock;
  event: (event: ServeEvent) => void;
  /** The serve fence this process holds (-1 when it is not the holder). */
  fence: number;
  /** The agent's checkpoint, as handed to the holder; `set` after one was stored. */
  agentCheckpoint: { get(): unknown; set(value: unknown): void };
  /** This run's live output, batched into frames under its token. */
  output: OutputBatcher;
}

interface ParkOptions {
  checkpoint?: unknown;
  deadlineSeconds?: number;
  question?: Question;
}

/** The context handed to the handler of `run`. */
export function runContext(run: Run, env: RunEnv, messageCheckpoint: unknown): MessageContext {
  const journal = new FrameJournal(run, env.writer, env.blobs);
  const identity = { agent: env.agent, id: run.id };
  return {
    signal: run.signal,
    fence: env.fence,
    token: run.token,
    checkpoint: env.agentCheckpoint.get(),
    messageCheckpoint,
    saveCheckpoint: async (value) => {
      checkCheckpoint(value);
      await env.writer.send(run, { type: "agent_checkpoint", fence: env.fence, value }, true);
      env.agentCheckpoint.set(value);
    },
    saveMessageCheckpoint: (value) => run.inOrder(async () => {
      const blob = await checkpointBlob(run, env, value);
      await env.writer.send(run, { type: "message_checkpoint", id: run.id, token: run.token, ...(blob === null ? { value } : { blob }) });
    }),
    park: (options = {}) => park(run, env, options),
    step: (name, fn) => {
      checkStepName(name);
      return run.once(`step ${name}`, () => runStep(journal, name, fn));
    },
    effect: (name, fn, options = {}) => {
      checkStepName(name);
      const onUnknown: OnUnknown = options.onUnknown ?? "ask";
      const { checkpoint, deadlineSeconds, onDeadline, rejectNeeds, ...asked } = options.approve ?? { question: "", args: null };
      if (onDeadline !== undefined && deadlineSeconds === undefined) throw new TypeError("effect approve: onDeadline needs deadlineSeconds");
      const approve = { ...asked, ...(onDeadline === undefined ? {} : { on_deadline: onDeadline }), ...(rejectNeeds === undefined ? {} : { reject_needs: rejectNeeds }) };
      const effect = () => runEffect(journal, name, onUnknown, async (key) => {
        run.effectsRunning.add(name);
        try {
          return await fn({ key, signal: run.signal });
        } finally {
          run.effectsRunning.delete(name);
        }
      }, identity, options.approve === undefined ? undefined : approve);
      return run.once(`effect ${name}`, async () => {
        try {
          return await effect();
        } catch (err) {
          if (!(err instanceof ApprovalRequiredError)) throw err;
          // The coordinator stored the question for this attempt: parking carries it to a person.
          await park(run, env, { checkpoint, deadlineSeconds });
          throw new WaitingForPersonError(run.id, err.question);
        }
      });
    },
    heartbeat: async (details) => {
      const sentAt = env.clock.now();
      const answer = await env.writer.send(run, { type: "heartbeat", id: run.id, token: run.token, ...(details === undefined ? {} : { details }) });
      if (answer.op !== "heartbeat") throw new CoordinatorError("heartbeat answered with another result", 0, null);
      run.armHeartbeatClock(sentAt, () => heartbeatLapsed(run, env));
      return answer.expires_at;
    },
    ask: (question, options = {}) => ask(run, env, journal, question, options),
    output: (data, stream = "text") => env.output.write(data, stream),
  };
}

/** The local heartbeat clock ran out: the coordinator is taking the run back. */
export function heartbeatLapsed(run: Run, env: Pick<RunEnv, "event">): void {
  env.event({ type: "revoked", id: run.id, token: run.token, reason: "no heartbeat within the heartbeat timeout by the local clock" });
}

/** The answer kept in the journal when this ask was answered; else the message parks with the question and this run ends. */
async function ask(run: Run, env: RunEnv, journal: FrameJournal, question: string, options: AskOptions): Promise<PersonAnswer> {
  const name = options.name ?? `ask:${++run.asks}`;
  checkStepName(name);
  if (options.onDeadline !== undefined && options.deadlineSeconds === undefined) throw new TypeError("ask: onDeadline needs deadlineSeconds");
  const inside = run.effectsRunning.values().next().value;
  if (inside !== undefined) {
    // Parking here would leave the message waiting on the effect's outcome, where no answer can reach it.
    throw new TypeError(`ask inside effect "${inside}": a question asked inside an effect could never be answered; ask before the effect or after it`);
  }
  const answer = await recordedAnswer(journal, name);
  if (answer !== null) return answer as PersonAnswer;
  await park(run, env, {
    checkpoint: options.checkpoint, deadlineSeconds: options.deadlineSeconds,
    question: {
      text: question, step: name, ...(options.choices ? { choices: options.choices } : {}), ...(options.onDeadline ? { on_deadline: options.onDeadline } : {}),
      ...(options.needs === undefined ? {} : { needs: options.needs }), ...(options.rejectNeeds === undefined ? {} : { reject_needs: options.rejectNeeds }),
      ...(options.approvers === undefined ? {} : { approvers: options.approvers }),
    },
  });
  throw new WaitingForPersonError(run.id, question);
}

/** Gives the message's lease up until a resume or an answer, after the run's earlier checkpoint writes. */
export function park(run: Run, env: RunEnv, options: ParkOptions): Promise<void> {
  return run.inOrder(async () => {
    // What the run wrote before it parks is stored before its lease goes.
    await env.output.flush();
    const blob = options.checkpoint === undefined ? null : await checkpointBlob(run, env, options.checkpoint);
    await env.writer.send(run, {
      type: "park", id: run.id, token: run.token,
      ...(options.checkpoint === undefined ? {} : blob === null ? { value: options.checkpoint } : { blob }),
      ...(options.deadlineSeconds === undefined ? {} : { deadline_seconds: options.deadlineSeconds }),
      ...(options.question === undefined ? {} : { question: options.question }),
    });
    run.markParked();
    env.event({ type: "parked", id: run.id, token: run.token });
  });
}

function checkCheckpoint(value: unknown): void {
  if (checkpointTooLarge(value)) throw new RangeError(`a checkpoint is JSON of at most ${LIMITS.checkpointBytes} bytes`);
}

/** The blob a large message checkpoint was uploaded as, or null when it rides inline. */
async function checkpointBlob(run: Run, env: RunEnv, value: unknown): Promise<string | null> {
  if (value === undefined) throw new TypeError("a checkpoint is a JSON value, not undefined");
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  return bytes.byteLength <= LIMITS.checkpointBytes ? null : env.blobs.upload(run, bytes, "a checkpoint");
}
