// Claude Code's permission hook protocol, without I/O (`baton hook claude-code` is its shell): the
// hook input Claude Code writes on stdin (PreToolUse or PermissionRequest), the question a person
// is asked for it, and the JSON printed on stdout for a person's answer, a deadline or a failure.
// Shapes as documented at https://code.claude.com/docs/en/hooks. A PermissionRequest decision
// has no "ask": printing no decision lets Claude Code show its own dialog, which is what a
// deadline or a failure does. Nothing here ever allows without a person's approve.
import * as z from "zod/mini";
import type { PersonAnswer } from "../person-question.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { canonicalJson } from "../../worker/wire/approvals.ts";

/** The canonical JSON a permit's digest is taken over (wire/approvals.ts), shown to a person for the tool's input. */
export { canonicalJson };

export const HOOK_EVENTS = ["PreToolUse", "PermissionRequest"] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** The fields baton reads; Claude Code sends more (transcript_path, permission_mode, ...), kept out of the question. */
const hookInputSchema = z.looseObject({
  hook_event_name: z.enum(HOOK_EVENTS),
  session_id: z.string().check(z.minLength(1)),
  cwd: z.string(),
  tool_name: z.string().check(z.minLength(1)),
  tool_input: z.record(z.string(), z.unknown()),
  // PreToolUse carries the tool call's id; PermissionRequest does not (so it cannot be deduplicated).
  tool_use_id: z.optional(z.string().check(z.minLength(1))),
});
export type HookInput = z.infer<typeof hookInputSchema>;

/** The input read, or why not, with the event when at least that was readable (so the answer can still be its "ask"). */
export type ParsedHookInput = { ok: true; input: HookInput } | { ok: false; reason: string; event: HookEvent | null };

export function parseHookInput(raw: string): ParsedHookInput {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch (err) {
    return { ok: false, reason: `the hook input is not JSON (${(err as Error).message})`, event: null };
  }
  const event = eventOf(data);
  const parsed = hookInputSchema.safeParse(data);
  if (parsed.success) return { ok: true, input: parsed.data };
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` at ${issue.path.join(".")}` : "";
  return { ok: false, reason: `the hook input is not a PreToolUse or PermissionRequest input: ${issue?.message ?? "invalid"}${where}`, event };
}

function eventOf(data: unknown): HookEvent | null {
  const name = typeof data === "object" && data !== null ? (data as Record<string, unknown>).hook_event_name : undefined;
  return (HOOK_EVENTS as readonly unknown[]).includes(name) ? (name as HookEvent) : null;
}

/** What a person reads: control and format characters (a zero-width joiner, a bidi override) shown as escapes. */
function shown(text: string): string {
  return text.replace(/(?![\n\t])[\p{Cc}\p{Cf}]/gu, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, "0")}`);
}

function cut(text: string, max: number, tail: (more: number) => string): string {
  if (text.length <= max) return text;
  let keep = max - tail(text.length).length;
  // Never split a surrogate pair.
  if (/[\uD800-\uDBFF]/.test(text.charAt(keep - 1))) keep -= 1;
  return `${text.slice(0, keep)}${tail(text.length - keep)}`;
}

export interface HookQuestion {
  /** The message text: the session and tool call, and the whole tool input when the question could not hold it. */
  text: string;
  /** The question a person answers: tool, machine, directory and the input (cut to the question limit). */
  question: string;
  /** Claude Code's tool call id, so a re-run of the hook for the same call finds the same question. */
  idempotencyKey: string | undefined;
}

/**
 * The question for one tool prompt. `machine` is this machine's name; `inputDigest` the SHA-256 (hex)
 * of the canonical tool input, shown beside it so a person can tell two long inputs apart.
 */
export function hookQuestion(input: HookInput, machine: string, inputDigest: string): HookQuestion {
  const canonical = canonicalJson(input.tool_input);
  const head = shown(`Claude Code wants to use ${input.tool_name} on ${machine} in ${input.cwd}`);
  const digest = `sha256 ${inputDigest.slice(0, 16)}`;
  const body = shown(canonical);
  const question = cut(`${head}:\n${body}\n(${digest})`, LIMITS.questionChars, (more) => `… (${more} more characters in the message; ${digest})`);
  const call = `Claude Code session ${shown(input.session_id)}${input.tool_use_id ? `, tool call ${shown(input.tool_use_id)}` : ""}`;
  // The whole input goes into the message only when the question could not hold it.
  const text = question.length === `${head}:\n${body}\n(${digest})`.length ? call
    // Characters, not bytes: a quarter of the byte limit holds even if every character takes four bytes.
    : cut(`${call}, the whole ${shown(input.tool_name)} input:\n${body}`, LIMITS.messageTextBytes / 4, (more) => `… (${more} more characters not kept; ${digest})`);
  return { text, question, idempotencyKey: idempotencyKey(input) };
}

function idempotencyKey(input: HookInput): string | undefined {
  if (input.tool_use_id === undefined) return undefined;
  const key = shown(`claude-code:${input.session_id}:${input.tool_use_id}`);
  return key.length <= LIMITS.idempotencyKeyChars ? key : undefined;
}

/** What the hook prints: a person allowed or denied (who, and their words), or the host decides as it would without the hook. */
export type HookVerdict =
  | { kind: "allow"; by: string; text: string | null }
  | { kind: "deny"; by: string; text: string | null }
  | { kind: "ask"; why: string };

/** The verdict an answer gives: only a person's approve allows; a reject denies; anything else (a deadline, no answer) asks. */
export function verdictOf(answer: PersonAnswer, waitedSeconds: number): HookVerdict {
  if (answer.status === "answered") {
    const by = `${answer.by.account} (token ${answer.by.token}, ${viaWords(answer.by.via)})`;
    if (answer.choice === "approve") return { kind: "allow", by, text: answer.text };
    if (answer.choice === "reject") return { kind: "deny", by, text: answer.text };
    return { kind: "ask", why: `${by} answered ${JSON.stringify(answer.choice)}, which is neither approve nor reject` };
  }
  if (answer.status === "waiting") return { kind: "ask", why: `nobody answered message ${answer.messageId} within ${waitedSeconds} s` };
  if (answer.status === "unanswered") return { kind: "ask", why: `message ${answer.messageId} has no answer: ${answer.reason}` };
  return { kind: "ask", why: `message ${answer.messageId} was decided by its deadline, not by a person` };
}

function viaWords(via: string): string {
  return via === "page" ? "on the dashboard" : via === "cli" ? "with the CLI" : `via ${via}`;
}

/** The JSON Claude Code documents for `event`, as an object to print on stdout with exit 0. */
export function hookOutput(event: HookEvent, verdict: HookVerdict): Record<string, unknown> {
  const said = verdict.kind === "ask" ? `baton: ${verdict.why}; asking here`
    : `baton: ${verdict.kind === "allow" ? "approved" : "rejected"} by ${verdict.by}${verdict.text === null || verdict.text === "" ? "" : `: ${verdict.text}`}`;
  if (event === "PreToolUse") {
    return { systemMessage: said, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: verdict.kind, permissionDecisionReason: said } };
  }
  if (verdict.kind === "ask") return { systemMessage: said };
  const decision = verdict.kind === "allow" ? { behavior: "allow" } : { behavior: "deny", message: said };
  return { systemMessage: said, hookSpecificOutput: { hookEventName: "PermissionRequest", decision } };
}
