// `baton hook claude-code` run as Claude Code runs it: a process fed the hook input on stdin, whose
// stdout is the decision. `asked` resolves with the question's message id once the hook says it
// asked (stderr), `done` with the exit code and output.
import { spawn } from "node:child_process";
import { BIN } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";

export interface HookRun {
  asked: Promise<number>;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

export function startHook(url: string, input: unknown, args: string[] = [], token = DEV_TOKEN): HookRun {
  const p = spawn(process.execPath, [BIN, "hook", "claude-code", ...args], {
    cwd: ROOT, env: { ...process.env, BATON_URL: url, BATON_TOKEN: token },
  });
  let stdout = "";
  let stderr = "";
  let onAsked: (id: number) => void = () => {};
  const asked = new Promise<number>((resolve) => (onAsked = resolve));
  p.stdout.on("data", (d) => (stdout += d));
  p.stderr.on("data", (d) => {
    stderr += d;
    const m = /\(message (\d+)\)/.exec(stderr);
    if (m) onAsked(Number(m[1]));
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => p.on("close", (code) => resolve({ code, stdout, stderr })));
  p.stdin.end(typeof input === "string" ? input : JSON.stringify(input));
  // A hook that ends without asking never resolves `asked`: make it reject instead of hanging a test.
  void done.then(() => onAsked(Number.NaN));
  const askedId = asked.then((id) => (Number.isNaN(id) ? Promise.reject(new Error(`the hook never asked: ${stderr}`)) : id));
  askedId.catch(() => {}); // awaited only by tests that expect a question
  return { asked: askedId, done };
}

/** A fresh tool call: its own session and call id, so runs never meet another test's question. */
export function freshCall<T extends { session_id: string }>(input: T, tag: string): T {
  const n = Math.random().toString(36).slice(2, 10);
  return { ...input, session_id: `${tag}-${n}`, ...("tool_use_id" in input ? { tool_use_id: `toolu_${tag}_${n}` } : {}) };
}
