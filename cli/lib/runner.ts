// Runs the served COMMAND once for one message: text on stdin, stdout collected for the reply,
// Runs the served COMMAND once for one message: text on stdin, stdout collected for the reply,
// stderr passed through, both handed to `onOutput` as they come (the run's live output; a pipe is
// paused while onOutput's promise is pending, so a command far ahead of the coordinator waits). The
// child leads its own process group and its run's processes carry a lifeline mark (process-tree.ts),
// so a kill reaches whatever it spawned, also what left the group; a kill is SIGTERM, then SIGKILL to
// every survivor once the grace period is over. The lifeline's watchdog kills the run if this
// process dies first (lifeline.ts).
import { spawn } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import type { Readable } from "node:stream";
import { LIFELINE_ENV, type Lifeline } from "./lifeline.ts";
import { stopTree, type TreeRoot } from "./process-tree.ts";

export interface RunSpec {
  command: string;
  args: readonly string[];
  stdin: string;
  env: Record<string, string>;
  /** Where the child's stderr goes; defaults to this process's stderr. */
  stderr?: NodeJS.WritableStream;
  /** Called with each stdout chunk as it arrives (progress display, tests). */
  onStdout?: (chunk: string) => void;
  /** Kills the run if this process dies; without one, the run is only stopped by kill(). */
  lifeline?: Lifeline;
  /** Between SIGTERM and SIGKILL for what the command leaves running when it exits by itself (default 5 s). */
  leftoverGraceMs?: number;
  /** Each chunk of stdout or stderr as it arrives, bytes as written; its promise holds that pipe back until it settles. */
  onOutput?: (stream: "stdout" | "stderr", bytes: Uint8Array) => Promise<void> | void;
}

export interface RunOutcome {
  stdout: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when kill() was called before the child exited: its output must not be used. */
  killed: boolean;
  /** Set when the command could not be started at all (e.g. not found). */
  spawnError?: string;
  /** The last lines of its stderr (at most STDERR_TAIL_BYTES), to say why a run failed. */
  stderrTail: string;
}

const STDERR_TAIL_BYTES = 2048;

/** Why a run that did not exit 0 failed, in one line a person can act on. */
export function describeFailure(outcome: RunOutcome): string {
  const what = outcome.spawnError ? `could not start: ${outcome.spawnError}`
    : outcome.signal ? `was killed by ${outcome.signal}`
    : `exited with code ${outcome.code}`;
  const tail = outcome.stderrTail.trim().split("\n").slice(-5).join(" | ");
  return tail ? `the command ${what}; stderr: ${tail}` : `the command ${what}`;
}

export interface RunHandle {
  readonly pid: number | undefined;
  /** Resolves when the child has exited (or failed to start). */
  readonly done: Promise<RunOutcome>;
  /**
   * SIGTERM to the whole tree now, SIGKILL to every survivor after `graceMs`; resolves once the
   * child has exited and no process of its tree lives.
   */
  kill(graceMs: number): Promise<RunOutcome>;
  /** Resolves once no process of the run's tree lives (after a kill, or after its leftovers are stopped). */
  readonly gone: Promise<void>;
}

export function startRun(spec: RunSpec): RunHandle {
  const mark = spec.lifeline?.mark() ?? `${process.pid}.${Math.random().toString(36).slice(2)}`;
  const child = spawn(spec.command, [...spec.args], {
    env: { ...process.env, ...spec.env, [LIFELINE_ENV]: mark },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  const root: TreeRoot | null = child.pid === undefined ? null : { pid: child.pid, group: true, mark };
  if (root) spec.lifeline?.track(-root.pid);
  let stdout = "";
  let killed = false;
  const outText = new StringDecoder("utf8");
  const forward = (pipe: Readable, stream: "stdout" | "stderr", bytes: Buffer) => {
    const held = spec.onOutput?.(stream, bytes);
    if (held) {
      pipe.pause();
      void held.finally(() => pipe.resume());
    }
  };
  child.stdout.on("data", (bytes: Buffer) => {
    const chunk = outText.write(bytes);
    stdout += chunk;
    if (chunk) spec.onStdout?.(chunk);
    forward(child.stdout, "stdout", bytes);
  });
  child.stdout.on("end", () => (stdout += outText.end()));
  let stderrTail = "";
  const errText = new StringDecoder("utf8");
  child.stderr.on("data", (bytes: Buffer) => {
    stderrTail = (stderrTail + errText.write(bytes)).slice(-STDERR_TAIL_BYTES);
    forward(child.stderr, "stderr", bytes);
  });
  // A stream of the caller's own is ended with the run (it flushes a last partial line); ours is not.
  child.stderr.pipe(spec.stderr ?? process.stderr, { end: spec.stderr !== undefined });
  child.stdin.on("error", () => {
    // The command may exit without reading its input; that is its business.
  });
  child.stdin.end(spec.stdin);

  const done = new Promise<RunOutcome>((resolve) => {
    child.once("error", (err) => {
      resolve({ stdout, code: null, signal: null, killed, spawnError: err.message, stderrTail });
    });
    child.once("close", (code, signal) => {
      resolve({ stdout, code, signal, killed, stderrTail });
    });
  });

  // One stop per run: a kill, or (when the command exits by itself) its leftovers with their grace.
  let stopping: Promise<void> | null = null;
  const stop = (graceMs: number): Promise<void> => {
    stopping ??= (root ? stopTree(root, "SIGTERM", graceMs) : Promise.resolve([])).then(() => {
      if (root) spec.lifeline?.untrack(-root.pid);
    });
    return stopping;
  };
  // Nothing a run started may outlive it: it would write on as an attempt that no longer holds the message.
  const gone = done.then(() => stop(spec.leftoverGraceMs ?? 5000));

  return {
    pid: child.pid,
    done,
    gone,
    async kill(graceMs: number) {
      killed = true;
      await stop(graceMs);
      const outcome = await done;
      return { ...outcome, killed: true };
    },
  };
}
