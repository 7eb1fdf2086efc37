// Approvals for the OpenAI Agents SDK (`@openai/agents`, an optional peer dependency) inside a
// baton message run: a tool with `needsApproval` becomes a baton approval bound to the call (the
// tool's name and arguments shown to the person as canonical JSON with their SHA-256, approve /
// deny, reject to stop the run). Each approval is a one-use permit the coordinator accepts only
// for exactly those arguments (ctx.effect with approve, rules/permits.ts), and a tool that needs
// approval runs only for a call whose arguments a permit was accepted for in this run: an approval
// kept in a RunState (the SDK's own, or one altered in storage) cannot be moved to other arguments.
// The interrupted RunState is stored as the message's checkpoint when it parks, and the answer
// resumes the run on whichever machine holds the message next. A crash between the question and
// the answer loses nothing: the next attempt starts from the stored state, not the model.
import { run, RunState, type Agent, type FunctionTool, type RunResult, type RunToolApprovalItem, type Tool } from "@openai/agents";
import type { MessageContext, PersonAnswer } from "./core/handler.ts";
import { ApprovalDeniedError } from "./core/journal-rules.ts";
import { argsDigest, canonicalJson } from "../worker/wire/approvals.ts";

export interface ApprovalOptions {
  /** Seconds a person has to decide each tool call (absent: no deadline). */
  deadlineSeconds?: number;
  /** What the deadline does: fail (default), reject (stop the run), or escalate. Never approve: a deadline grants no permit. */
  onDeadline?: "fail" | "reject" | "escalate";
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

/** What a person approves for one call: the tool and its arguments (parsed when they are JSON), and their digest. */
function boundCall(tool: string, raw: string): { args: { tool: string; arguments: unknown }; digest: string } {
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw) as unknown;
  } catch {
    // Arguments that are not JSON are approved as the text they are.
  }
  const args = { tool, arguments: parsed };
  return { args, digest: argsDigest(canonicalJson(args)) };
}

/**
 * Runs `agent` on `input` within a baton message run. Each tool call that needs approval is asked
 * of a person as an approval bound to the call's tool and arguments (journal name
 * `approval:<digest>:<call id>`, so a later attempt gets the same decision back, and other
 * arguments ask again); the run then goes on with the decision applied. Returns the SDK's final
 * result. Throws what `ctx.effect` throws while a person decides (the message parks; do not catch it).
 */
export async function runWithApprovals<A extends Agent<any, any>>(
  agent: A, input: string, ctx: MessageContext, options: ApprovalOptions = {},
): Promise<RunResult<unknown, A>> {
  if ((options.onDeadline as string | undefined) === "approve") throw new TypeError("runWithApprovals: a deadline never approves a tool call bound to its arguments; use fail, reject or escalate");
  const approved = new Set<string>();
  const bound = bindTools(agent, approved) as A;
  const earlier = stored(ctx.messageCheckpoint);
  let state: string | RunState<unknown, A> = earlier === null ? input : await RunState.fromString(bound, earlier);
  for (;;) {
    if (typeof state !== "string") await decide(state, state.getInterruptions(), ctx, options, approved);
    const result: RunResult<unknown, A> = await run(bound, state, { signal: ctx.signal, maxTurns: options.maxTurns });
    if (result.interruptions.length === 0) return result;
    state = result.state;
  }
}

/**
 * The agent with each function tool that needs approval bound to this run's permits: it runs only
 * for a call whose tool and arguments a person's permit was accepted for (`approved`, digests);
 * any other call (an approval the SDK found in a RunState for other arguments) is refused to the
 * model without running.
 */
function bindTools(agent: Agent<any, any>, approved: ReadonlySet<string>): Agent<any, any> {
  const tools = agent.tools.map((t: Tool) => (t.type === "function" ? bindTool(t, approved) : t));
  return agent.clone({ tools });
}

function bindTool(t: FunctionTool<any, any, any>, approved: ReadonlySet<string>): FunctionTool<any, any, any> {
  return {
    ...t,
    invoke: async (runContext, input, details) => {
      const needs = await t.needsApproval(runContext, safeParse(input), details?.toolCall?.callId ?? "");
      if (needs && !approved.has(boundCall(t.name, input).digest)) {
        return `This call of ${t.name} was not approved by a person for these arguments; it did not run.`;
      }
      return t.invoke(runContext, input, details);
    },
  };
}

function safeParse(raw: string): any {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** Asks about each pending tool call (parking the message on the first nobody answered yet) and applies the answers to `state`. */
async function decide(
  state: RunState<unknown, Agent<any, any>>, pending: RunToolApprovalItem[], ctx: MessageContext, options: ApprovalOptions, approved: Set<string>,
): Promise<void> {
  const checkpoint: Stored = { openaiRunState: state.toString() };
  for (const item of pending) {
    const call = { tool: item.name ?? "a tool", arguments: item.arguments ?? "{}" };
    const callId = "callId" in item.rawItem && typeof item.rawItem.callId === "string" ? item.rawItem.callId : item.rawItem.id ?? call.tool;
    const { args, digest } = boundCall(call.tool, call.arguments);
    const name = `approval:${digest.slice(0, 16)}:${callId.replace(/[^A-Za-z0-9._:-]/g, "_")}`.slice(0, 120);
    try {
      await ctx.effect(name, () => digest, {
        approve: {
          question: (options.describe ?? question)(call), args, choices: [...APPROVAL_CHOICES], checkpoint,
          ...(options.deadlineSeconds === undefined ? {} : { deadlineSeconds: options.deadlineSeconds, onDeadline: options.onDeadline }),
        },
      });
      approved.add(digest);
      state.approve(item);
    } catch (err) {
      if (!(err instanceof ApprovalDeniedError)) throw err;
      const answer = err.answer as PersonAnswer;
      state.reject(item, { message: `A person (${answer.by.token} via ${answer.by.via}) denied this call${answer.text ? `: ${answer.text}` : ""}.` });
    }
  }
}
