// `baton serve`'s message handler: runs COMMAND once per message (text on stdin, lease facts in
// the environment, the checkpoint in a file), kills it when the library aborts the message's
// signal, stores a rewritten checkpoint under the same fence, and replies with its stdout.
import { readFileSync, writeFileSync } from "node:fs";
import type { MessageHandler } from "../../client/index.ts";
import { startRun } from "./runner.ts";

export interface CommandHandlerOptions {
  agent: string;
  command: string;
  args: readonly string[];
  /** Between SIGTERM and SIGKILL when a run must stop. */
  graceMs: number;
  checkpointPath: string;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

export function commandHandler(opts: CommandHandlerOptions): MessageHandler {
  return async (message, ctx) => {
    const before = JSON.stringify(ctx.checkpoint ?? null);
    writeFileSync(opts.checkpointPath, before);
    const run = startRun({
      command: opts.command,
      args: opts.args,
      stdin: message.text,
      env: {
        BATON_AGENT: opts.agent,
        BATON_MESSAGE_ID: String(message.id),
        BATON_FENCE: String(ctx.fence),
        BATON_ATTEMPT: String(message.attempt),
        BATON_CHECKPOINT: opts.checkpointPath,
        ...(ctx.token === null ? {} : { BATON_MESSAGE_TOKEN: String(ctx.token) }),
      },
    });
    const kill = () => void run.kill(opts.graceMs);
    ctx.signal.addEventListener("abort", kill, { once: true });
    const outcome = await run.done;
    ctx.signal.removeEventListener("abort", kill);
    ctx.signal.throwIfAborted();
    if (outcome.spawnError) opts.log(`command could not start: ${outcome.spawnError}`, { id: message.id });
    else if (outcome.code !== 0) opts.log(`command exited with ${outcome.code ?? outcome.signal} for message ${message.id}`, { id: message.id });
    const after = readCheckpoint(opts.checkpointPath, before, opts.log);
    if (after !== null) await ctx.saveCheckpoint(after.value);
    return outcome.stdout;
  };
}

/** The checkpoint file as rewritten by the command, or null when unchanged or not valid JSON. */
function readCheckpoint(path: string, before: string, log: CommandHandlerOptions["log"]): { value: unknown } | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return null;
  }
  if (text === before) return null;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    log("checkpoint file is not valid JSON; not stored");
    return null;
  }
}
