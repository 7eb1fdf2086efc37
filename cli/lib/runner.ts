// Runs the served COMMAND once for one message: text on stdin, stdout collected for the reply,
// stderr passed through, both handed to `onOutput` as they come (the run's live output; a pipe is
// paused while onOutput's promise is pending, so a command far ahead of the coordinator waits). The child leads its own process group so a kill reaches whatever it
// spawned; a kill is SIGTERM, then SIGKILL once the grace period is over.
import { spawn } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import type { Readable } from "node:stream";

export interface RunSpec {
  command: string;
  args: readonly string[];
  stdin: string;
  env: Record<string, string>;
  /** Where the child's stderr goes; defaults to this process's stderr. */
  stderr?: NodeJS.WritableStream;
  /** Called with each stdout chunk as it arrives (progress display, tests). */
  onStdout?: (chunk: string) => void;
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
  /** SIGTERM now, SIGKILL after `graceMs` if still running; resolves once the child is gone. */
  kill(graceMs: number): Promise<RunOutcome>;
}

export function startRun(spec: RunSpec): RunHandle {
  const child = spawn(spec.command, [...spec.args], {
    env: { ...process.env, ...spec.env },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let killed = false;
  let exited = false;
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
      exited = true;
      resolve({ stdout, code: null, signal: null, killed, spawnError: err.message, stderrTail });
    });
    child.once("close", (code, signal) => {
      exited = true;
      resolve({ stdout, code, signal, killed, stderrTail });
    });
  });

  const signalGroup = (signal: NodeJS.Signals): void => {
    if (exited || child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    }
  };

  return {
    pid: child.pid,
    done,
    async kill(graceMs: number) {
      killed = true;
      signalGroup("SIGTERM");
      const timer = setTimeout(() => signalGroup("SIGKILL"), graceMs);
      const outcome = await done;
      clearTimeout(timer);
      return { ...outcome, killed: true };
    },
  };
}
