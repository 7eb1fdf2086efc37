// The Worker's calls to an agent object, each decided as one input: the plan event it makes (null:
// none, a read; a run's write over HTTP carries the write and the rows it touches), and its
// answer, built from the plan once it is applied, or from what apply stored. A person's input (answer, resume, retry)
// and a cancel are decided by the plan itself (rules/plan/person.ts, rules/message-cancel.ts); the
// object (agent-object.ts) runs the event and hands the plan back here for the answer.
import type { CoordinatorConfig } from "../config.ts";
import type { AgentEvent, AgentPlan } from "../rules/agent-plan.ts";
import { buildPresence, PREVIEW_CHARS } from "../rules/presence.ts";
import { runnerOf } from "../rules/agent-plan.ts";
import type { MessageView, StepView } from "../wire/http-responses.ts";
import type { Presence } from "../wire/server-frames.ts";
import type { AgentControls } from "./agent-controls.ts";
import type { AgentIdentity, AgentStore } from "./agent-store.ts";
import type { AgentWebhooks } from "./agent-webhooks.ts";
import { leaseOf } from "./message-store.ts";
import { answerOf, type RunAnswers, type WriteInput } from "../rules/plan/write-event.ts";
import { LIMITS } from "../wire/protocol.ts";
import type { AgentMetricsKeeper } from "./metrics-agent.ts";
import type { WorkDesk } from "./work-desk.ts";
import type { OutputPage } from "../wire/output.ts";
import { reportCorrupt } from "./stored-read.ts";
import { stepValueJson } from "../rules/message-json.ts";

/** What one message's uploads may hold. */
const BLOB_BUDGET = { bytes: LIMITS.messageBlobBytes, count: LIMITS.blobsPerMessage, perBlob: LIMITS.blobBytes };

/** Statuses after which a message may still run again: its output may still grow. */
const OPEN_STATUSES: readonly string[] = ["queued", "running", "parked"];

export type { CancelAnswer, Decided, Inputs, LiveConn, Outputs, PostResult, ResumeAnswer } from "./agent-input-types.ts";
import type { Decided, Inputs, LiveConn, Outputs, PostResult, ResumeAnswer } from "./agent-input-types.ts";

type Handlers = { [K in keyof Inputs]: (input: Inputs[K], now: number, conns: readonly LiveConn[]) => Decided<Outputs[K]> };

export interface InputParts {
  desk: WorkDesk;
  store: AgentStore;
  controls: AgentControls;
  webhooks: AgentWebhooks;
  metrics: AgentMetricsKeeper;
  config: CoordinatorConfig;
  identity: AgentIdentity | null;
  blobs?: R2Bucket;
}

const answered = <T>(value: T, event: AgentEvent | null = null): Decided<T> => ({ event, answer: () => value });

export class AgentInputs {
  constructor(private readonly p: InputParts) {}

  decide<K extends keyof Inputs>(input: Inputs[K] & { type: K }, now: number, conns: readonly LiveConn[]): Decided<Outputs[K]> {
    return this.handlers[input.type](input, now, conns);
  }

  /**
   * A run's write over HTTP (its run key stands for the connection): one event with the write and
   * the rows it touches; the plan decides it (rules/plan/write-event.ts) and its answer is read from the plan.
   */
  private runWrite<K extends keyof RunAnswers>(kind: K, write: WriteInput): Decided<RunAnswers[K]> {
    return { event: { type: "write", from: null, write }, answer: (plan) => answerOf(plan?.write ?? null, kind) };
  }

  /** What every run write over HTTP reads: its message's lease, and whether the run key is the attempt's. */
  private run(id: number, token: number, runKey: string) {
    return this.p.desk.leases.runOf(id, token, { runKey });
  }

  private view(id: number): MessageView {
    return this.p.desk.view(this.p.desk.messages.get(id)!);
  }

  private person(id: number): (plan: AgentPlan | null) => ResumeAnswer {
    return (plan) => {
      const verdict = plan?.person;
      if (!verdict) throw new Error("a person's input is always planned");
      return verdict.ok ? { ok: true, view: this.view(id) } : verdict;
    };
  }

  private readonly handlers: Handlers = {
    presence: (_, now, conns) => answered(this.presenceOf(conns, now)),
    post: (i, now) => this.post(i, now),
    messages: ({ after, limit }) => answered({ agent: this.agentName(), ...this.p.desk.historyViews(after, limit) }),
    message: ({ id }) => answered(this.p.desk.viewOf(id)),
    stepOf: ({ id, name, proof }, now) => {
      const run = proof === null ? null : this.p.desk.leases.checkReplay(id, proof.token, { runKey: proof.runKey }, now);
      if (run === null || run.ok) return answered(this.stepOf(id, name));
      // A stale replay is refused as its write would be; an expired run is taken back by a plan now.
      return answered(run, run.expired ? { type: "work" } : null);
    },
    recordStep: ({ id, token, runKey, write }) => this.runWrite("step", { kind: "step", ...this.run(id, token, runKey), step: write, rows: this.p.desk.leases.stepRows(id, write) }),
    // Uploads of earlier attempts were dropped to make room: their R2 objects go now.
    reserveBlob: ({ id, token, runKey, bytes }) => ({
      ...this.runWrite("reserve", { kind: "reserve", ...this.run(id, token, runKey), bytes, rows: this.p.desk.leases.reserveRows(id), budget: BLOB_BUDGET }),
      sweep: true,
    }),
    stageBlob: ({ id, token, runKey, blob, stored }, now) => {
      // Its message was pruned while it streamed: nothing of a message changes, the R2 object goes to the garbage.
      if (stored) this.p.desk.leases.forgetStored(id, blob, now);
      return { ...this.runWrite("stage", { kind: "stage", ...this.run(id, token, runKey), blob, stored, row: this.p.desk.leases.blobRow(id, blob) }), sweep: true };
    },
    blobKey: ({ id, blob }) => answered(this.p.desk.leases.blobKey(id, blob)),
    heartbeat: ({ id, token, runKey, details }) => this.runWrite("heartbeat", { kind: "heartbeat", ...this.run(id, token, runKey), details }),
    outputWrite: ({ id, token, runKey, chunks }) => ({
      event: { type: "write", from: null, write: this.p.desk.outputInput(id, token, chunks, { runKey }) },
      answer: (plan) => {
        const d = answerOf(plan?.write ?? null, "output");
        const reply = d.reply;
        if (reply.type === "result" && reply.op === "output") return { ok: true, id, token, offset: reply.offset };
        if (reply.type !== "error" || d.status === 200) throw new Error(`an output write is answered with its result or an error, not ${reply.type}`);
        return { ok: false, status: d.status, code: reply.code, message: reply.message, expired: d.expired };
      },
    }),
    outputPage: ({ id, after }) => answered(this.outputPage(id, after)),
    ask: ({ id, token, runKey, question, deadlineSeconds }) => this.runWrite("ask", { kind: "ask", ...this.run(id, token, runKey), question, deadlineSeconds, open: this.p.desk.leases.openQuestion(id, token), rows: this.p.desk.leases.journalRows(id, question.step ?? null),
    }),
    // Pause, unpause, drain, undrain: decided and stored by one plan (which may move the lease at its safe point).
    control: ({ route, body }, now) => ({
      event: { type: "control", route, body },
      answer: (plan) => ({ ...plan!.control!.outcome, agent: this.agentName(), report: this.p.controls.report(now) }),
    }),
    policy: () => answered({ policy: this.p.desk.leases.policies.policy(), problem: this.p.desk.leases.policies.problem() }),
    setPolicy: ({ update }) => ({
      event: { type: "policy", update },
      answer: (plan) => plan!.policyRefusal === null
        ? { ok: true, policy: this.p.desk.leases.policies.policy() }
        : { ok: false, status: 400, code: "bad_request", message: plan!.policyRefusal },
    }),
    resume: ({ id, input, outcome, by }) => ({ event: { type: "resume", id, target: this.p.desk.leases.target(id), input, outcome, by }, answer: this.person(id) }),
    answer: ({ id, reply, by }) => ({ event: { type: "answer", id, target: this.p.desk.leases.target(id), reply, by }, answer: this.person(id) }),
    retry: ({ id, by }) => ({ event: { type: "retry", id, target: this.p.desk.leases.target(id), by }, answer: this.person(id) }),
    cancel: ({ id, reason, by }) => {
      const stored = this.p.desk.messages.get(id);
      if (!stored) return answered({ ok: false, status: 404, code: "not_found", message: `no message ${id}` });
      return {
        event: { type: "cancel", target: leaseOf(stored), by, reason },
        answer: (plan) => {
          const verdict = plan!.cancel!.verdict;
          if (verdict.outcome === "refused") return { ok: false, status: 409, code: verdict.code, message: verdict.message };
          return { ok: true, already: verdict.outcome === "already", view: this.view(id) };
        },
      };
    },
    webhook: (_, now) => answered(this.p.webhooks.view(this.agentName(), now)),
    webhookTest: (_, now) => answered(this.p.webhooks.testRequest({ account: this.p.identity?.account ?? "unknown", agent: this.agentName() }, now)),
    // Events then go to the agent's own webhook instead of the account's; `origin`: where event links point.
    setWebhook: ({ body, origin }, now) => answered(this.p.webhooks.set(body, origin, this.agentName(), now), { type: "work" }),
    deleteWebhook: () => {
      const deleted = this.p.webhooks.delete();
      return answered(deleted, deleted ? { type: "work" } : null);
    },
  };

  /**
   * A post is an event: its plan inserts the row (rules/plan/post.ts), hands it out and shows it to
   * every other connection; its answer is the row as stored. With an idempotency key, a retry within
   * the key's retention returns the message the first post created (200, replayed) and plans nothing.
   */
  private post({ text, opts }: Inputs["post"], now: number): Decided<PostResult> {
    const { messages } = this.p.desk;
    const earlier = opts.key === null ? null : messages.postKeys.postedWith(opts.key, now, this.p.config.retention.postKeyMs);
    if (earlier !== null) {
      const first = messages.get(earlier);
      return answered({ status: 200, replayed: true, view: first ? this.p.desk.view(first) : { id: earlier, pruned: true } });
    }
    // The on_busy policy reads what it decides on in the post's group, all of it; queue, the default, reads nothing, and a question for a person is never busy.
    const group = opts.group ?? null;
    const question = opts.question ?? null;
    const groupOpen = question !== null ? null : this.p.desk.busyGroupOf(group);
    const post = {
      text, group, runTimeoutMs: opts.runTimeoutMs ?? null, key: opts.key, question, deadlineSeconds: opts.deadlineSeconds ?? null, traceparent: opts.traceparent ?? null,
    };
    return {
      event: { type: "post", post, lastId: messages.lastIssuedId(), groupOpen, by: opts.by },
      answer: (plan) => {
        const posted = plan?.post;
        if (!posted) throw new Error("a post is always planned");
        if (!posted.ok) return { status: 409, code: posted.code, message: posted.message, holder: posted.holder };
        return { status: 201, replayed: false, view: this.view(posted.insert.id) };
      },
    };
  }

  /** One step of a message with its value, and the idempotency key an effect of that name hands out. */
  private stepOf(id: number, name: string): StepView | { corrupt: string } | null {
    const record = this.p.desk.steps.get(id, name);
    if (!record) return null;
    const value = record.value === null ? { ok: true as const, value: null } : stepValueJson.read(record.value);
    if (!value.ok) {
      // Said, not guessed: this step's read fails and names the row; every other read goes on.
      reportCorrupt(value.problem, `step ${name} of message ${id} answered 500`);
      return { corrupt: `${value.problem} (message ${id}, step ${name})` };
    }
    return {
      id, name, kind: record.kind, status: record.status, attempt: record.attempt, on_unknown: record.onUnknown, blob: record.blob,
      value: value.value, idempotency_key: this.p.desk.leases.effectKeyOf(id, name) ?? "",
    };
  }

  /** A page of a message's output; final once the message is (nothing more will be written). */
  private outputPage(id: number, after: number): OutputPage | null {
    const run = this.p.desk.messages.runOf(id);
    if (run === null) return null;
    const page = this.p.desk.output.page(id, after);
    const final = !page.more && !OPEN_STATUSES.includes(run.status);
    return { id, status: run.status, events: page.events, cursor: page.cursor, more: page.more, final };
  }

  private agentName(): string {
    return this.p.identity?.agent ?? "unknown";
  }

  presenceOf(conns: readonly LiveConn[], now: number): Presence {
    const machines = new Map(conns.map((c) => [runnerOf(c.state), c.state.machine]));
    return buildPresence({
      agent: this.agentName(),
      now,
      ttlMs: this.p.config.heartbeatTtlMs,
      lease: this.p.store.lease(),
      conns: conns.map((c) => ({ ...c.state, heartbeat: c.heartbeat })),
      transitions: this.p.store.recentTransitions(),
      recentMessages: this.p.desk.messages.census.recent(10, PREVIEW_CHARS),
      work: this.p.desk.leases.report(machines),
      controls: this.p.controls.report(now),
      wakes: this.p.store.wakes(),
      webhook: this.p.webhooks.report(),
    });
  }
}
