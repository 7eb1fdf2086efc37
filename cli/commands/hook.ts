// `baton hook claude-code`: Claude Code's permission hook (PreToolUse or PermissionRequest). Reads
// the hook input on stdin, asks a person on AGENT (the tool, its input as canonical JSON, the
// working directory, this machine), waits for the answer from the dashboard, the CLI, a webhook's
// receiver or MCP, and prints Claude Code's allow or deny JSON with who answered. A deadline, an
// unreachable coordinator or input it cannot read never allow: the output asks Claude Code to
// ask here (its own dialog), and stderr says why. Re-run for the same tool call id, it finds the
// question already asked (Idempotency-Key) instead of asking twice. See docs/guides/coding-agents.md.
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { askPerson, waitForAnswer } from "../../client/person-question.ts";
import { canonicalJson, hookOutput, hookQuestion, parseHookInput, verdictOf, type HookEvent, type HookVerdict } from "../../client/core/claude-code-hook.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";
import { printable } from "../lib/printable.ts";

/** How long a person has by default: under Claude Code's own 600 s command-hook timeout. */
export const DEFAULT_DEADLINE_SECONDS = 300;
/** After the deadline, how long the hook still looks for the coordinator's verdict before it asks here. */
const DEADLINE_GRACE_MS = 2_000;
const POLL_MS = 250;
const STDIN_LIMIT_BYTES = 4 * 1024 * 1024;

export default defineCommand({
  path: ["hook", "claude-code"],
  summary: "Claude Code's permission hook: ask a person for a tool prompt; print allow or deny with who answered.",
  positionals: [],
  options: {
    agent: { type: "string", value: "AGENT", description: "the agent the questions are asked on (env BATON_HOOK_AGENT; default claude-code)" },
    deadline: { type: "string", value: "SECONDS", description: `how long a person has; then Claude Code asks here (default ${DEFAULT_DEADLINE_SECONDS})` },
    machine: { type: "string", value: "NAME", description: "this machine's name in the question (default the host name)" },
  },
  exitCodes: [
    { code: 0, meaning: "the decision (allow, deny, or ask here) is printed as Claude Code's hook JSON, also when the coordinator could not be asked" },
    { code: 2, meaning: "the input is not a hook input baton can answer: Claude Code blocks the tool call and shows stderr" },
  ],
  async run({ options }) {
    const raw = await readStdin();
    const parsed = raw === null ? { ok: false as const, reason: `the hook input is over ${STDIN_LIMIT_BYTES} bytes`, event: null } : parseHookInput(raw);
    if (!parsed.ok) {
      if (parsed.event === null) {
        // No event to answer in its own shape: exit 2, which Claude Code documents as blocking.
        process.stderr.write(`baton hook: ${printable(parsed.reason)}; blocking the tool call\n`);
        return 2;
      }
      return decide(parsed.event, { kind: "ask", why: parsed.reason });
    }
    const { input } = parsed;
    let deadline = DEFAULT_DEADLINE_SECONDS;
    try {
      const agent = agentName(options.agent ?? process.env.BATON_HOOK_AGENT ?? "claude-code");
      const { min, max } = LIMITS.parkDeadlineSeconds;
      deadline = options.deadline === undefined ? deadline : numberOption(options.deadline, "deadline", { min, max, integer: true, unit: "seconds" });
      const conn = resolveConnection(options);
      const digest = createHash("sha256").update(canonicalJson(input.tool_input)).digest("hex");
      const q = hookQuestion(input, options.machine ?? hostname(), digest);
      const id = await askPerson(agent, { text: q.question, messageText: q.text, deadlineSeconds: deadline, onDeadline: "fail" }, conn, {
        ...(q.idempotencyKey === undefined ? {} : { idempotencyKey: q.idempotencyKey }),
      });
      process.stderr.write(`baton hook: asked a person on ${agent} (message ${id}); waiting up to ${deadline} s\n`);
      const answer = await waitForAnswer(agent, id, conn, { timeoutMs: deadline * 1000 + DEADLINE_GRACE_MS, pollMs: POLL_MS });
      return decide(input.hook_event_name, verdictOf(answer, deadline));
    } catch (err) {
      // Unreachable, refused, a bad --agent or --deadline: never allow; Claude Code asks here.
      return decide(input.hook_event_name, { kind: "ask", why: `could not ask a person: ${err instanceof Error ? err.message : String(err)}` });
    }
  },
});

function decide(event: HookEvent, verdict: HookVerdict): number {
  if (verdict.kind === "ask") process.stderr.write(`baton hook: ${printable(verdict.why)}; Claude Code asks here\n`);
  process.stdout.write(`${JSON.stringify(hookOutput(event, verdict))}\n`);
  return 0;
}

/** Stdin whole, or null past STDIN_LIMIT_BYTES. */
async function readStdin(): Promise<string | null> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of process.stdin) {
    bytes += (chunk as Buffer).length;
    if (bytes > STDIN_LIMIT_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
