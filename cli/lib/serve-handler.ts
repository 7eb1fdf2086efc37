// `baton serve`'s message handler: runs COMMAND once per message (text on stdin, lease facts in
// the environment, the checkpoint in a file of its own), kills it when the library aborts the
// message's signal (lease lost, message revoked, run timeout), stores the checkpoint file as the
// message's checkpoint whenever the command rewrites it (also mid-run, so a successor of a stalled
// run starts from its last step), parks the message when the command exits 75 (EX_TEMPFAIL),
// replies with its stdout when it exits 0, and fails the attempt (with the exit code or signal and
// the last lines of stderr) otherwise. With the agent's heartbeat timeout it heartbeats for the
// command from this process while the command lives, so a command busy in one long call keeps its
// message; the command's own `baton step`, `baton effect` and `baton heartbeat` reach the
// coordinator over HTTP with the URL, token and run key it is given.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import type { MessageContext, MessageHandler } from "../../client/index.ts";
import type { Lifeline } from "./lifeline.ts";
import { describeFailure, startRun } from "./runner.ts";

/** A command that exits with this code parks its message until `baton resume` (sysexits EX_TEMPFAIL). */
export const PARK_EXIT_CODE = 75;
const CHECKPOINT_POLL_MS = 250;

export interface CommandHandlerOptions {
  agent: string;
  /** This serve's machine label, passed to the command as BATON_MACHINE. */
  machine: string;
  command: string;
  args: readonly string[];
  /** Between SIGTERM and SIGKILL when a run must stop. */
  graceMs: number;
  /** Base path of checkpoint files; each message gets its own beside it. */
  checkpointPath: string;
  /** A park by exit 75 fails the message if nobody resumes it within this many seconds (none: waits forever). */
  parkDeadlineSeconds?: number;
  /** The coordinator, passed to the command (BATON_URL, BATON_TOKEN) for its own journal writes. */
  conn: { url: string; token: string };
  log: (message: string, fields?: Record<string, unknown>) => void;
  /** Where each run's stderr goes (serve's status reporter keeps it off the live line); default this process's stderr. */
  stderr?: () => NodeJS.WritableStream;
  /** More environment for every run (serve's own `baton` on PATH: cli-shim.ts). */
  env?: Record<string, string>;
  /** Kills every run if this process dies (lifeline.ts). */
  lifeline?: Lifeline;
}

export function commandHandler(opts: CommandHandlerOptions): MessageHandler {
  // Per group, the tree of its last stopped run until it is gone: the group's next run here waits for it.
  const stopping = new Map<string, Promise<void>>();
  return async (message, ctx) => {
    const group = message.group ?? "";
    await stopping.get(group);
    ctx.signal.throwIfAborted();
    // Every message runs under its own token (the library runs no other), so each gets its own checkpoint file.
    const path = opts.checkpointPath.replace(/(\.json)?$/, `-${message.id}.json`);
    const file = new CheckpointFile(path, ctx.messageCheckpoint ?? ctx.checkpoint, opts.log);
    const run = startRun({
      command: opts.command,
      args: opts.args,
      stdin: message.text,
      stderr: opts.stderr?.(),
      lifeline: opts.lifeline,
      leftoverGraceMs: opts.graceMs,
      // Both pipes stream to the message's live output as they come; the reply stays the stdout.
      onOutput: (stream, bytes) => ctx.output(bytes, stream),
      env: {
        ...opts.env,
        BATON_AGENT: opts.agent,
        BATON_MACHINE: opts.machine,
        BATON_MESSAGE_ID: String(message.id),
        BATON_FENCE: String(ctx.fence),
        BATON_ATTEMPT: String(message.attempt),
        BATON_CHECKPOINT: path,
        BATON_URL: opts.conn.url,
        BATON_TOKEN: opts.conn.token,
        BATON_MESSAGE_TOKEN: String(message.token),
        ...(message.runKey === null ? {} : { BATON_RUN_KEY: message.runKey }),
        ...(message.resumeInput === null ? {} : { BATON_RESUME_INPUT: message.resumeInput }),
        ...(message.resumeChoice === null ? {} : { BATON_RESUME_CHOICE: message.resumeChoice }),
        // The run's trace context (its span's when tracing is on): what the command traces continues it.
        ...(message.traceparent === null ? {} : { TRACEPARENT: message.traceparent }),
      },
    });
    const kill = (): void => {
      const gone = run.kill(opts.graceMs).then(() => {
        if (stopping.get(group) === gone) stopping.delete(group);
      });
      stopping.set(group, gone);
    };
    ctx.signal.addEventListener("abort", kill, { once: true });
    // A stalled run's progress must reach the coordinator before the run does: poll the file.
    let saving = Promise.resolve();
    const poll = setInterval(() => {
      saving = saving.then(() => saveChanged(file, ctx)).catch(() => {});
    }, CHECKPOINT_POLL_MS);
    const beats = heartbeatFor(message.heartbeatTimeoutMs, ctx, opts.log, message.id);
    try {
      const outcome = await run.done;
      clearInterval(beats);
      clearInterval(poll);
      await saving;
      // A stopped run holds its slot until its whole tree is gone, so this runner starts nothing beside its grace.
      if (ctx.signal.aborted) await run.gone;
      ctx.signal.throwIfAborted();
      if (outcome.code === PARK_EXIT_CODE) {
        const value = file.changed() ?? undefined;
        await ctx.park({ checkpoint: value?.value, deadlineSeconds: opts.parkDeadlineSeconds });
        return;
      }
      await saveChanged(file, ctx);
      // A run that does not exit 0 is a failed attempt, never a reply: its partial stdout is dropped.
      if (outcome.spawnError || outcome.code !== 0) {
        const reason = describeFailure(outcome);
        opts.log(`message ${message.id}: ${reason}`, { id: message.id });
        throw new Error(reason);
      }
      return outcome.stdout;
    } finally {
      clearInterval(beats);
      clearInterval(poll);
      ctx.signal.removeEventListener("abort", kill);
      rmSync(path, { force: true });
    }
  };
}

/**
 * Heartbeats every third of the timeout: two may be lost before the run is. A heartbeat the
 * coordinator refuses aborts the run through the library (the message is gone).
 */
function heartbeatFor(timeoutMs: number | null, ctx: MessageContext, log: CommandHandlerOptions["log"], id: number): ReturnType<typeof setInterval> | undefined {
  if (timeoutMs === null) return undefined;
  let inFlight = false;
  return setInterval(() => {
    if (inFlight || ctx.signal.aborted) return;
    inFlight = true;
    ctx.heartbeat().catch((err: unknown) => log(`message ${id}: heartbeat not confirmed: ${err instanceof Error ? err.message : String(err)}`, { id }))
      .finally(() => { inFlight = false; });
  }, Math.max(50, Math.floor(timeoutMs / 3)));
}

/**
 * Stores a rewritten checkpoint file as the message's own (under its token), and as the agent's
 * when this process holds the serve lease (best effort: the message's own is what matters).
 */
async function saveChanged(file: CheckpointFile, ctx: MessageContext): Promise<void> {
  const changed = file.changed();
  if (changed === null) return;
  await ctx.saveMessageCheckpoint(changed.value);
  file.saved(changed.text);
  if (ctx.fence >= 0) await ctx.saveCheckpoint(changed.value).catch(() => {});
}

/** The checkpoint file handed to one run, and what of it was last stored. */
class CheckpointFile {
  private last: string;

  constructor(private readonly path: string, initial: unknown, private readonly log: CommandHandlerOptions["log"]) {
    this.last = JSON.stringify(initial ?? null);
    writeFileSync(path, this.last);
  }

  /** The file as rewritten since the last store, or null when unchanged or not valid JSON. */
  changed(): { text: string; value: unknown } | null {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch {
      return null;
    }
    if (text === this.last) return null;
    try {
      return { text, value: JSON.parse(text) as unknown };
    } catch {
      // a half-written file mid-run, or not JSON at all: skip it, read it again later
      return null;
    }
  }

  saved(text: string): void {
    this.last = text;
  }
}
