// What the Worker may ask of an agent object, as types: every call by name with its arguments
// (Inputs), what each answers (Outputs), and one call decided (an event for the plan and its
// answer once the plan is applied). agent-inputs.ts decides them; agent-calls.ts makes them.
import type { AgentEvent, AgentPlan } from "../rules/agent-plan.ts";
import type { Answer, MessagePolicy } from "../rules/message-lease.ts";
import type { StepWrite, UnknownOutcome } from "../rules/step-journal.ts";
import type { MessageView, StepView } from "../wire/http-responses.ts";
import type { Question } from "../wire/protocol.ts";
import type { Presence } from "../wire/server-frames.ts";
import type { WebhookConfigBody, WebhookView } from "../wire/webhooks.ts";
import type { AgentControls, ControlOutcome, ControlRoute } from "./agent-controls.ts";
import type { ConnState } from "./connections.ts";
import type { Answerer, BlobReserve, HeartbeatAnswer, Refusal, StepAnswer } from "./message-leases.ts";
import type { AskAnswer } from "../rules/plan/run-write.ts";
import type { SignedRequest } from "./webhook-delivery.ts";
import type { Socket } from "./socket-object.ts";
import type { PersonRefusal } from "../rules/plan/person.ts";
import type { OutputChunk, OutputPage } from "../wire/output.ts";

/** A live connection with its proven heartbeat, as one snapshot saw it. */
export interface LiveConn extends Socket<ConnState> {
  heartbeat: number;
}

export type PostResult =
  | { status: 201 | 200; replayed: boolean; view: MessageView | { id: number; pruned: true } }
  /** on_busy reject while the group is busy: nothing was stored. */
  | { status: 409; code: "busy"; message: string; holder: number };

export type ResumeAnswer = { ok: true; view: MessageView } | PersonRefusal;
/** A cancel's answer: the message as it is now (`already`: an earlier cancel stands), or why not. */
export type CancelAnswer =
  | { ok: true; already: boolean; view: MessageView }
  | { ok: false; status: 404 | 409; code: "not_found" | "message_finished"; message: string };

type Run = { id: number; token: number; runKey: string };

/** Every call the Worker makes, by name, with its arguments. */
export interface Inputs {
  presence: object;
  post: { text: string; opts: { group?: string; runTimeoutMs?: number; key: string | null; by: Answerer; question?: Question; deadlineSeconds?: number; traceparent?: string } };
  messages: { after: number; limit: number };
  message: { id: number };
  /** `proof`: the run replaying its journal (refused as its write would be when stale); null: an inspection. */
  stepOf: { id: number; name: string; proof: { token: number; runKey: string } | null };
  recordStep: Run & { write: StepWrite };
  reserveBlob: Run & { bytes: number };
  stageBlob: Run & { blob: string; stored: boolean };
  blobKey: { id: number; blob: string };
  heartbeat: Run & { details: unknown };
  outputWrite: Run & { chunks: OutputChunk[] };
  outputPage: { id: number; after: number };
  ask: Run & { question: Question; deadlineSeconds: number | null };
  control: { route: ControlRoute; body: unknown };
  policy: object;
  setPolicy: { update: Partial<MessagePolicy> };
  resume: { id: number; input: string | null; outcome: UnknownOutcome | null; by: Answerer };
  answer: { id: number; reply: Answer; by: Answerer };
  retry: { id: number; by: Answerer };
  cancel: { id: number; reason: string | null; by: Answerer };
  webhook: object;
  webhookTest: object;
  setWebhook: { body: WebhookConfigBody; origin: string };
  deleteWebhook: object;
}

/** What each call answers. */
export interface Outputs {
  presence: Presence;
  post: PostResult;
  messages: { agent: string; messages: MessageView[]; cursor: number };
  message: MessageView | null;
  /** `corrupt`: the step's stored value is not JSON; that read answers 500 and names the row. */
  stepOf: StepView | Refusal | { corrupt: string } | null;
  recordStep: StepAnswer;
  reserveBlob: BlobReserve;
  stageBlob: Refusal | { ok: true };
  blobKey: string | null;
  heartbeat: HeartbeatAnswer;
  outputWrite: Refusal | { ok: true; id: number; token: number; offset: number };
  outputPage: OutputPage | null;
  ask: AskAnswer;
  control: ControlOutcome & { agent: string; report: ReturnType<AgentControls["report"]> };
  /** The policy in force, and what was wrong with the stored one (null: nothing). */
  policy: { policy: MessagePolicy; problem: string | null };
  setPolicy: { ok: true; policy: MessagePolicy } | { ok: false; status: 400; code: "bad_request"; message: string };
  resume: ResumeAnswer;
  answer: ResumeAnswer;
  retry: ResumeAnswer;
  cancel: CancelAnswer;
  webhook: WebhookView | null;
  webhookTest: Promise<SignedRequest | null>;
  setWebhook: WebhookView;
  deleteWebhook: boolean;
}

/** One call decided: the plan event it makes (null: none), and its answer from that plan. */
export interface Decided<T> {
  event: AgentEvent | null;
  answer: (plan: AgentPlan | null) => T;
  /** Blobs may have become garbage: the object sweeps them. */
  sweep?: boolean;
}
