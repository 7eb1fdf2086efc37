// A baton message seen as an A2A task (worker/rules/a2a-task.ts), over plain data: each status's
// task state, the question as the input-required status with its choices, which texts answer it,
// the reply as an artifact, task ids that are message ids and nothing else, and live output as
// appends to one artifact with a working status per attempt.
import { describe, expect, it } from "vitest";
import { answerChoice, choicesOf, contextOf, isTerminal, messageIdOf, outputUpdates, taskOf, taskState } from "../../worker/rules/a2a-task.ts";
import type { MessageView } from "../../worker/wire/http-responses.ts";

const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);

function view(over: Partial<MessageView> = {}): MessageView {
  return {
    id: 7, text: "review #42", status: "queued", attempts: 0, created_at: NOW, acked_at: null, acked_fence: null, reply: null, reply_blob: null,
    token: 0, acked_token: null, group: null, run_timeout_seconds: null, expires_at: null, claim_seq: null, machine: null, checkpoint: null,
    checkpoint_blob: null, resume_input: null, error: null, failures: 0, retry_at: null, steps: [], waiting_on: null, question: null, answers: [],
    resume_choice: null, heartbeat_at: null, progress: null, ...over,
  };
}

describe("a message as an A2A task", () => {
  it.each([
    ["queued", 0, "TASK_STATE_SUBMITTED"],
    ["queued", 1, "TASK_STATE_WORKING"],
    ["running", 1, "TASK_STATE_WORKING"],
    ["parked", 1, "TASK_STATE_INPUT_REQUIRED"],
    ["acknowledged", 1, "TASK_STATE_COMPLETED"],
    ["failed", 5, "TASK_STATE_FAILED"],
    ["rejected", 1, "TASK_STATE_REJECTED"],
    ["cancelled", 1, "TASK_STATE_CANCELED"],
    ["superseded", 0, "TASK_STATE_CANCELED"],
  ] as const)("%s after %i attempts is %s", (status, attempts, state) => {
    expect(taskState({ status, attempts })).toBe(state);
  });

  it("retried by a person after 5 attempts, it is submitted again until its next hand-out (attempt 6), then working", () => {
    expect(taskState({ status: "queued", attempts: 5, retried_after: 5 })).toBe("TASK_STATE_SUBMITTED");
    expect(taskState({ status: "running", attempts: 6, retried_after: 5 })).toBe("TASK_STATE_WORKING");
    expect(taskState({ status: "queued", attempts: 6, retried_after: 5 })).toBe("TASK_STATE_WORKING");
    expect(taskOf(view({ status: "queued", attempts: 6, retried_after: 5, declined: 1 }), "a", NOW).metadata).toEqual({ baton: { agent: "a", message: 7, status: "queued", attempts: 6, retried_after: 5, declined: 1, machine: null } });
    expect(taskOf(view({ status: "queued", attempts: 1, retried_after: 0, declined: 0 }), "a", NOW).metadata).toEqual({ baton: { agent: "a", message: 7, status: "queued", attempts: 1, machine: null } });
  });

  it("terminal states are the ends; input-required is not one", () => {
    expect(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"].every((s) => isTerminal(s as never))).toBe(true);
    expect(isTerminal("TASK_STATE_INPUT_REQUIRED")).toBe(false);
    expect(isTerminal("TASK_STATE_WORKING")).toBe(false);
  });

  it("a task id is a message id in decimal and nothing else", () => {
    expect(messageIdOf("7")).toBe(7);
    for (const bad of ["0", "07", "-1", "7.0", "1e3", "x", "", "1234567890123456"]) expect(messageIdOf(bad), bad).toBeNull();
  });

  it("the context is the message's group, or the task itself", () => {
    expect(contextOf(view({ group: "release-7" }))).toBe("release-7");
    expect(contextOf(view())).toBe("task-7");
  });

  it("a parked message's question is the input-required status message, with its choices and reject always offered", () => {
    const parked = view({ status: "parked", attempts: 1, question: { text: "Ship it?", choices: ["ship", "hold"], deadline: null, on_deadline: "fail", asked_at: NOW } });
    const task = taskOf(parked, "reviewer", NOW);
    expect(task.status).toMatchObject({ state: "TASK_STATE_INPUT_REQUIRED", message: { role: "ROLE_AGENT", taskId: "7", parts: [{ text: "Ship it?\nanswer with one of: ship, hold, reject" }], metadata: { choices: ["ship", "hold", "reject"] } } });
    expect(answerChoice(parked, " ship ")).toBe("ship");
    expect(answerChoice(parked, "reject")).toBe("reject");
    expect(answerChoice(parked, "approve")).toBeNull();
    expect(answerChoice(parked, "yes please")).toBeNull();
    expect(choicesOf(view({ question: { text: null, choices: [], deadline: null, on_deadline: "fail", asked_at: null } }))).toEqual(["approve", "reject"]);
  });

  it("an acknowledged message's reply is the reply artifact; the text that started it is the history; historyLength 0 leaves it out", () => {
    const done = view({ status: "acknowledged", attempts: 1, reply: "LGTM\n" });
    const task = taskOf(done, "reviewer", NOW);
    expect(task).toMatchObject({ id: "7", contextId: "task-7", status: { state: "TASK_STATE_COMPLETED", timestamp: new Date(NOW).toISOString() }, artifacts: [{ artifactId: "reply", parts: [{ text: "LGTM\n" }] }] });
    expect(task.history).toEqual([{ messageId: "message-7", contextId: "task-7", taskId: "7", role: "ROLE_USER", parts: [{ text: "review #42" }] }]);
    expect(taskOf(done, "reviewer", NOW, 0).history).toBeUndefined();
    expect(taskOf(view({ status: "running", attempts: 1 }), "reviewer", NOW).artifacts).toBeUndefined();
  });

  it("output chunks append to one output artifact and each attempt is a working status naming its machine: a failover reads as output going on", () => {
    const first = outputUpdates([
      { type: "attempt", seq: 1, attempt: 1, machine: "a", at: NOW },
      { type: "chunk", seq: 2, offset: 0, attempt: 1, machine: "a", stream: "stdout", text: "one\n", at: NOW },
      { type: "attempt_end", seq: 3, attempt: 1, reason: "lease_lost", at: NOW },
      { type: "attempt", seq: 4, attempt: 2, machine: "b", at: NOW },
      { type: "chunk", seq: 5, offset: 4, attempt: 2, machine: "b", stream: "stderr", text: "two\n", at: NOW },
    ], view(), false, NOW);
    expect(first.started).toBe(true);
    expect(first.updates.map((u) => Object.keys(u)[0])).toEqual(["statusUpdate", "artifactUpdate", "statusUpdate", "artifactUpdate"]);
    expect(first.updates[1]).toEqual({ artifactUpdate: { taskId: "7", contextId: "task-7", artifact: { artifactId: "output", name: "output", parts: [{ text: "one\n" }] }, append: false, lastChunk: false } });
    expect(first.updates[3]).toMatchObject({ artifactUpdate: { append: true } });
    expect(first.updates[2]).toMatchObject({ statusUpdate: { status: { state: "TASK_STATE_WORKING" }, metadata: { baton: { attempt: 2, machine: "b" } } } });
    expect(outputUpdates([{ type: "chunk", seq: 6, offset: 8, attempt: 2, machine: "b", stream: "stdout", text: "x", at: NOW }], view(), true, NOW).updates[0]).toMatchObject({ artifactUpdate: { append: true } });
  });
});
