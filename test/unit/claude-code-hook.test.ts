// Claude Code's hook protocol without I/O (client/core/claude-code-hook.ts): the documented inputs
// are read, and each verdict prints exactly the documented JSON; only a person's approve allows.
import { describe, expect, it } from "vitest";
import { canonicalJson, hookOutput, hookQuestion, parseHookInput, verdictOf, type HookInput } from "../../client/core/claude-code-hook.ts";
import type { PersonAnswer } from "../../client/person-question.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { PERMISSION_REQUEST, PRE_TOOL_USE } from "./claude-code-hook-inputs.ts";

const BY = { account: "ana", token: "phone", via: "page" };
type Answered = Extract<PersonAnswer, { choice: string }>;
const answered = (choice: string, text: string | null = null, via = "page"): Answered => ({ status: "answered", messageId: 7, choice, text, by: { ...BY, via }, at: 1 });

function input(raw: unknown): HookInput {
  const parsed = parseHookInput(JSON.stringify(raw));
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.input;
}

describe("reading Claude Code's hook input", () => {
  it("reads the documented PreToolUse and PermissionRequest inputs (the tool call id only where Claude Code sends one)", () => {
    expect(input(PRE_TOOL_USE)).toMatchObject({ hook_event_name: "PreToolUse", tool_name: "Bash", cwd: "/home/ana/shop", tool_use_id: PRE_TOOL_USE.tool_use_id });
    expect(input(PERMISSION_REQUEST)).toMatchObject({ hook_event_name: "PermissionRequest", tool_input: PERMISSION_REQUEST.tool_input });
    expect(input(PERMISSION_REQUEST).tool_use_id).toBeUndefined();
  });

  it("input that is not JSON has no event; a known event with a missing field keeps its event (so the answer is that event's ask)", () => {
    expect(parseHookInput("{not json")).toMatchObject({ ok: false, event: null, reason: expect.stringMatching(/^the hook input is not JSON/) });
    expect(parseHookInput(JSON.stringify({ ...PRE_TOOL_USE, hook_event_name: "PostToolUse" }))).toMatchObject({ ok: false, event: null });
    const { tool_input: _, ...noInput } = PRE_TOOL_USE;
    expect(parseHookInput(JSON.stringify(noInput))).toMatchObject({ ok: false, event: "PreToolUse", reason: expect.stringMatching(/at tool_input$/) });
    expect(parseHookInput(JSON.stringify({ ...PERMISSION_REQUEST, tool_input: "rm" }))).toMatchObject({ ok: false, event: "PermissionRequest" });
  });
});

describe("the question a tool prompt becomes", () => {
  it("names the tool, the machine and the directory, with the input as canonical JSON and its digest; the call id is the idempotency key", () => {
    const q = hookQuestion(input(PRE_TOOL_USE), "ana-laptop", "ab".repeat(32));
    expect(q.question).toBe(
      "Claude Code wants to use Bash on ana-laptop in /home/ana/shop:\n"
      + '{"command":"npm publish","description":"Publish the package","run_in_background":false,"timeout":120000}\n(sha256 abababababababab)',
    );
    expect(q.text).toBe(`Claude Code session ${PRE_TOOL_USE.session_id}, tool call ${PRE_TOOL_USE.tool_use_id}`);
    expect(q.idempotencyKey).toBe(`claude-code:${PRE_TOOL_USE.session_id}:${PRE_TOOL_USE.tool_use_id}`);
    expect(hookQuestion(input(PERMISSION_REQUEST), "m", "0".repeat(64)).idempotencyKey).toBeUndefined();
  });

  it("a long input is cut in the question (with the digest) and kept whole in the message; format characters show as escapes", () => {
    const long = { ...PRE_TOOL_USE, cwd: "/home/ana/\u202eshop", tool_name: "Write", tool_input: { file_path: "/x.txt", content: "a".repeat(5000) } };
    const q = hookQuestion(input(long), "m", "cd".repeat(32));
    expect(q.question.length).toBe(LIMITS.questionChars);
    expect(q.question).toMatch(/… \(\d+ more characters in the message; sha256 cdcdcdcdcdcdcdcd\)$/);
    expect(q.question).toContain("in /home/ana/\\u202eshop:");
    expect(q.question).not.toContain("\u202e");
    expect(q.text).toContain('"content":"' + "a".repeat(5000) + '"');
  });

  it("any input, however long or full of escapes, posts a body within the coordinator's limits", () => {
    const nasty = { ...PRE_TOOL_USE, tool_input: { content: '"\\\u202e漢\u{1F600}'.repeat(200_000) } };
    const q = hookQuestion(input(nasty), "m", "0".repeat(64));
    const body = JSON.stringify({ text: q.text, question: { text: q.question }, deadline_seconds: 300 });
    expect(new TextEncoder().encode(q.text).length).toBeLessThanOrEqual(LIMITS.messageTextBytes);
    expect(new TextEncoder().encode(body).length).toBeLessThanOrEqual(LIMITS.messageTextBytes * 2);
    expect(q.question.length).toBeLessThanOrEqual(LIMITS.questionChars);
  });

  it("canonical JSON sorts keys at every depth and has no whitespace", () => {
    expect(canonicalJson({ b: [{ z: 1, a: null }], a: "x", c: undefined })).toBe('{"a":"x","b":[{"a":null,"z":1}]}');
  });
});

describe("the JSON printed for Claude Code", () => {
  it("PreToolUse: a person's approve allows, naming who (and their words)", () => {
    const said = "baton: approved by ana (token phone, on the dashboard): fine";
    expect(hookOutput("PreToolUse", verdictOf(answered("approve", "fine"), 60))).toEqual({
      systemMessage: said, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow", permissionDecisionReason: said },
    });
  });

  it("PreToolUse: a person's reject denies, naming who", () => {
    const said = "baton: rejected by ana (token phone, on the dashboard)";
    expect(hookOutput("PreToolUse", verdictOf(answered("reject"), 60))).toEqual({
      systemMessage: said, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: said },
    });
  });

  it("PermissionRequest: allow is decision.behavior allow; deny carries who in decision.message", () => {
    expect(hookOutput("PermissionRequest", verdictOf(answered("approve", null, "cli"), 60))).toEqual({
      systemMessage: "baton: approved by ana (token phone, with the CLI)", hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } },
    });
    const said = "baton: rejected by ana (token phone, via http): not on Fridays";
    expect(hookOutput("PermissionRequest", verdictOf(answered("reject", "not on Fridays", "http"), 60))).toEqual({
      systemMessage: said, hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: said } },
    });
  });

  it("no answer by the deadline, a deadline's own decision or an ended question ask here: PreToolUse says ask, PermissionRequest decides nothing", () => {
    const waiting: PersonAnswer = { status: "waiting", messageId: 7, deadline: 1 };
    expect(hookOutput("PreToolUse", verdictOf(waiting, 60))).toEqual({
      systemMessage: "baton: nobody answered message 7 within 60 s; asking here",
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "ask", permissionDecisionReason: "baton: nobody answered message 7 within 60 s; asking here" },
    });
    expect(hookOutput("PermissionRequest", verdictOf({ status: "unanswered", messageId: 7, reason: "its deadline passed with no answer" }, 60))).toEqual({
      systemMessage: "baton: message 7 has no answer: its deadline passed with no answer; asking here",
    });
    // A deadline that approves is nobody's approve.
    expect(verdictOf({ ...answered("approve"), status: "decided_by_deadline" }, 60).kind).toBe("ask");
    expect(verdictOf(answered("maybe"), 60).kind).toBe("ask");
  });
});
