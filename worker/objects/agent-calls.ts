// The methods the Worker calls on an agent object (../agents.ts), input validated there: each is
// one event, `run` by the object (agent-object.ts), which answers from the plan it applied.
import type { Answer, MessagePolicy } from "../rules/message-lease.ts";
import type { StepWrite, UnknownOutcome } from "../rules/step-journal.ts";
import type { Question } from "../wire/protocol.ts";
import type { Presence } from "../wire/server-frames.ts";
import type { WebhookConfigBody } from "../wire/webhooks.ts";
import type { ControlRoute } from "./agent-controls.ts";
import type { Inputs, Outputs } from "./agent-inputs.ts";
import type { ConnState } from "./connections.ts";
import type { Answerer, HeartbeatAnswer } from "./message-leases.ts";
import { SocketObject } from "./socket-object.ts";
import type { OutputFollowers } from "./output-followers.ts";
import type { OutputChunk, OutputPage } from "../wire/output.ts";

/** The longest one follow call waits in the object before it answers an empty page. */
export const FOLLOW_WAIT_MS = 25_000;
import type { AgentSchedules, ScheduleAnswer } from "./agent-schedules.ts";
import type { ScheduleBody, ScheduleView } from "../wire/schedules.ts";
import type { A2APushTargets, PushAnswer, PushSetAnswer } from "./a2a-push.ts";
import type { MessageView } from "../wire/http-responses.ts";
import type { PushTargetBody, PushTargetView } from "../wire/push.ts";

const noMessage = (id: number) => ({ ok: false, status: 404, code: "not_found", message: `no message ${id}` }) as const;

export abstract class AgentCalls extends SocketObject<ConnState> {
  /** One call of the Worker as one event, answered from its plan. */
  protected abstract run<K extends keyof Inputs>(input: Inputs[K] & { type: K }): Outputs[K];
  protected abstract readonly followers: OutputFollowers;
  /** A call on the agent's schedules (agent-schedules.ts), at the object's clock; slots it makes due are posted at once. */
  protected abstract scheduleCall<T>(call: (s: AgentSchedules, now: number) => T, changes: boolean): T;
  /** A call on the agent's A2A push targets (a2a-push.ts), with the message views it needs; a change plans the alarm. */
  protected abstract pushCall<T>(call: (p: A2APushTargets, view: (id: number) => MessageView | null, now: number) => T, changes: boolean): T;

  presence(): Presence { return this.run({ type: "presence" }); }
  post(text: string, opts: Inputs["post"]["opts"]): Outputs["post"] { return this.run({ type: "post", text, opts }); }
  messagePage(after: number, limit: number): Outputs["messages"] { return this.run({ type: "messages", after, limit }); }
  message(id: number): Outputs["message"] { return this.run({ type: "message", id }); }
  stepOf(id: number, name: string, proof: { token: number; runKey: string } | null = null): Outputs["stepOf"] { return this.run({ type: "stepOf", id, name, proof }); }
  recordStep(id: number, token: number, runKey: string, write: StepWrite): Outputs["recordStep"] { return this.run({ type: "recordStep", id, token, runKey, write }); }
  reserveBlob(id: number, token: number, runKey: string, bytes: number): Outputs["reserveBlob"] { return this.run({ type: "reserveBlob", id, token, runKey, bytes }); }
  stageBlob(id: number, token: number, runKey: string, blob: string, stored: boolean): Outputs["stageBlob"] { return this.run({ type: "stageBlob", id, token, runKey, blob, stored }); }
  blobKey(id: number, blob: string): string | null { return this.run({ type: "blobKey", id, blob }); }
  /** A batch of a served command's live output (`baton output`), at its token and run key. */
  writeOutput(id: number, token: number, runKey: string, chunks: OutputChunk[]): Outputs["outputWrite"] { return this.run({ type: "outputWrite", id, token, runKey, chunks }); }
  /** One page of a message's stored output after seq `after` (null: no such message). */
  outputPage(id: number, after: number): OutputPage | null { return this.run({ type: "outputPage", id, after }); }
  /**
   * The next page after `after`, waiting up to `waitMs` (at most FOLLOW_WAIT_MS) for one when none
   * is stored yet and the message is not final; an empty page when nothing came.
   */
  async followOutput(id: number, after: number, waitMs: number): Promise<OutputPage | null> {
    const first = this.outputPage(id, after);
    if (first === null || first.events.length > 0 || first.final) return first;
    await this.followers.wait(id, Math.max(0, Math.min(waitMs, FOLLOW_WAIT_MS)));
    return this.outputPage(id, after);
  }
  heartbeatRun(id: number, token: number, runKey: string, details: unknown): HeartbeatAnswer { return this.run({ type: "heartbeat", id, token, runKey, details }); }
  control(route: ControlRoute, body: unknown): Outputs["control"] { return this.run({ type: "control", route, body }); }
  policy(): Outputs["policy"] { return this.run({ type: "policy" }); }
  setPolicy(update: Partial<MessagePolicy>): Outputs["setPolicy"] { return this.run({ type: "setPolicy", update }); }
  resume(id: number, input: string | null, outcome: UnknownOutcome | null, by: Answerer): Outputs["resume"] { return this.run({ type: "resume", id, input, outcome, by }); }
  /** A person's answer to a parked message: approve, reject, or one of its question's choices. */
  answer(id: number, reply: Answer, by: Answerer): Outputs["answer"] { return this.run({ type: "answer", id, reply, by }); }
  /** A failed message queued again, with a fresh set of tries (its attempt numbers go on). */
  retry(id: number, by: Answerer): Outputs["retry"] { return this.run({ type: "retry", id, by }); }
  /** Cancels a message wherever it is (rules/message-cancel.ts), as one event of the plan. */
  cancel(id: number, reason: string | null, by: Answerer): Outputs["cancel"] { return this.run({ type: "cancel", id, reason, by }); }
  /** A served command's question (`baton ask`), stored under the run's token for the park that follows. */
  ask(id: number, token: number, runKey: string, question: Question, deadlineSeconds: number | null): Outputs["ask"] { return this.run({ type: "ask", id, token, runKey, question, deadlineSeconds }); }
  /** The agent's own webhook (never its secret); null when it has none. */
  webhook(): Outputs["webhook"] { return this.run({ type: "webhook" }); }
  /** A signed `webhook.test` event for the agent's own webhook (null: it has none); the Worker sends it. */
  webhookTest(): Outputs["webhookTest"] { return this.run({ type: "webhookTest" }); }
  setWebhook(body: WebhookConfigBody, origin: string): Outputs["setWebhook"] { return this.run({ type: "setWebhook", body, origin }); }
  deleteWebhook(): boolean { return this.run({ type: "deleteWebhook" }); }
  /** Message `id`'s push targets (404: no such message). */
  pushTargets(id: number): PushAnswer<PushTargetView[]> {
    return this.pushCall((p, view) => view(id) === null ? noMessage(id) : { ok: true, value: p.list(id) }, false);
  }
  /** `elsewhere`: the account's push targets in its other agents. */
  setPushTarget(id: number, target: string, body: PushTargetBody, elsewhere: number): PushSetAnswer {
    return this.pushCall((p, view, now) => {
      const m = view(id);
      return m === null ? noMessage(id) : p.set(m, target, body, elsewhere, now);
    }, true);
  }
  deletePushTarget(id: number, target: string): boolean { return this.pushCall((p) => p.delete(id, target), false); }
  /** `elsewhere`: the account's schedules in its other agents, as the directory counts them. */
  addSchedule(body: ScheduleBody, elsewhere: number): ScheduleAnswer { return this.scheduleCall((s, now) => s.add(body, now, elsewhere), true); }
  listSchedules(): ScheduleView[] { return this.scheduleCall((s) => s.list(), false); }
  schedule(id: number): ScheduleAnswer { return this.scheduleCall((s) => s.show(id), false); }
  pauseSchedule(id: number, paused: boolean): ScheduleAnswer { return this.scheduleCall((s) => s.setPaused(id, paused), true); }
  removeSchedule(id: number): boolean { return this.scheduleCall((s) => s.remove(id), true); }
}
