// When a long-running command (serve, lease run) must wind down: SIGTERM (kill, systemd, npm
// forwarding), SIGINT (Ctrl-C), SIGHUP (a terminal closing), or its parent dying without a word
// (npx or a shell killed first): a process whose parent exits is re-parented, so a changed
// process.ppid means nobody is left to stop it. A second signal exits at once.
export type Termination = "SIGTERM" | "SIGINT" | "SIGHUP" | "parent exited";

const SIGNAL_EXIT: Record<string, number> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };
const PARENT_POLL_MS = 500;

export interface TerminationOptions {
  /** Also wind down when the parent process goes away (default true). */
  watchParent: boolean;
}

/** Calls `onTerminate` once, on the first of these events; returns a function that stops watching. */
export function onTermination(onTerminate: (why: Termination) => void, opts: TerminationOptions): () => void {
  let fired = false;
  const fire = (why: Termination): void => {
    if (fired) {
      if (why !== "parent exited") process.exit(SIGNAL_EXIT[why] ?? 1);
      return;
    }
    fired = true;
    onTerminate(why);
  };
  const signals = ["SIGTERM", "SIGINT", "SIGHUP"] as const;
  const handlers = signals.map((signal) => [signal, () => fire(signal)] as const);
  for (const [signal, handler] of handlers) process.on(signal, handler);
  const parent = process.ppid;
  // Started directly under init (a container's PID 1, a service manager): no parent to lose.
  const timer = opts.watchParent && parent > 1
    ? setInterval(() => process.ppid !== parent && fire("parent exited"), PARENT_POLL_MS)
    : null;
  timer?.unref();
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
    if (timer) clearInterval(timer);
  };
}
