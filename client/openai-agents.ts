// Approvals for the OpenAI Agents SDK (`@openai/agents`, an optional peer dependency) inside a
// baton message run: a tool with `needsApproval` becomes a baton question (the tool's name and
// arguments shown to the person, approve / deny, reject to stop the run), the interrupted
// RunState is stored as the message's checkpoint when it parks, and the answer resumes the run on
// whichever machine holds the message next, applying the decision. A crash between the question
// and the answer loses nothing: the next attempt starts from the stored state, not the model.
import { run, RunState, type Agent, type RunResult, type RunToolApprovalItem } from "@openai/agents";
import type { MessageContext } from "./core/handler.ts";
import type { OnDeadline } from "../worker/wire/enums.ts";

export interface ApprovalOptions {
  /** Seconds a person has to decide each tool call (absent: no deadline). */
  deadlineSeconds?: number;
  /** What the deadline does: fail (default), approve, reject (stop the run), or escalate. */
  onDeadline?: OnDeadline;
  /** The question a person reads for a tool call (default: the tool's name and its arguments). */
  describe?: (call: { tool: string; arguments: string }) => string;
  maxTurns?: number;
}

/** Kept as the message's checkpoint while a person decides. */
interface Stored {
  openaiRunState: string;
}

/** The choices a person gets for one tool call; `reject` (always offered by baton) stops the whole run. */
export const APPROVAL_CHOICES = ["approve", "deny"] as const;

const QUESTION_ARGS_CHARS = 1500;

function question(call: { tool: string; arguments: string }): string {
  const args = call.arguments.length > QUESTION_ARGS_CHARS ? `${call.arguments.slice(0, QUESTION_ARGS_CHARS)}…` : call.arguments;
  return `The agent wants to call ${call.tool} with ${args}. Approve it, deny it (the agent is told and goes on), or reject (the run stops).`;
}

function stored(checkpoint: unknown): string | null {
  const s = checkpoint as Partial<Stored> | null;
  return typeof s?.openaiRunState === "string" ? s.openaiRunState : null;
}

/**
 * Runs `agent` on `input` within a baton message run. Each tool call that needs approval is asked
 * of a person through `ctx.ask` (journal name `approval:<call id>`, so a later attempt gets the
 * same answer back); the run then goes on with the decision applied. Returns the SDK's final
 * result. Throws what `ctx.ask` throws while a person decides (the message parks; do not catch it).
 */
export async function runWithApprovals<A extends Agent<any, any>>(
  agent: A, input: string, ctx: MessageContext, options: ApprovalOptions = {},
): Promise<RunResult<unknown, A>> {
  const earlier = stored(ctx.messageCheckpoint);
  let state: string | RunState<unknown, A> = earlier === null ? input : await RunState.fromString(agent, earlier);
  for (;;) {
    if (typeof state !== "string") await decide(state, state.getInterruptions(), ctx, options);
    const result: RunResult<unknown, A> = await run(agent, state, { signal: ctx.signal, maxTurns: options.maxTurns });
    if (result.interruptions.length === 0) return result;
    state = result.state;
  }
}

/** Asks about each pending tool call (parking the message on the first nobody answered yet) and applies the answers to `state`. */
async function decide(state: RunState<unknown, Agent<any, any>>, pending: RunToolApprovalItem[], ctx: MessageContext, options: ApprovalOptions): Promise<void> {
  const checkpoint: Stored = { openaiRunState: state.toString() };
  for (const item of pending) {
    const call = { tool: item.name ?? "a tool", arguments: item.arguments ?? "{}" };
    const callId = "callId" in item.rawItem && typeof item.rawItem.callId === "string" ? item.rawItem.callId : item.rawItem.id ?? call.tool;
    const answer = await ctx.ask((options.describe ?? question)(call), {
      name: `approval:${callId}`.slice(0, 120), choices: [...APPROVAL_CHOICES], checkpoint,
      ...(options.deadlineSeconds === undefined ? {} : { deadlineSeconds: options.deadlineSeconds, onDeadline: options.onDeadline }),
    });
    if (answer.choice === "approve") state.approve(item);
    else state.reject(item, { message: `A person (${answer.by.token} via ${answer.by.via}) denied this call${answer.text ? `: ${answer.text}` : ""}.` });
  }
}
